// SPDX-License-Identifier: MIT
// futures::all_tasks: a snapshot of every live task of a Scheduler — where it
// was spawned, the state its machine is in, and what it waits on. The
// state-machine answer to asyncio's all_tasks() and Task.print_stack().
//
// A machine names its current state by having a member
//     std::string_view state_name() const;
// (usually a switch over its State enum); without one, the snapshot says the
// state is unknown. Loop thread only.
#pragma once

#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/future.hpp"

namespace futures {

struct REACTOR_API TaskInfo {
    std::source_location spawned_at;
    std::optional<std::string> state;        // the machine's state_name(), if it has one
    std::string waiting_on_kind;             // "Future", "Task", ... (empty: not waiting)
    std::source_location waiting_on;         // where the awaited future was created
    bool started = false;                    // resume() has run at least once

    // "task spawned at app.cpp:12, state reading, waiting on the Future created at app.cpp:40"
    std::string to_string() const;
};

// Every pending task of `sched`, oldest first.
REACTOR_API std::vector<TaskInfo> all_tasks(reactor::Scheduler& sched);

}  // namespace futures
