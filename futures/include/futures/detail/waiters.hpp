// SPDX-License-Identifier: MIT
// futures::detail::WaiterList: who is woken when a future's state completes.
//
// Owns its entries: a boxed user callback, or a Link (a state waiting on this
// one) together with one strong reference to the Link's owner, so a waiting
// state lives at least until it is woken. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <source_location>
#include <utility>

#include <reactor/callback.hpp>
#include <reactor/export.hpp>

#include "futures/detail/state_pool.hpp"

namespace futures::detail {

class StateBase;

class Link;

// A done-callback as the waiter list sees it: run once, or dropped unrun,
// then disposed of. Most are a user's callable in a box of their own
// (UserCallbackOf); an object that waits on a future anyway can be its own
// (a StreamServer's stream, ending its conversation: futures/src/stream_core.hpp).
class UserCallback {
public:
    UserCallback(const UserCallback&) = delete;
    UserCallback& operator=(const UserCallback&) = delete;

    // `done`: the state whose completion runs it (a waiter may follow several).
    virtual void run(StateBase& done) = 0;
    // Where it was registered: named if run() throws.
    virtual std::source_location where() const noexcept = 0;
    // The list is done with it: it ran, or was removed or dropped unrun.
    // (An inline waiter, StateBase::add_inline_waiter, is disposed of only
    // when removed or dropped unrun: once run, it is its own again.)
    virtual void dispose() noexcept = 0;

protected:
    UserCallback() noexcept = default;
    ~UserCallback() = default;
};

// A user's done-callback, boxed (most waiters are links, which need no
// box) in a block of the state pool sized to the callable: a lambda of a
// pointer or two takes a small block, not a reactor::Callback's whole
// inline buffer.
template <class F>
class UserCallbackOf final : public UserCallback {
public:
    UserCallbackOf(F f, std::source_location where) : where_(where), f_(std::move(f)) {}
    void run(StateBase&) override { f_(); }
    std::source_location where() const noexcept override { return where_; }
    void dispose() noexcept override { delete this; }

    // As StateBase's: the pool, and `delete` passes the size.
    static void* operator new(std::size_t size) { return allocate_state(size); }
    static void operator delete(void* block, std::size_t size) noexcept { free_state(block, size); }
    static void* operator new(std::size_t size, std::align_val_t align) { return ::operator new(size, align); }
    static void operator delete(void* block, std::size_t size, std::align_val_t align) noexcept {
        ::operator delete(block, size, align);
    }

private:
    ~UserCallbackOf() = default;

    std::source_location where_;
    F f_;
};

// One entry: a Link or a UserCallback, told apart by the pointer's low bit
// (both are at least 8-byte aligned), or empty; a UserCallback run inline
// at completion (StateBase::add_inline_waiter) has bit 2 set too. One word,
// so a fan-out's waiter vector is a plain array of pointers.
class Waiter {
public:
    Waiter() noexcept = default;
    static Waiter link(Link* l) noexcept { return Waiter(reinterpret_cast<std::uintptr_t>(l)); }
    static Waiter user(UserCallback* box) noexcept { return Waiter(reinterpret_cast<std::uintptr_t>(box) | kUser); }
    static Waiter inline_user(UserCallback* box) noexcept {
        return Waiter(reinterpret_cast<std::uintptr_t>(box) | kUser | kInline);
    }

    bool empty() const noexcept { return bits_ == 0; }
    bool is_inline() const noexcept { return (bits_ & kInline) != 0; }
    Link* as_link() const noexcept { return (bits_ & kUser) ? nullptr : reinterpret_cast<Link*>(bits_); }
    UserCallback* as_user() const noexcept {
        return (bits_ & kUser) ? reinterpret_cast<UserCallback*>(bits_ & ~(kUser | kInline)) : nullptr;
    }

private:
    friend class WaiterList;
    static constexpr std::uintptr_t kUser = 1;
    static constexpr std::uintptr_t kInline = 4;
    explicit Waiter(std::uintptr_t bits) noexcept : bits_(bits) {}
    std::uintptr_t bits_ = 0;
};

// The waiters of one state, in registration order, in one word: most futures
// have exactly one consumer, who lives in the word itself; the second makes
// a vector (from take_waiter_vector()) that then holds them all. An entry is
// emptied when it starts running or is removed; indexes are stable, so a
// lone entry that was taken leaves a marker saying "one entry, empty".
class REACTOR_API WaiterList {
public:
    WaiterList() = default;
    WaiterList(const WaiterList&) = delete;
    WaiterList& operator=(const WaiterList&) = delete;
    ~WaiterList() {
        if (word_ != 0) clear();  // a dead state's list was cleared already
    }

    std::uint32_t size() const noexcept {
        if (WaiterVector* v = many()) return static_cast<std::uint32_t>(v->size());
        return word_ == 0 ? 0 : 1;
    }
    // Entry i (i < size()).
    Waiter operator[](std::uint32_t i) const noexcept {
        if (WaiterVector* v = many()) return (*v)[i];
        return word_ == kOneTaken ? Waiter{} : Waiter(word_);
    }
    // Appends `w`, whose ownership the list takes only if this returns (it may
    // throw std::length_error or std::bad_alloc). The first entry, the common
    // case, is one store.
    std::uint32_t push(Waiter w) {
        if (word_ == 0) {
            word_ = w.bits_;
            return 0;
        }
        return push_more(w);
    }
    // Takes entry i out (leaving it empty); the caller now owns what it held.
    Waiter take(std::uint32_t i) noexcept {
        if (WaiterVector* v = many()) return std::exchange((*v)[i], Waiter{});
        if (word_ == kOneTaken) return Waiter{};
        return Waiter(std::exchange(word_, kOneTaken));
    }
    static void drop(Waiter w) noexcept;  // releases what a taken entry held
    void clear() noexcept;

private:
    std::uint32_t push_more(Waiter w);  // push past the first entry

    // word_ is 0 (no entries), an entry's own bits (one entry), kOneTaken
    // (one entry, taken), or a WaiterVector* tagged kMany (two or more). A
    // Link* or UserCallback* is 8-byte aligned and a Waiter sets bit 0 and,
    // with it, bit 2 (Waiter::kInline), never bit 1: so kMany is bit 1, and
    // kOneTaken the value 4 alone, which no entry's bits equal.
    static constexpr std::uintptr_t kMany = 2;
    static constexpr std::uintptr_t kOneTaken = 4;
    WaiterVector* many() const noexcept {
        return (word_ & kMany) ? reinterpret_cast<WaiterVector*>(word_ & ~kMany) : nullptr;
    }

    std::uintptr_t word_ = 0;
};

}  // namespace futures::detail
