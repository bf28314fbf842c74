// SPDX-License-Identifier: MIT
// The loop's time: a monotonic clock, and the injectable time source tests use.
#pragma once

#include <chrono>
#include <functional>
#include <string_view>
#include <type_traits>

#include <reactor/export.hpp>

namespace reactor {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;
// Injectable time source (tests advance a fake one). Must be monotonic.
using ClockFunction = std::function<TimePoint()>;

// A duration given as a number of seconds, as Python and asyncio take them
// (`asyncio.sleep(0.25)`, `wait_for(x, timeout=2.5)`): the one conversion
// from a double every API of this library uses, checked, never truncating.
//   - rounded up to the clock's tick (1 ns), as a std::chrono duration
//     passed to sleep/with_timeout is: 1e-12 s is 1 ns, never zero;
//   - +infinity, and any count beyond what Duration holds (~292 years), is
//     Duration::max(): "as long as the clock can wait";
//   - a negative number (-0.0 is zero), -infinity or NaN throws
//     std::invalid_argument naming `what` (the parameter or field):
//       "sleep: delay must be a number of seconds >= 0, not -1"
// Where a function takes a duration as a parameter (futures::sleep,
// with_timeout, run_until, Stream::set_read_timeout, serve_until, ...) an
// overload taking a double calls this with the parameter's name; for a field
// of an options struct (RetryPolicy::initial_delay, ConnectionOptions::
// read_timeout, StreamOptions::connect_timeout) write
//   policy.initial_delay = reactor::from_seconds(0.1, "initial_delay");
REACTOR_API Duration from_seconds(double seconds, std::string_view what = "seconds");

// What those overloads take: a number of seconds (a double, or an integer:
// sleep(sched, 2) is two seconds), not a bool. They are templates on it so
// that a std::chrono duration, and `{}`, still pick the Duration overload.
template <class S>
concept SecondsCount = std::is_arithmetic_v<S> && !std::is_same_v<S, bool>;

namespace detail {

// `t + d` for d >= 0, saturating at TimePoint::max() ("never") instead of
// overflowing into the past, which would make a timer fire at once.
constexpr TimePoint saturating_add(TimePoint t, Duration d) noexcept {
    return d >= TimePoint::max() - t ? TimePoint::max() : t + d;
}

// Any duration as a Duration rounded up to the clock's tick, saturating at
// Duration::max() (a count beyond the clock's range means "never"). Compared
// as long double: a huge double or a count in a coarser unit cannot overflow.
template <class Rep, class Period>
Duration ceil_saturating(std::chrono::duration<Rep, Period> d) {
    using Wide = std::chrono::duration<long double>;
    return Wide(d) >= Wide(Duration::max()) ? Duration::max() : std::chrono::ceil<Duration>(d);
}

// now + delay rounded up, saturating at TimePoint::max(); a negative (or
// NaN) delay counts as zero: what call_later and run_for wait until.
template <class Rep, class Period>
TimePoint deadline_after(TimePoint now, std::chrono::duration<Rep, Period> delay) {
    if (!(delay > std::chrono::duration<Rep, Period>::zero())) return now;
    using Wide = std::chrono::duration<long double>;
    if (Wide(delay) >= Wide(TimePoint::max() - now)) return TimePoint::max();
    return now + std::chrono::ceil<Duration>(delay);
}

}  // namespace detail

}  // namespace reactor
