// SPDX-License-Identifier: MIT
// futures::detail::Ref and Weak: the two intrusive references to a future's state.
//
// Ref keeps the state and what it holds alive; Weak keeps only its memory and
// says whether the state still lives. A state counts on its loop alone (no
// atomics): loop thread only.
#pragma once

#include <utility>

#include <reactor/ref.hpp>

namespace futures::detail {

// The strong reference: reactor::Ref, the one counted handle of the library
// (reactor/ref.hpp), over a state's own add_ref() and release().
template <class S>
using Ref = reactor::Ref<S>;

// Weak reference: keeps only the memory (S has add_weak(), release_weak() and
// alive()), for "I am waiting on that state" links that must not keep it, and so
// a cycle, alive. get() is null once the state died.
template <class S>
class Weak {
public:
    Weak() noexcept = default;
    explicit Weak(S* s) noexcept : s_(s) {
        if (s_) s_->add_weak();
    }
    Weak(const Weak&) = delete;
    Weak& operator=(const Weak&) = delete;
    Weak(Weak&& other) noexcept : s_(std::exchange(other.s_, nullptr)) {}
    Weak& operator=(Weak&& other) noexcept {
        if (this != &other) {
            reset();
            s_ = std::exchange(other.s_, nullptr);
        }
        return *this;
    }
    ~Weak() { reset(); }

    S* get() const noexcept { return s_ && s_->alive() ? s_ : nullptr; }  // null if empty or dead
    void reset() noexcept {
        if (s_) std::exchange(s_, nullptr)->release_weak();
    }

private:
    S* s_ = nullptr;
};

}  // namespace futures::detail
