// SPDX-License-Identifier: MIT
// futures::do_until: call a function until a condition holds (Seastar's
// do_until; asyncio's `while not cond(): await f()`).
//
// cond() is asked before each step, the first time too (true at once: the
// result is done and f never runs); f() returns Future<X> for any X (the
// value is dropped), or X, or nothing. Everything futures/repeat.hpp says of
// repeat holds: calls come from the loop, never inside do_until(); the loop
// is iterative and allocates nothing of its own per step; an exception from
// cond or f, or a failed step, ends it with that error; cancelling the result
// cancels the step it waits on. Loop thread only.
#pragma once

#include <functional>
#include <source_location>
#include <type_traits>
#include <utility>

#include <reactor/scheduler.hpp>

#include "futures/detail/loop_state.hpp"
#include "futures/future.hpp"

namespace futures {

namespace detail {

template <class C, class F>
struct DoUntilBody {
    C cond;
    F f;
    bool more() { return !static_cast<bool>(std::invoke(cond)); }
    decltype(auto) step() { return std::invoke(f); }
    template <class V>
    bool proceed(V&&) const noexcept {
        return true;
    }
};

}  // namespace detail

template <class C, class F>
[[nodiscard]] Future<void> do_until(reactor::Scheduler& sched, C&& cond, F&& f,
                                    std::source_location where = std::source_location::current()) {
    using Cn = std::decay_t<C>;
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Cn&>, "do_until(sched, cond, f): cond must be callable with no arguments");
    static_assert(std::is_invocable_v<Fn&>, "do_until(sched, cond, f): f must be callable with no arguments");
    using Body = detail::DoUntilBody<Cn, Fn>;
    return detail::launch<detail::LoopState<Body>>(sched, where, Body{Cn(std::forward<C>(cond)), Fn(std::forward<F>(f))})
        .start();
}

}  // namespace futures
