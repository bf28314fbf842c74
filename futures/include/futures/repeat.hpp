// SPDX-License-Identifier: MIT
// futures::repeat: call a function again and again until it says stop
// (Seastar's repeat; asyncio's `while True: ... if done: break`).
//
//   futures::Future<void> done = futures::repeat(sched, [&] {
//       return stream.read_line().then([&](std::optional<std::string> line) {
//           if (!line) return futures::StopIteration::yes;  // the peer's clean end of input
//           ...  // *line, without its "\n" (an empty line is "")
//           return futures::StopIteration::no;
//       });
//   });
//
// f() returns Future<StopIteration> (or a StopIteration: a step done at once).
// The first call is made from the loop, never inside repeat(); each next one
// once the previous step's future is done with StopIteration::no. The loop is
// iterative (futures/detail/loop_state.hpp): a million steps over ready
// futures take no stack and no allocation of their own, and a step over a
// ready future costs no loop iteration, yet other callbacks get their turn
// every kLoopStepsPerTurn steps. The result is done after a step said
// StopIteration::yes; an exception f throws, or a step that fails, ends it
// with that error at once; a step that is cancelled cancels it. Cancelling
// the result stops the loop where it is: the step's future it waits on is
// cancelled, and f is not called again. f is destroyed as soon as the loop
// ends. Loop thread only.
#pragma once

#include <functional>
#include <source_location>
#include <type_traits>
#include <utility>

#include <reactor/scheduler.hpp>

#include "futures/detail/loop_state.hpp"
#include "futures/future.hpp"

namespace futures {

// What a repeat() step says: go on (no) or stop (yes). Seastar's stop_iteration.
enum class StopIteration : bool { no = false, yes = true };

namespace detail {

template <class F>
struct RepeatBody {
    F f;
    bool more() const noexcept { return true; }
    decltype(auto) step() { return std::invoke(f); }
    bool proceed(StopIteration stop) const noexcept { return stop == StopIteration::no; }
};

}  // namespace detail

template <class F>
[[nodiscard]] Future<void> repeat(reactor::Scheduler& sched, F&& f,
                                  std::source_location where = std::source_location::current()) {
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn&>, "repeat(sched, f): f must be callable with no arguments");
    using X = typename detail::StepOf<std::remove_cvref_t<std::invoke_result_t<Fn&>>>::value;
    static_assert(std::is_same_v<X, StopIteration>,
                  "repeat(sched, f): f must return Future<StopIteration> or StopIteration");
    using Body = detail::RepeatBody<Fn>;
    return detail::launch<detail::LoopState<Body>>(sched, where, Body{Fn(std::forward<F>(f))}).start();
}

}  // namespace futures
