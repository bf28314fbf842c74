// SPDX-License-Identifier: MIT
// futures::map_reduce: map every element of a range to a future, concurrently,
// and fold the values into one as they arrive (Seastar's map_reduce;
// asyncio's `functools.reduce(op, await gather(*map(f, xs)), init)`, without
// keeping every value).
//
//   futures::Future<std::size_t> total = futures::map_reduce(
//       sched, files, [&](const std::string& f) { return size_of(f); },
//       std::size_t{0}, std::plus<>{});
//
// map(element) returns Future<M> (or M); reduce(acc, m) returns the new
// accumulator, starting from `init`, and is called in the order the mapped
// futures complete, which is not range order: reduce must not care (it is
// usually associative and commutative). The result is done with the final
// accumulator once every step is done (`init` for an empty range). Steps,
// concurrency, errors, cancellation and the range's lifetime work as in
// parallel_for_each (futures/parallel_for_each.hpp): at most max_concurrency
// mapped futures in flight; the first error (from map, a mapped future or
// reduce) decides and cancels the rest. Loop thread only.
#pragma once

#include <cstddef>
#include <functional>
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

template <class R, class M, class I, class Rd>
struct MapReduceBody {
    using result_type = I;
    RangeCursor<R> at;
    M map;
    I acc;
    Rd reduce;
    bool more() { return at.more(); }
    decltype(auto) step() { return at.apply(map); }
    template <class E>
    void take(E&& mapped) {
        acc = std::invoke(reduce, std::move(acc), std::forward<E>(mapped));
    }
    I result() { return std::move(acc); }
};

}  // namespace detail

template <std::ranges::viewable_range R, class M, class I, class Rd>
[[nodiscard]] Future<std::decay_t<I>> map_reduce(reactor::Scheduler& sched, R&& range, M&& map, I&& init,
                                                 Rd&& reduce, std::size_t max_concurrency = kUnlimitedConcurrency,
                                                 std::source_location where = std::source_location::current()) {
    using Cursor = detail::RangeCursor<R>;
    using Mn = std::decay_t<M>;
    using In = std::decay_t<I>;
    using Rn = std::decay_t<Rd>;
    static_assert(std::is_invocable_v<Mn&, typename Cursor::Reference>,
                  "map_reduce(sched, range, map, init, reduce): map must be callable with an element of the range");
    using Mapped = typename detail::StepOf<
        std::remove_cvref_t<std::invoke_result_t<Mn&, typename Cursor::Reference>>>::value;
    static_assert(!std::is_void_v<Mapped>, "map_reduce: map must return a value or a Future of one");
    static_assert(std::is_convertible_v<std::invoke_result_t<Rn&, In&&, Mapped&&>, In>,
                  "map_reduce: reduce(acc, mapped) must return the accumulator's type");
    using Body = detail::MapReduceBody<R, Mn, In, Rn>;
    Cursor cursor(std::forward<R>(range));
    const std::size_t links = detail::links_for(cursor.range(), max_concurrency, "map_reduce");
    return detail::launch<detail::ParallelState<Body>>(
               sched, where,
               Body{std::move(cursor), Mn(std::forward<M>(map)), In(std::forward<I>(init)),
                    Rn(std::forward<Rd>(reduce))},
               links)
        .start();
}

}  // namespace futures
