// SPDX-License-Identifier: MIT
// Internal: the state behind a Process handle. The exit status and the
// promises of the wait() futures live apart (ExitState), shared with the
// child's watch, so that a wait() future still completes after every
// Process handle is gone. The watch's callback carries an ExitTicket: if the
// watch drops it unrun (Scheduler::close() or destruction handing the child
// to a reaper thread), the status will never come, and the promises break
// (the futures are cancelled with a BrokenPromise naming the wait() line).
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <source_location>
#include <vector>

#include <reactor/scheduler.hpp>

#include "futures/future.hpp"
#include "futures/process.hpp"
#include "futures/promise.hpp"
#include "futures/stream.hpp"

namespace futures::detail {

struct ExitState {
    ExitState(reactor::Scheduler& s, std::source_location spawned) : sched(s), spawned_at(spawned) {}
    // From the watch, once: a waitpid status, or an errno (ECHILD).
    void complete(int wait_status, int error);
    // The watch let go of the child unreaped: the promises break.
    void watch_lost() noexcept;

    reactor::Scheduler& sched;
    std::source_location spawned_at;  // the user's spawn_process call
    bool reaped = false;
    bool lost = false;  // the watch ended without a status (see watch_lost)
    int status = 0;     // encoded (exit_status_of) once reaped without error
    int error = 0;
    std::vector<Promise<int>> waiters;
};

// Carried by the watch's callback (shared by its copies): when the last
// copy goes without the child having been reaped, the watch dropped it unrun.
// Never copied (a copy's destruction would say it).
struct ExitTicket {
    explicit ExitTicket(std::shared_ptr<ExitState> e) noexcept : exit(std::move(e)) {}
    ExitTicket(const ExitTicket&) = delete;
    ExitTicket& operator=(const ExitTicket&) = delete;
    ~ExitTicket() {
        if (!exit->reaped) exit->watch_lost();
    }
    std::shared_ptr<ExitState> exit;
};

class ProcessCore {
public:
    ProcessCore(pid_t pid, std::shared_ptr<ExitState> exit) : pid_(pid), exit_(std::move(exit)) {}

    pid_t pid() const noexcept { return pid_; }
    ExitState& exit() const noexcept { return *exit_; }
    Stream in, out, err;

private:
    pid_t pid_;
    std::shared_ptr<ExitState> exit_;
};

}  // namespace futures::detail
