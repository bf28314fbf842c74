// SPDX-License-Identifier: MIT
// futures::detail::WaiterList: who is woken when a future's state completes.
//
// Owns its entries: a boxed user callback, or a Link (a state waiting on this
// one) together with one strong reference to the Link's owner, so a waiting
// state lives at least until it is woken. Loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <utility>

#include <reactor/callback.hpp>
#include <reactor/export.hpp>

#include "futures/detail/state_pool.hpp"

namespace futures::detail {

class Link;

// A user's done-callback, boxed: most waiters are links, which need no box.
struct UserCallback {
    reactor::Callback cb;
    std::source_location where;
};

// One entry: a Link or a UserCallback, told apart by the pointer's low bit
// (both are at least 8-byte aligned), or empty. One word, so a fan-out's
// waiter vector is a plain array of pointers.
class Waiter {
public:
    Waiter() noexcept = default;
    static Waiter link(Link* l) noexcept { return Waiter(reinterpret_cast<std::uintptr_t>(l)); }
    static Waiter user(UserCallback* box) noexcept { return Waiter(reinterpret_cast<std::uintptr_t>(box) | kUser); }

    bool empty() const noexcept { return bits_ == 0; }
    Link* as_link() const noexcept { return (bits_ & kUser) ? nullptr : reinterpret_cast<Link*>(bits_); }
    UserCallback* as_user() const noexcept {
        return (bits_ & kUser) ? reinterpret_cast<UserCallback*>(bits_ & ~kUser) : nullptr;
    }

private:
    static constexpr std::uintptr_t kUser = 1;
    explicit Waiter(std::uintptr_t bits) noexcept : bits_(bits) {}
    std::uintptr_t bits_ = 0;
};

// The waiters of one state, in registration order. The first lives inline (most
// futures have exactly one consumer), the rest in a vector made for the second
// (so a state carries one pointer for them, not a whole vector). An entry is
// emptied when it starts running or is removed; indexes are stable.
class REACTOR_API WaiterList {
public:
    WaiterList() = default;
    WaiterList(const WaiterList&) = delete;
    WaiterList& operator=(const WaiterList&) = delete;
    ~WaiterList() {
        if (size_ != 0) clear();  // a dead state's list was cleared already
    }

    std::uint32_t size() const noexcept { return size_; }
    Waiter& operator[](std::uint32_t i) noexcept { return i == 0 ? first_ : (*rest_)[i - 1]; }
    // Appends `w`, whose ownership the list takes only if this returns (it may
    // throw std::length_error or std::bad_alloc).
    std::uint32_t push(Waiter w);
    // Takes entry i out (leaving it empty); the caller now owns what it held.
    Waiter take(std::uint32_t i) noexcept { return std::exchange((*this)[i], Waiter{}); }
    static void drop(Waiter w) noexcept;  // releases what a taken entry held
    void clear() noexcept;

private:
    Waiter first_;
    std::unique_ptr<WaiterVector> rest_;  // from take_waiter_vector()
    std::uint32_t size_ = 0;
};

}  // namespace futures::detail
