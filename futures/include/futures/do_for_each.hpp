// SPDX-License-Identifier: MIT
// futures::do_for_each: f on each element of a range, one after the other,
// each step waited for before the next starts (Seastar's do_for_each;
// asyncio's `for x in xs: await f(x)`).
//
// f(element) returns Future<X> for any X (the value is dropped), or X, or
// nothing. An lvalue range is referenced: keep it alive and unchanged until
// the result completes; an rvalue one is moved into the loop (a view is
// copied): see futures/detail/range_cursor.hpp. Everything futures/repeat.hpp
// says of repeat holds: calls come from the loop, never inside do_for_each();
// the loop is iterative and allocates nothing of its own per element; the
// first error ends it; cancelling the result cancels the step it waits on
// and no further element is visited. Done after the last element's step (at
// once, for an empty range). Loop thread only.
#pragma once

#include <ranges>
#include <source_location>
#include <type_traits>
#include <utility>

#include <reactor/scheduler.hpp>

#include "futures/detail/loop_state.hpp"
#include "futures/detail/range_cursor.hpp"
#include "futures/future.hpp"

namespace futures {

namespace detail {

template <class R, class F>
struct ForEachBody {
    RangeCursor<R> at;
    F f;
    bool more() { return at.more(); }
    decltype(auto) step() { return at.apply(f); }
    template <class E>
    bool proceed(E&&) const noexcept {
        return true;
    }
};

}  // namespace detail

template <std::ranges::viewable_range R, class F>
[[nodiscard]] Future<void> do_for_each(reactor::Scheduler& sched, R&& range, F&& f,
                                       std::source_location where = std::source_location::current()) {
    using Cursor = detail::RangeCursor<R>;
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn&, typename Cursor::Reference>,
                  "do_for_each(sched, range, f): f must be callable with an element of the range");
    using Body = detail::ForEachBody<R, Fn>;
    return detail::launch<detail::LoopState<Body>>(sched, where,
                                                   Body{Cursor(std::forward<R>(range)), Fn(std::forward<F>(f))})
        .start();
}

}  // namespace futures
