// SPDX-License-Identifier: MIT
// reactor::ForeignPtr<T>: an owning pointer that remembers the loop its
// object belongs to and has the object destroyed there (Seastar's
// foreign_ptr). For carrying an object made on one loop to another loop's
// thread (a submit_to result, a posted message) without breaking the
// ownership rule (docs/cores.md): every object is destroyed on its loop.
//
//   // on loop 1:
//   auto p = reactor::make_foreign(std::make_unique<Table>());  // owner: loop 1
//   // ... handed to loop 0, which reads it and drops it:
//   p.reset();  // on loop 0's thread: the deletion is posted to loop 1
//
// Destruction (the destructor, reset(), assignment over a non-empty one):
//   - on the thread running the owner loop (Scheduler::running() is the
//     owner), or with no owner: deleted in place, at once;
//   - on any other thread, one that runs no loop included (the owner may be
//     running on its own thread: only that thread may delete): the deletion
//     is sent to the owner (Scheduler::try_send_home), and runs there as a
//     callback. An owner that is not running keeps it until its next run;
//     Scheduler::close() or its destructor destroys it unrun, and with it
//     the object, on the thread that closes the loop. An owner that refuses
//     posts still takes it: a LoopGroup loop that ends refuses posts before
//     its last iteration and close(), which still run close callbacks on its
//     thread; the deletion is run or dropped there, and a loop's very last
//     act on its thread destroys what came after close() (Scheduler::finish);
//   - the owner has finished (a LoopGroup loop past that last act: its
//     thread runs nothing of it any more): the object is deleted on the
//     CURRENT thread. Nobody else can ever do it, and the owner's thread is
//     done with it: the refusal comes after everything that thread did (the
//     loop's mutex orders them).
//   Sending that fails for want of memory (a new chunk of the owner's post
//   queue) deletes on the current thread too: the one case in which the
//   object may die off its owner's thread while the owner runs.
// So the owner must be alive when a non-empty ForeignPtr is destroyed off
// its thread (a LoopGroup's loops live as long as the group): reset it, or
// let its content go home, before the owner Scheduler is destroyed.
//
// `Ptr` is what owns the object: std::unique_ptr<T> by default (any deleter),
// or std::shared_ptr<T>: then what goes home is this reference, dropped on
// the owner (the object itself dies there if this was its last reference
// and the others were dropped on the owner too):
//   reactor::ForeignPtr<Cache, std::shared_ptr<Cache>> p(owner, cache);
//
// Move-only. The pointee is the owner's: read it from another thread only
// as far as its own type allows (immutable data, say). The ForeignPtr object
// itself is not thread-safe: one thread at a time, handed over with the
// program's own synchronisation (a post, a future).
#pragma once

#include <cstddef>
#include <memory>
#include <source_location>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <reactor/callback.hpp>
#include <reactor/scheduler.hpp>

namespace reactor {

template <class T, class Ptr = std::unique_ptr<T>>
class ForeignPtr {
    static_assert(std::is_same_v<typename Ptr::element_type, T>, "ForeignPtr<T, Ptr>: Ptr must own a T");

public:
    using element_type = T;
    using pointer_type = Ptr;

    ForeignPtr() noexcept = default;
    ForeignPtr(std::nullptr_t) noexcept {}
    // Owns `p`, whose object belongs to `owner`.
    ForeignPtr(Scheduler& owner, Ptr p) noexcept : ptr_(std::move(p)), owner_(&owner) {}

    ForeignPtr(const ForeignPtr&) = delete;
    ForeignPtr& operator=(const ForeignPtr&) = delete;
    ForeignPtr(ForeignPtr&& other) noexcept
        : ptr_(std::move(other.ptr_)), owner_(std::exchange(other.owner_, nullptr)) {
        other.ptr_ = Ptr();  // a moved-from ForeignPtr is empty, whatever Ptr's move leaves
    }
    // Destroys what this one held first (as reset() does).
    ForeignPtr& operator=(ForeignPtr&& other) noexcept {
        if (this != &other) {
            reset();
            ptr_ = std::move(other.ptr_);
            other.ptr_ = Ptr();
            owner_ = std::exchange(other.owner_, nullptr);
        }
        return *this;
    }
    ForeignPtr& operator=(std::nullptr_t) noexcept {
        reset();
        return *this;
    }
    ~ForeignPtr() { reset(); }

    T* get() const noexcept { return ptr_.get(); }
    T* operator->() const noexcept { return ptr_.get(); }
    std::add_lvalue_reference_t<T> operator*() const noexcept { return *ptr_; }
    explicit operator bool() const noexcept { return static_cast<bool>(ptr_); }
    // The loop the object belongs to (null for an empty ForeignPtr).
    Scheduler* owner() const noexcept { return owner_; }

    // Gives the object back and empties this one. The caller now answers for
    // destroying it on its owner.
    [[nodiscard]] Ptr release() noexcept {
        owner_ = nullptr;
        Ptr p = std::move(ptr_);
        ptr_ = Ptr();
        return p;
    }

    // Destroys the object as the top of this file says, and empties this one.
    // Any thread; never throws.
    void reset() noexcept {
        Scheduler* owner = std::exchange(owner_, nullptr);
        if (!ptr_) return;
        Ptr p = std::move(ptr_);
        ptr_ = Ptr();
        if (owner == nullptr || Scheduler::running() == owner) return;  // p dies here, in place
        try {
            Callback going_home([p = std::move(p)]() mutable { p = Ptr(); });
            if (owner->try_send_home(std::move(going_home), std::source_location::current())) return;
            // Refused (the owner has finished): going_home still holds the
            // object, and dies here with it.
        } catch (...) {
            // Out of memory making or posting the callback: deleted here, by
            // whoever holds it now (p, or the callback).
        }
    }

private:
    Ptr ptr_;
    Scheduler* owner_ = nullptr;
};

// A ForeignPtr owned by the loop the calling thread runs (Scheduler::running()).
// Throws std::logic_error from a thread that runs no loop: name the owner
// with the constructor there.
template <class T, class D>
ForeignPtr<T, std::unique_ptr<T, D>> make_foreign(std::unique_ptr<T, D> p) {
    Scheduler* owner = Scheduler::running();
    if (owner == nullptr)
        throw std::logic_error("reactor::make_foreign: the calling thread runs no loop; use ForeignPtr(owner, p)");
    return ForeignPtr<T, std::unique_ptr<T, D>>(*owner, std::move(p));
}
template <class T>
ForeignPtr<T, std::shared_ptr<T>> make_foreign(std::shared_ptr<T> p) {
    Scheduler* owner = Scheduler::running();
    if (owner == nullptr)
        throw std::logic_error("reactor::make_foreign: the calling thread runs no loop; use ForeignPtr(owner, p)");
    return ForeignPtr<T, std::shared_ptr<T>>(*owner, std::move(p));
}

}  // namespace reactor
