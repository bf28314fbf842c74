// SPDX-License-Identifier: MIT
// futures::detail::Ref and Weak: the two intrusive references to a future's state.
//
// Ref keeps the state and what it holds alive; Weak keeps only its memory and
// says whether the state still lives. No atomics: loop thread only.
#pragma once

#include <type_traits>
#include <utility>

namespace futures::detail {

// Intrusive strong reference: S has add_ref() and release().
template <class S>
class Ref {
public:
    Ref() noexcept = default;
    explicit Ref(S* s) noexcept : s_(s) {
        if (s_) s_->add_ref();
    }
    // Takes over a reference that is already counted (a freshly created state's).
    static Ref adopt(S* s) noexcept {
        Ref r;
        r.s_ = s;
        return r;
    }
    Ref(const Ref& other) noexcept : Ref(other.s_) {}
    Ref(Ref&& other) noexcept : s_(std::exchange(other.s_, nullptr)) {}
    template <class D>
        requires std::is_convertible_v<D*, S*>
    Ref(Ref<D> other) noexcept : s_(other.release_ownership()) {}  // NOLINT: upcast
    Ref& operator=(Ref other) noexcept {
        std::swap(s_, other.s_);
        return *this;
    }
    ~Ref() {
        if (s_) s_->release();
    }

    S* get() const noexcept { return s_; }
    S* operator->() const noexcept { return s_; }
    S& operator*() const noexcept { return *s_; }
    explicit operator bool() const noexcept { return s_ != nullptr; }
    S* release_ownership() noexcept { return std::exchange(s_, nullptr); }

private:
    S* s_ = nullptr;
};

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
