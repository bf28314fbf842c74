// SPDX-License-Identifier: MIT
// Scheduler::wall_clock: the calendar's time through the loop's kernel, so
// that a simulated host reads its world's time (reactor/kernel.hpp).
#include "reactor/detail/kernel_calls.hpp"
#include "reactor/scheduler.hpp"

namespace reactor {

std::chrono::system_clock::time_point Scheduler::wall_clock() const noexcept {
    return detail::sys::wall_clock(kernel_.get());
}

}  // namespace reactor
