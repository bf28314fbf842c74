// SPDX-License-Identifier: MIT
// The loop driver behind run_until(): Scheduler::run_for, ended early by a
// done-callback that calls stop(). The callback is removed however the run
// ends, so a later completion never stops an unrelated run.
#include "futures/run.hpp"

#include <source_location>
#include <stdexcept>

#include <fmt/format.h>

namespace futures::detail {

bool run_until(reactor::Scheduler& sched, StateBase& state, reactor::Duration limit) {
    if (&state.scheduler() != &sched) {
        throw std::invalid_argument("run_until: the future belongs to another Scheduler");
    }
    if (!state.pending()) return true;
    struct Subscription {
        StateBase& state;
        CallbackId id;
        ~Subscription() { state.remove_callback(id); }
    } stop_when_done{state, state.add_callback([&sched] { sched.stop(); }, std::source_location::current())};

    const reactor::RunStatus status = sched.run_for(limit);
    if (!state.pending()) return true;
    if (status == reactor::RunStatus::idle) {
        throw InvalidStateError(fmt::format(
            "run_until: the loop ran out of work, but the {} created at {}:{} is still pending "
            "(nothing is left that could complete it)",
            state.kind(), state.origin().file_name(), state.origin().line()));
    }
    return false;
}

}  // namespace futures::detail
