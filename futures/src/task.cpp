// SPDX-License-Identifier: MIT
// The non-template part of tasks: the loop driver behind run_until_complete().
#include "futures/task.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace futures::detail {

void drive(reactor::Scheduler& sched, StateBase& state) {
    if (&state.scheduler() != &sched) {
        throw std::invalid_argument("run_until_complete: the future belongs to another Scheduler");
    }
    while (state.pending()) {
        if (sched.empty()) {
            throw InvalidStateError(fmt::format(
                "run_until_complete: the loop ran out of work, but the {} created at {}:{} is still pending "
                "(nothing is left that could complete it)",
                state.kind(), state.origin().file_name(), state.origin().line()));
        }
        sched.run_once();
    }
}

}  // namespace futures::detail
