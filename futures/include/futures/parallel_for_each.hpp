// SPDX-License-Identifier: MIT
// futures::parallel_for_each: f on every element of a range, at most
// `max_concurrency` steps in flight at once (Seastar's parallel_for_each and
// max_concurrent_for_each; asyncio's gather over a Semaphore-guarded f).
//
//   futures::Future<void> all = futures::parallel_for_each(sched, urls, fetch, 4);
//
// f(element) returns Future<X> for any X (the value is dropped), or X, or
// nothing. Elements are taken in range order; a new one starts as soon as a
// step in flight completes, so never more than max_concurrency steps (the
// futures f returned that are still pending) are in flight. Calls come from
// the loop, never inside parallel_for_each(), a turn at a time as in
// futures/repeat.hpp: steps over ready futures cost no loop iteration and
// nothing is allocated per element beyond what f does (one link per step
// allowed in flight is made up front). Done once every step is done (at
// once, for an empty range). The combinators' policy (futures/combinators.hpp):
// the first step to fail or be cancelled decides (and an exception f throws),
// the steps still in flight are then cancelled and no further element is
// visited; cancelling the result cancels every step in flight.
//
// The range is referenced if it is an lvalue (keep it alive and unchanged
// until the result completes), moved in if it is an rvalue (see
// futures/detail/range_cursor.hpp). max_concurrency 0 throws
// std::invalid_argument, and so does kUnlimitedConcurrency (the default) with
// a range whose size is not known. Loop thread only.
#pragma once

#include <cstddef>
#include <ranges>
#include <source_location>
#include <type_traits>
#include <utility>

#include <reactor/scheduler.hpp>

#include "futures/detail/concurrency.hpp"
#include "futures/detail/parallel_state.hpp"
#include "futures/detail/range_cursor.hpp"
#include "futures/future.hpp"

namespace futures {

namespace detail {

template <class R, class F>
struct ParallelForEachBody {
    using result_type = void;
    RangeCursor<R> at;
    F f;
    bool more() { return at.more(); }
    decltype(auto) step() { return at.apply(f); }
    template <class E>
    void take(E&&) const noexcept {}
};

}  // namespace detail

template <std::ranges::viewable_range R, class F>
[[nodiscard]] Future<void> parallel_for_each(reactor::Scheduler& sched, R&& range, F&& f,
                                             std::size_t max_concurrency = kUnlimitedConcurrency,
                                             std::source_location where = std::source_location::current()) {
    using Cursor = detail::RangeCursor<R>;
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn&, typename Cursor::Reference>,
                  "parallel_for_each(sched, range, f): f must be callable with an element of the range");
    using Body = detail::ParallelForEachBody<R, Fn>;
    Cursor cursor(std::forward<R>(range));
    const std::size_t links = detail::links_for(cursor.range(), max_concurrency, "parallel_for_each");
    return detail::launch<detail::ParallelState<Body>>(sched, where, Body{std::move(cursor), Fn(std::forward<F>(f))},
                                                       links)
        .start();
}

}  // namespace futures
