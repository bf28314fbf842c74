// SPDX-License-Identifier: MIT
// futures::detail::RangeCursor: where a loop over a range (do_for_each,
// parallel_for_each, map_reduce) has got to.
//
// Holds the range as std::views::all made it: an lvalue container is
// referenced (the caller keeps it alive and unchanged until the loop's future
// completes), an rvalue one is moved in and owned, a view is copied. The
// iterator is taken on first use, once the cursor sits in its loop's state,
// which never moves. Loop thread only.
#pragma once

#include <functional>
#include <optional>
#include <ranges>
#include <utility>

namespace futures::detail {

template <std::ranges::view V>
class RangeCursor {
public:
    explicit RangeCursor(V view) : view_(std::move(view)) {}
    RangeCursor(RangeCursor&& other) : view_(std::move(other.view_)) {}  // only before first use
    RangeCursor& operator=(RangeCursor&&) = delete;

    bool more() {
        if (!at_) at_.emplace(std::ranges::begin(view_));
        return *at_ != std::ranges::end(view_);
    }
    // f(element) on the current element, then moves on (also if f throws:
    // the loop is over then anyway). Precondition: more().
    template <class F>
    decltype(auto) apply(F& f) {
        struct MoveOn {
            std::ranges::iterator_t<V>& at;
            ~MoveOn() { ++at; }
        } move_on{*at_};
        return std::invoke(f, **at_);
    }

private:
    V view_;
    std::optional<std::ranges::iterator_t<V>> at_;
};

template <class R>
using CursorOf = RangeCursor<std::views::all_t<R>>;

}  // namespace futures::detail
