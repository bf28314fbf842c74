// SPDX-License-Identifier: MIT
// reactor::Callback: a move-only `void()` callable with an inline buffer.
//
// Why not std::function: it requires copyable targets (futures capture move-only
// state) and allocates for anything larger than two pointers. Callback stores
// targets up to kInlineSize bytes in place, so scheduling a typical lambda
// (a few pointers, a shared_ptr) never touches the heap; larger or throwing-move
// targets are boxed on the heap. A relocatable target (see below) and a
// boxed one move as plain bytes: the loop moves every callback twice (into
// its slot, out to run), and those moves then cost no indirect call. Not
// thread-safe; owns its target.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include <reactor/export.hpp>

namespace reactor {

namespace detail {
struct CallbackTarget;
}

// A callable that may move as plain bytes, its moved-from copy then simply
// forgotten (never destroyed): every trivially copyable type (a lambda that
// captures pointers and numbers), and a class that declares
// `using relocatable = void;` because all it holds is pointers, numbers and
// handles that own through a pointer (an intrusive reference, say) and do not
// point into themselves.
template <class T>
concept Relocatable = std::is_trivially_copyable_v<T> || requires { typename T::relocatable; };

class REACTOR_API Callback {
public:
    // Big enough for a lambda holding six pointers, or three shared_ptrs.
    static constexpr std::size_t kInlineSize = 48;

    Callback() noexcept = default;
    Callback(std::nullptr_t) noexcept {}

    template <class F>
        requires(!std::is_same_v<std::remove_cvref_t<F>, Callback> &&
                 std::is_invocable_r_v<void, std::remove_cvref_t<F>&>)
    Callback(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert implicitly
        using T = std::remove_cvref_t<F>;
        if constexpr (fits_inline<T>()) {
            ::new (static_cast<void*>(storage_)) T(std::forward<F>(f));
            ops_ = &inline_ops<T>;
            // Moved as all kInlineSize bytes: give the tail a value too.
            if constexpr (Relocatable<T> && sizeof(T) < kInlineSize)
                std::memset(storage_ + sizeof(T), 0, kInlineSize - sizeof(T));
        } else {
            ::new (static_cast<void*>(storage_)) T*(new T(std::forward<F>(f)));
            ops_ = &boxed_ops<T>;
        }
    }

    Callback(Callback&& other) noexcept { take(other); }
    Callback& operator=(Callback&& other) noexcept {
        if (this != &other) {
            reset();
            take(other);
        }
        return *this;
    }
    Callback(const Callback&) = delete;
    Callback& operator=(const Callback&) = delete;
    ~Callback() { reset(); }

    explicit operator bool() const noexcept { return ops_ != nullptr; }

    // Precondition: non-empty.
    void operator()() { ops_->invoke(storage_); }

    // Destroys the target (and so releases its captures) now.
    void reset() noexcept {
        if (ops_) {
            if (ops_->destroy) ops_->destroy(storage_);
            ops_ = nullptr;
        }
    }

private:
    // The loop's queue of posts parks a target in its own storage
    // (detail::PostedQueue): it needs the ops and the target's size.
    friend struct detail::CallbackTarget;

    struct Ops {
        void (*invoke)(void*);
        void (*move_to)(void* from, void* to) noexcept;  // leaves `from` destroyed; null: copy the bytes
        void (*destroy)(void*) noexcept;                 // null: nothing to do
        // The bytes of storage_ the target uses (itself, or its box's
        // pointer), rounded up to kInlineAlign: what a move must carry.
        std::size_t size;
    };

    static constexpr std::size_t stored_size(std::size_t bytes) {
        return (bytes + kInlineAlign - 1) / kInlineAlign * kInlineAlign;
    }

    template <class T>
    static constexpr bool fits_inline() {
        return sizeof(T) <= kInlineSize && alignof(T) <= kInlineAlign &&
               std::is_nothrow_move_constructible_v<T>;
    }

    template <class T>
    static void move_inline(void* from, void* to) noexcept {
        ::new (to) T(std::move(*static_cast<T*>(from)));
        static_cast<T*>(from)->~T();
    }

    template <class T>
    static constexpr Ops inline_ops{
        [](void* p) { (*static_cast<T*>(p))(); },
        Relocatable<T> ? nullptr : &move_inline<T>,
        std::is_trivially_destructible_v<T> ? nullptr : +[](void* p) noexcept { static_cast<T*>(p)->~T(); },
        stored_size(sizeof(T)),
    };

    template <class T>
    static constexpr Ops boxed_ops{
        [](void* p) { (**static_cast<T**>(p))(); },
        nullptr,  // the box pointer moves as bytes
        [](void* p) noexcept { delete *static_cast<T**>(p); },
        sizeof(T*),
    };

    void take(Callback& other) noexcept {
        if (other.ops_) {
            if (other.ops_->move_to) {
                other.ops_->move_to(other.storage_, storage_);
            } else {
                std::memcpy(storage_, other.storage_, kInlineSize);
            }
            ops_ = std::exchange(other.ops_, nullptr);
        }
    }

    // Pointer alignment, not max_align_t's 16: a Callback is then 56 bytes,
    // not 64, in every slot of the loop. A target that needs more (a
    // captured long double) is boxed.
    static constexpr std::size_t kInlineAlign = alignof(void*);
    alignas(kInlineAlign) std::byte storage_[kInlineSize];
    const Ops* ops_ = nullptr;
};

}  // namespace reactor
