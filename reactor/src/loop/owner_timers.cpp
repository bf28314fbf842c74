// SPDX-License-Identifier: MIT
// An fd owner's timer (Scheduler::set_owner_timer): a sleeping-heap entry
// with no slot, named by the fd and its ownership (kOwnerTimer), as an
// owner's readiness is in the ready queue (Scheduler::watch). The owner
// keeps its due time; the loop keeps one bit per fd (FdWaiters::owner_timer)
// that says an entry of the heap is the owner's pending timer, and tells
// that entry from the ones it replaced by asking the owner its time. An
// owner's timer thus costs the loop a heap entry, not a slot.
// Loop thread only; the run phase that calls the owner is in iteration.cpp.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "reactor/scheduler.hpp"

namespace reactor {

void Scheduler::set_owner_timer(int fd, TimePoint due) {
    require_loop_thread("set_owner_timer");
    const auto index = static_cast<std::size_t>(fd);
    if (fd < 0 || index >= fds_.waiting.size() || fds_.waiting[index].owner == nullptr) {
        throw std::logic_error(
            fmt::format("reactor: set_owner_timer(fd {}): the fd has no owner (set_fd_owner first)", fd));
    }
    // While the owner still answers the time it replaces, that entry is
    // live to a purge; it counts as dead only once this returns.
    const bool replaces = fds_.waiting[index].owner_timer;
    if (replaces) purge_if_mostly_dead(1);
    const Ref r{detail::kOwnerReady | detail::kOwnerTimer | static_cast<std::uint32_t>(fd), fds_.waiting[index].owner_gen};
    timers_.push(due, r);  // may throw: nothing has changed then
    if (replaces) {
        ++timers_.dead;
    } else {
        fds_.waiting[index].owner_timer = true;
        ++timers_.live;
    }
}

// A slot's timer is live while its slot's generation matches; an owner's,
// while the ownership lasts, its timer is pending, and its time is the
// owner's (an entry it replaced has another, or came up first with the same).
bool Scheduler::timer_live(const Timer& t) const noexcept {
    if (!detail::is_owner_timer(t.ref)) return live(t.ref);
    const auto fd = static_cast<std::size_t>(detail::owner_fd(t.ref));
    if (fd >= fds_.waiting.size()) return false;
    const FdWaiters& w = fds_.waiting[fd];
    return w.owner_timer && w.owner_gen == t.ref.gen && w.owner->owner_timer_due(static_cast<int>(fd)) == t.deadline;
}

// The ownership ends (forget_fd, set_fd_owner, an unwatchable fd): its
// pending timer's entry is left to be dropped like a cancelled timer's.
void Scheduler::end_owner_timer(FdWaiters& w) noexcept {
    if (!w.owner_timer) return;
    w.owner_timer = false;
    --timers_.live;
    ++timers_.dead;
    purge_if_mostly_dead(0);
}

}  // namespace reactor
