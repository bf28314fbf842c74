// SPDX-License-Identifier: MIT
// futures::keep_doing: call a function forever, one step after the other,
// until a step fails or the loop is cancelled (Seastar's keep_doing;
// asyncio's `while True: await f()`).
//
// f() returns Future<X> for any X (the value is dropped), or X, or nothing.
// Everything futures/repeat.hpp says of repeat holds: the first call comes
// from the loop, the loop is iterative and allocates nothing of its own per
// step, cancelling the result cancels the step it waits on. The result never
// completes with a value: it fails with the first error (an exception f
// throws, or a step's), or is cancelled. Loop thread only.
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

template <class F>
struct KeepDoingBody {
    F f;
    bool more() const noexcept { return true; }
    decltype(auto) step() { return std::invoke(f); }
    template <class V>
    bool proceed(V&&) const noexcept {
        return true;
    }
};

}  // namespace detail

template <class F>
[[nodiscard]] Future<void> keep_doing(reactor::Scheduler& sched, F&& f,
                                      std::source_location where = std::source_location::current()) {
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn&>, "keep_doing(sched, f): f must be callable with no arguments");
    using Body = detail::KeepDoingBody<Fn>;
    return detail::launch<detail::LoopState<Body>>(sched, where, Body{Fn(std::forward<F>(f))}).start();
}

}  // namespace futures
