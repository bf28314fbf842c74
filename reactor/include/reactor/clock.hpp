// SPDX-License-Identifier: MIT
// The loop's time: a monotonic clock, and the injectable time source tests use.
#pragma once

#include <chrono>
#include <functional>

namespace reactor {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;
// Injectable time source (tests advance a fake one). Must be monotonic.
using ClockFunction = std::function<TimePoint()>;

namespace detail {

// `t + d` for d >= 0, saturating at TimePoint::max() ("never") instead of
// overflowing into the past, which would make a timer fire at once.
constexpr TimePoint saturating_add(TimePoint t, Duration d) noexcept {
    return d >= TimePoint::max() - t ? TimePoint::max() : t + d;
}

}  // namespace detail

}  // namespace reactor
