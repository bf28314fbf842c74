// SPDX-License-Identifier: MIT
// reactor::CallbackSlot: the one idiom for a callback that may replace, clear
// or destroy itself while it runs.
//
// A long-lived object that calls a user callback over and over (a
// connection's data callback, a listener's accept callback) must survive that
// callback doing anything: setting a new callback, clearing it, closing the
// object. The library handles this in one way everywhere, the way the
// Scheduler runs a persistent fd waiter (see run_ready in
// src/loop/iteration.cpp):
//
//   move the callback out of its slot, run it from the local copy, and move
//   it back afterwards, even if it throws, unless the slot was set meanwhile.
//
// While its callback runs, the slot holds a "running" mark instead (it reads
// as empty); every set(), reset() and take() overwrites the mark, so "set
// meanwhile" is "the mark is gone". So, from inside its own call, a callback may
//   - replace itself: the new one stays, the running one is destroyed when it returns;
//   - clear itself (set(nullptr), or reset() when its owner closes): the slot
//     stays empty, and the captures it runs with live until it returns;
//   - invoke the same slot again: that does nothing (the slot is empty while
//     its callback runs), so a callback never recurses into itself.
//
// The owner of the slot must outlive the call: objects that a callback could
// release hold a reference to themselves across invoke() (a shared_from_this
// copy, or a self-reference kept while open). Callbacks that run once (a
// connect result, a call_soon) need none of this: they are moved out and run.
// Not thread-safe, like everything on the loop thread.
//
// The callback is a reactor::SlotFunction, not a std::function: one is in
// every connection, for each of its callbacks (issue 22, memory per idle
// connection), and a slot is then three pointers, not five. Anything that
// converts to std::function converts to it, a std::function included.
#pragma once

#include <cstddef>
#include <cstring>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

#include "reactor/callback.hpp"

namespace reactor {

template <class Signature>
class SlotFunction;

template <class Signature>
class CallbackSlot;

namespace detail {
template <class T>
struct IsStdFunction : std::false_type {};
template <class S>
struct IsStdFunction<std::function<S>> : std::true_type {};
}  // namespace detail

// A move-only `void(Args...)` callable with two pointers of inline storage:
// a lambda capturing one or two pointers (or a shared_ptr) stays in place;
// a larger target, or one whose move may throw, is boxed on the heap (as
// std::function boxes anything above two pointers). Converts from any
// callable; from an empty std::function or a null function pointer it is
// empty, as a std::function made from them would be.
template <class... Args>
class SlotFunction<void(Args...)> {
public:
    static constexpr std::size_t kInlineSize = 2 * sizeof(void*);

    SlotFunction() noexcept = default;
    SlotFunction(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)

    template <class F>
        requires(!std::is_same_v<std::remove_cvref_t<F>, SlotFunction> &&
                 std::is_invocable_r_v<void, std::remove_cvref_t<F>&, Args...>)
    SlotFunction(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert implicitly
        using T = std::remove_cvref_t<F>;
        if constexpr (std::is_pointer_v<T> || std::is_member_pointer_v<T> || detail::IsStdFunction<T>::value) {
            if (!f) return;
        }
        if constexpr (fits_inline<T>()) {
            ::new (static_cast<void*>(storage_)) T(std::forward<F>(f));
            // Moved as all kInlineSize bytes: give the tail a value too.
            if constexpr (Relocatable<T> && sizeof(T) < kInlineSize)
                std::memset(storage_ + sizeof(T), 0, kInlineSize - sizeof(T));
            ops_ = &inline_ops<T>;
        } else {
            ::new (static_cast<void*>(storage_)) T*(new T(std::forward<F>(f)));
            ops_ = &boxed_ops<T>;
        }
    }

    SlotFunction(SlotFunction&& other) noexcept { take(other); }
    SlotFunction& operator=(SlotFunction&& other) noexcept {
        if (this != &other) {
            reset();
            take(other);
        }
        return *this;
    }
    SlotFunction(const SlotFunction&) = delete;
    SlotFunction& operator=(const SlotFunction&) = delete;
    ~SlotFunction() { reset(); }

    explicit operator bool() const noexcept { return ops_ != nullptr && ops_->invoke != nullptr; }

    // Precondition: non-empty. Like std::function, calls the target as a
    // non-const lvalue (a mutable lambda works).
    void operator()(Args... args) const { ops_->invoke(storage_, std::forward<Args>(args)...); }

