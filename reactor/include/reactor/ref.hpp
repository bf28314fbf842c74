// SPDX-License-Identifier: MIT
// reactor::RefCounted and reactor::Ref: how the loop's I/O objects are owned.
//
// One idiom for the connection stack (Connection, tls::Connection,
// ConnectionSet): the object carries its own count (no control block beside
// it: one heap block, one word per handle), a Ref is a handle that counts,
// and an open object holds one count itself, released as its close is told
// (so nobody has to keep a pointer to an open connection, and its callbacks
// may drop every handle). Seastar's lw_shared_ptr and Boost's intrusive_ptr
// are the same idea. A Ref reads as a std::shared_ptr: copy, move, ->, *,
// get(), a test for null, comparison, hashing, use_count(); Ref<Derived>
// converts to Ref<Base>. There is no weak handle: what must not keep an
// object alive is told of its end (the close callback, Protocol::on_closed).
//
// A Ref holds any class with add_ref() and release() of its own: the
// futures' states and a Stream's core count on their loop alone (no
// atomics) and return to a pool or close instead of being deleted.
// RefCounted's count is atomic, as std::shared_ptr's: a handle may be copied
// or dropped on any thread (the object is still touched, and freed by the
// last handle, under the ownership rule of docs/cores.md).
//
// What stays a std::shared_ptr: the objects that belong to whoever holds
// them and close when dropped (Listener, UdpSocket, LineReader), or to the
// pending work that runs them (Connector, a server's end). Their queued
// callbacks and their cancellers must see them weakly (a dropped socket
// closes now, not after a callback it queued), which a count without a
// control block cannot offer.
#pragma once

#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <type_traits>
#include <utility>

namespace reactor {

class RefCounted {
public:
    RefCounted(const RefCounted&) = delete;
    RefCounted& operator=(const RefCounted&) = delete;

protected:
    RefCounted() noexcept = default;
    // Pure: only a base (the compiler then never takes an object for a bare
    // RefCounted when it guesses what `delete this` destroys).
    virtual ~RefCounted() = 0;

    // For the object's own count (an open connection's): taken, and given
    // back by Ref::adopt.
    void add_ref() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }

private:
    template <class T>
    friend class Ref;
    void release() const noexcept {
        if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    std::uint32_t use_count() const noexcept { return refs_.load(std::memory_order_relaxed); }
    mutable std::atomic<std::uint32_t> refs_{0};
};

inline RefCounted::~RefCounted() = default;

template <class T>
class Ref {
public:
    using element_type = T;

    constexpr Ref() noexcept = default;
    constexpr Ref(std::nullptr_t) noexcept {}  // NOLINT: as shared_ptr's
    // Counts one more handle to `p` (a new object: its first).
    explicit Ref(T* p) noexcept : p_(p) {
        if (p_) p_->add_ref();
    }
    // Takes over a count already taken (add_ref).
    static Ref adopt(T* p) noexcept {
        Ref r;
        r.p_ = p;
        return r;
    }
    Ref(const Ref& other) noexcept : Ref(other.p_) {}
    Ref(Ref&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
    template <class U>
        requires std::is_convertible_v<U*, T*>
    Ref(const Ref<U>& other) noexcept : Ref(other.get()) {}  // NOLINT: as shared_ptr's upcast
    template <class U>
        requires std::is_convertible_v<U*, T*>
    Ref(Ref<U>&& other) noexcept : p_(other.leak()) {}  // NOLINT: as shared_ptr's upcast
    Ref& operator=(Ref other) noexcept {
        swap(other);
        return *this;
    }
    ~Ref() { reset(); }

    void reset() noexcept {
        if (T* p = std::exchange(p_, nullptr)) p->release();
    }
    void swap(Ref& other) noexcept { std::swap(p_, other.p_); }

    T* get() const noexcept { return p_; }
    T* operator->() const noexcept { return p_; }
    T& operator*() const noexcept { return *p_; }
    explicit operator bool() const noexcept { return p_ != nullptr; }
    // The handles counted now, the object's own included (as shared_ptr's:
    // for tests and diagnostics; 0 if null).
    std::uint32_t use_count() const noexcept {
        return p_ ? p_->use_count() : 0;
    }

    // Lets go of the pointer without counting down: for Ref<Base>'s move.
    T* leak() noexcept { return std::exchange(p_, nullptr); }

    template <class U>
    bool operator==(const Ref<U>& other) const noexcept {
        return p_ == other.get();
    }
    bool operator==(std::nullptr_t) const noexcept { return p_ == nullptr; }
    template <class U>
    std::strong_ordering operator<=>(const Ref<U>& other) const noexcept {
        return std::compare_three_way{}(p_, other.get());
    }

private:
    T* p_ = nullptr;
};

// A new T, held by the returned handle (as std::make_shared).
template <class T, class... Args>
Ref<T> make_ref(Args&&... args) {
    return Ref<T>(new T(std::forward<Args>(args)...));
}

// Prints the pointer, as shared_ptr's operator<< does.
template <class C, class Traits, class T>
std::basic_ostream<C, Traits>& operator<<(std::basic_ostream<C, Traits>& os, const Ref<T>& r) {
    return os << static_cast<const void*>(r.get());
}

}  // namespace reactor

template <class T>
struct std::hash<reactor::Ref<T>> {
    std::size_t operator()(const reactor::Ref<T>& r) const noexcept { return std::hash<T*>{}(r.get()); }
};
