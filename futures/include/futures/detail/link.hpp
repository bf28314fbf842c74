// SPDX-License-Identifier: MIT
// futures::detail::Link: one state waiting on another, as an object.
//
// A member of the waiting state (its owner). connect() is the whole
// subscription: the link names its upstream weakly (cancelling the owner
// cancels it; a pending chain holds no cycle), and the upstream's waiter list
// holds the link, and a strong reference to the owner, until it completes.
// Then the link is cut and the owner's method runs, from the loop, never
// inline. One upstream at a time. Loop thread only.
#pragma once
#ifndef FUTURES_FUTURE_HPP_BODY_DONE
#error "futures/detail/*.hpp are parts of futures/future.hpp: include that instead"
#endif

#include <cassert>
#include <span>
#include <type_traits>
#include <utility>

#include <reactor/export.hpp>

#include "futures/detail/ref.hpp"
#include "futures/detail/state.hpp"

namespace futures::detail {

class REACTOR_API Link {
public:
    explicit Link(StateBase& owner) noexcept : owner_(&owner) {}
    Link(const Link&) = delete;
    Link& operator=(const Link&) = delete;
    // Only before connect(): for links kept in a vector, reserved up front so
    // that it never moves one afterwards (the upstream's waiter list points at it).
    Link(Link&& other) noexcept : owner_(other.owner_) { assert(!other.waiting()); }

    // Waits on `src`: once it completes (at once if it has), owner.*Method is
    // called with it, as `(src)` or `(link, src)`, from the loop, `src` alive
    // throughout; until then cancelling the owner cancels `src`.
    template <auto Method, class Src>
    void connect(Src& src) {
        static_assert(std::is_base_of_v<StateBase, Src>);
        assert(!waiting() && "a link waits on one state at a time");
        upstream_ = Weak<StateBase>(&src);
        wake_ = &call<Method, typename MemberOf<decltype(Method)>::owner, Src>;
        try {
            src.add_waiter(*this);
        } catch (...) {
            upstream_.reset();
            wake_ = nullptr;
            throw;
        }
    }

    StateBase& owner() const noexcept { return *owner_; }
    // What the link leads to, while it is connected and that state lives.
    StateBase* upstream() const noexcept { return upstream_.get(); }
    // Forgets the upstream (for cancellation and death) and returns it if it
    // lives. A wake-up already due still comes: the owner, complete, ignores it.
    Ref<StateBase> cut() noexcept {
        Ref<StateBase> up(upstream_.get());
        upstream_.reset();
        return up;
    }
    // The upstream completed: cut, then the owner's method (StateBase::run_waiter).
    void wake(StateBase& src) {
        upstream_.reset();
        std::exchange(wake_, nullptr)(*this, src);
    }

private:
    using Wake = void (*)(Link&, StateBase&);

    template <class M>
    struct MemberOf;
    template <class C, class R, class... A>
    struct MemberOf<R (C::*)(A...)> {
        using owner = C;
    };
    template <class C, class R, class... A>
    struct MemberOf<R (C::*)(A...) noexcept> {
        using owner = C;
    };

    template <auto Method, class Owner, class Src>
    static void call(Link& link, StateBase& src) {
        auto& owner = static_cast<Owner&>(*link.owner_);
        if constexpr (std::is_invocable_v<decltype(Method), Owner&, Link&, Src&>) {
            (owner.*Method)(link, static_cast<Src&>(src));
        } else {
            (owner.*Method)(static_cast<Src&>(src));
        }
    }

    bool waiting() const noexcept { return wake_ != nullptr; }

    StateBase* owner_;
    Weak<StateBase> upstream_;
    Wake wake_ = nullptr;  // set while subscribed: the wake-up is due
};

// A State<T> that waits on one state at a time through `link_`: a
// continuation, a timeout, a task. Cancellation and death follow the link.
template <class T>
class WaitingState : public State<T> {
protected:
    using State<T>::State;
    Link link_{*this};

private:
    std::span<Link> links() noexcept final { return {&link_, 1}; }
};

}  // namespace futures::detail