    // Destroys the target (and so releases its captures) now.
    void reset() noexcept {
        if (ops_) {
            if (ops_->destroy) ops_->destroy(storage_);
            ops_ = nullptr;
        }
    }

private:
    template <class S>
    friend class CallbackSlot;

    struct Ops {
        void (*invoke)(void*, Args&&...);
        void (*move_to)(void* from, void* to) noexcept;  // leaves `from` destroyed; null: copy the bytes
        void (*destroy)(void*) noexcept;                 // null: nothing to do
    };

    template <class T>
    static constexpr bool fits_inline() {
        return sizeof(T) <= kInlineSize && alignof(T) <= alignof(void*) && std::is_nothrow_move_constructible_v<T>;
    }

    template <class T>
    static void move_inline(void* from, void* to) noexcept {
        ::new (to) T(std::move(*static_cast<T*>(from)));
        static_cast<T*>(from)->~T();
    }

    template <class T>
    static void call(T& target, Args&&... args) {
        static_cast<void>(std::invoke(target, std::forward<Args>(args)...));
    }

    template <class T>
    static constexpr Ops inline_ops{
        [](void* p, Args&&... args) { call(*static_cast<T*>(p), std::forward<Args>(args)...); },
        Relocatable<T> ? nullptr : &move_inline<T>,
        std::is_trivially_destructible_v<T> ? nullptr : +[](void* p) noexcept { static_cast<T*>(p)->~T(); },
    };

    template <class T>
    static constexpr Ops boxed_ops{
        [](void* p, Args&&... args) { call(**static_cast<T**>(p), std::forward<Args>(args)...); },
        nullptr,  // the box pointer moves as bytes
        [](void* p) noexcept { delete *static_cast<T**>(p); },
    };

    // The mark a CallbackSlot holds while its callback runs: no target,
    // nothing to move or destroy, and it reads as empty. Known by its null
    // invoke, not by its address: a shared library and its user may each
    // hold a copy of this constant.
    static constexpr Ops running_mark{nullptr, nullptr, nullptr};
    bool is_running_mark() const noexcept { return ops_ != nullptr && ops_->invoke == nullptr; }
    void set_running_mark() noexcept {
        reset();
        ops_ = &running_mark;
    }

    void take(SlotFunction& other) noexcept {
        if (other.ops_) {
            if (other.ops_->move_to) {
                other.ops_->move_to(other.storage_, storage_);
            } else {
                std::memcpy(storage_, other.storage_, kInlineSize);
            }
            ops_ = std::exchange(other.ops_, nullptr);
        }
    }

    const Ops* ops_ = nullptr;
    alignas(void*) mutable std::byte storage_[kInlineSize];
};

template <class... Args>
class CallbackSlot<void(Args...)> {
public:
    using Function = SlotFunction<void(Args...)>;

    CallbackSlot() = default;
    CallbackSlot(Function f) : f_(std::move(f)) {}  // NOLINT(google-explicit-constructor)

    // Replaces the callback (an empty Function clears it). Safe from inside invoke().
    void set(Function f) { f_ = std::move(f); }
    void reset() { f_.reset(); }
    // Empties the slot and returns its callback, for one that runs once (a
    // close callback): the caller runs it from its own local.
    Function take() {
        if (f_.is_running_mark()) {
            f_.reset();
            return nullptr;
        }
        return std::exchange(f_, nullptr);
    }
    explicit operator bool() const noexcept { return static_cast<bool>(f_); }

    // Runs the callback, if any; returns whether one ran. See the header comment.
    template <class... A>
    bool invoke(A&&... args) {
        if (!f_) return false;
        Running running{*this, std::move(f_)};
        f_.set_running_mark();
        running.f(std::forward<A>(args)...);
        return true;
    }

private:
    struct Running {
        CallbackSlot& slot;
        Function f;
        // By reference: the callback moves once, from its slot to here.
        Running(CallbackSlot& s, Function&& fn) : slot(s), f(std::move(fn)) {}
        Running(const Running&) = delete;
        Running& operator=(const Running&) = delete;
        ~Running() {
            if (slot.f_.is_running_mark()) slot.f_ = std::move(f);
        }
    };

    Function f_;
};

}  // namespace reactor
