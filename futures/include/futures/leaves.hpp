// SPDX-License-Identifier: MIT
// futures/leaves.hpp: futures at the leaves of a chain, completed by the
// Scheduler itself (a timer, an fd becoming ready) or born complete.
//
// None of them ever completes synchronously on creation in a way that runs
// user code: callbacks still go through the ready queue. Loop thread only.
#pragma once

#include <chrono>
#include <exception>
#include <source_location>
#include <type_traits>
#include <utility>

#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/future.hpp"

namespace futures {

// Durations in double seconds, for the fields of an options struct
// (reactor/clock.hpp): policy.initial_delay = futures::from_seconds(0.1).
using reactor::from_seconds;

namespace detail {
REACTOR_API Future<void> make_sleep(reactor::Scheduler& sched, reactor::Duration delay, std::source_location where);
}

// Done once `delay` has passed on the loop's clock: never early; a negative
// delay counts as zero. Cancelling the future cancels the timer at once. If the
// Scheduler is destroyed first, the future is cancelled.
template <class Rep, class Period>
[[nodiscard]] Future<void> sleep(reactor::Scheduler& sched, std::chrono::duration<Rep, Period> delay,
                                 std::source_location where = std::source_location::current()) {
    return detail::make_sleep(sched, std::chrono::ceil<reactor::Duration>(delay), where);
}

// The same with `delay` in seconds, as asyncio.sleep(0.25) takes it
// (reactor::from_seconds: rounded up to the clock's 1 ns; +infinity is
// Duration::max(); a negative delay or NaN throws std::invalid_argument
// naming "sleep: delay", where a negative std::chrono one counts as zero).
template <reactor::SecondsCount S>
[[nodiscard]] Future<void> sleep(reactor::Scheduler& sched, S delay,
                                 std::source_location where = std::source_location::current()) {
    return detail::make_sleep(sched, reactor::from_seconds(static_cast<double>(delay), "sleep: delay"), where);
}

// Done at `deadline` (a point on the Scheduler's clock).
[[nodiscard]] REACTOR_API Future<void> sleep_until(reactor::Scheduler& sched, reactor::TimePoint deadline,
                                       std::source_location where = std::source_location::current());

// Done when `fd` is readable (resp. writable): a one-shot read_wait/write_wait
// underneath, so it replaces any waiter already registered on that fd and
// direction. Cancelling removes the waiter. Readiness may be spurious: a
// non-blocking read can still say EAGAIN; then wait again. The fd is not owned.
// An invalid fd throws std::invalid_argument here. If the Scheduler drops the
// wait (the fd was closed while registered, which it also reports; a later
// registration on the same fd and direction replaced it; the Scheduler is being
// destroyed), the future is cancelled, with a CancelledError saying so.
[[nodiscard]] REACTOR_API Future<void> readable(reactor::Scheduler& sched, int fd,
                                    std::source_location where = std::source_location::current());
[[nodiscard]] REACTOR_API Future<void> writable(reactor::Scheduler& sched, int fd,
                                    std::source_location where = std::source_location::current());

// A future that is already done with `value` (its callbacks still run from the loop).
template <class T>
[[nodiscard]] Future<std::decay_t<T>> make_ready_future(reactor::Scheduler& sched, T&& value,
                                                        std::source_location where = std::source_location::current()) {
    using V = std::decay_t<T>;
    return detail::launch<detail::State<V>>(sched, where, false).done(std::forward<T>(value));
}
[[nodiscard]] REACTOR_API Future<void> make_ready_future(reactor::Scheduler& sched,
                                             std::source_location where = std::source_location::current());

// A future that has already failed with `error` (cancelled, for a CancelledError).
template <class T>
[[nodiscard]] Future<T> make_exception_future(reactor::Scheduler& sched, std::exception_ptr error,
                                              std::source_location where = std::source_location::current()) {
    if (!error) throw std::invalid_argument("make_exception_future: null exception_ptr");
    return detail::launch<detail::State<T>>(sched, where, false).failed(std::move(error));
}
template <class T, class E>
    requires std::is_base_of_v<std::exception, std::remove_cvref_t<E>>
[[nodiscard]] Future<T> make_exception_future(reactor::Scheduler& sched, E&& error,
                                              std::source_location where = std::source_location::current()) {
    return make_exception_future<T>(sched, std::make_exception_ptr(std::forward<E>(error)), where);
}

}  // namespace futures
