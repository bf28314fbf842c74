// SPDX-License-Identifier: MIT
// futures::run_until: runs the loop until one future is done, optionally for
// at most a given time: the bounded run a test or a main() needs, without a
// hand-written loop around run_once() and a safety timer. asyncio's
// run_until_complete is the model; futures::run_until_complete (task.hpp) is
// the variant that also returns the value. Loop thread only, never from
// inside a callback (std::logic_error).
#pragma once

#include <chrono>

#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/future.hpp"

namespace futures {
namespace detail {

// The non-template body; `limit` is of the loop's clock, Duration::max() for none.
REACTOR_API bool run_until(reactor::Scheduler& sched, StateBase& state, reactor::Duration limit);

// Negative counts as zero; beyond the clock's range as no limit.
template <class Rep, class Period>
reactor::Duration run_limit(std::chrono::duration<Rep, Period> limit) {
    if (!(limit > std::chrono::duration<Rep, Period>::zero())) return reactor::Duration::zero();
    using Wide = std::chrono::duration<long double>;
    if (Wide(limit) >= Wide(reactor::Duration::max())) return reactor::Duration::max();
    return std::chrono::ceil<reactor::Duration>(limit);
}

}  // namespace detail

// Runs `sched` until `fut` is done (done, failed or cancelled). The outcome
// stays in `fut`: run_until never throws the future's own error; read it with
// fut.result(). Returns true once `fut` is done (at once, running nothing, if
// it already is); false if stop() ended the run first, `fut` still pending
// (like run(), a stop() requested before the call still lets one iteration
// run). Other callbacks run meanwhile; what is still scheduled when it
// returns stays scheduled. Throws InvalidStateError if the loop runs out of
// work with `fut` still pending (nothing is left that could complete it;
// signal handlers are not work, see Scheduler::add_signal_handler), and
// std::invalid_argument if `fut` belongs to another Scheduler.
template <class T>
bool run_until(reactor::Scheduler& sched, const Future<T>& fut) {
    return detail::run_until(sched, detail::Access::state(fut), reactor::Duration::max());
}

// The same for at most `limit` of the loop's clock (Scheduler::run_for):
// returns false also when the time ran out with `fut` still pending, which
// the loop never waits past. A negative limit counts as zero.
template <class T, class Rep, class Period>
bool run_until(reactor::Scheduler& sched, const Future<T>& fut, std::chrono::duration<Rep, Period> limit) {
    return detail::run_until(sched, detail::Access::state(fut), detail::run_limit(limit));
}

// The same with `limit` in seconds (reactor::from_seconds: +infinity is no
// limit; a negative limit or NaN throws std::invalid_argument naming
// "run_until: limit", where a negative std::chrono limit counts as zero).
template <class T, reactor::SecondsCount S>
bool run_until(reactor::Scheduler& sched, const Future<T>& fut, S limit) {
    return detail::run_until(sched, detail::Access::state(fut),
                             reactor::from_seconds(static_cast<double>(limit), "run_until: limit"));
}

}  // namespace futures
