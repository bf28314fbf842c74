// SPDX-License-Identifier: MIT
// futures::detail::RangeCursor: where a loop over a range (do_for_each,
// parallel_for_each, map_reduce) has got to.
//
// Holds the range as std::views::all would, without making a view: an lvalue
// container is referenced (the caller keeps it alive and unchanged until the
// loop's future completes), an rvalue one is moved in and owned, a view is
// copied. No ref_view or owning_view is made because clang 15 cannot check
// libstdc++ 12's constraints on them (it rejects any view, so a program
// built with that pair loops over containers only); containers work on every
// compiler. The iterator is taken on first use, once the cursor sits in its
// loop's state, which never moves. Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ranges>
#include <type_traits>
#include <utility>

namespace futures::detail {

// R is the type a loop combinator's range argument was forwarded as.
template <class R>
class RangeCursor {
    using Plain = std::remove_cvref_t<R>;
    static constexpr bool kByReference = std::is_lvalue_reference_v<R> && !std::ranges::view<Plain>;

public:
    // The range iterated: the caller's (const or not) or the cursor's own copy.
    using Range = std::conditional_t<kByReference, std::remove_reference_t<R>, Plain>;
    using Reference = std::ranges::range_reference_t<Range&>;

    explicit RangeCursor(R&& range) : held_(hold(std::forward<R>(range))) {}
    RangeCursor(RangeCursor&& other) : held_(std::move(other.held_)) {}  // only before first use
    RangeCursor& operator=(RangeCursor&&) = delete;

    Range& range() noexcept {
        if constexpr (kByReference) {
            return *held_;
        } else {
            return held_;
        }
    }

    bool more() {
        if (!at_) at_.emplace(std::ranges::begin(range()));
        return *at_ != std::ranges::end(range());
    }
    // f(element) on the current element, then moves on (also if f throws:
    // the loop is over then anyway). Precondition: more().
    template <class F>
    decltype(auto) apply(F& f) {
        struct MoveOn {
            std::ranges::iterator_t<Range&>& at;
            ~MoveOn() { ++at; }
        } move_on{*at_};
        return std::invoke(f, **at_);
    }

private:
    using Held = std::conditional_t<kByReference, Range*, Plain>;
    static Held hold(R&& range) {
        if constexpr (kByReference) {
            return std::addressof(range);
        } else {
            return Plain(std::forward<R>(range));
        }
    }

    Held held_;
    std::optional<std::ranges::iterator_t<Range&>> at_;
};

}  // namespace futures::detail
