// SPDX-License-Identifier: MIT
// reactor::FdOwner: the object that owns an fd the loop watches for it, and
// hears when the loop cannot watch that fd any more.
#pragma once

#include <source_location>
#include <system_error>
#include <vector>

#include "reactor/clock.hpp"
#include "reactor/export.hpp"
#include "reactor/live_item.hpp"
#include "reactor/selector.hpp"

namespace reactor {

// Connection, Listener, UdpSocket and a connect in progress are FdOwners; so
// may be a user's own socket type. Declared with Scheduler::set_fd_owner(fd,
// owner), an owner makes two promises and gets one thing back:
//  - it calls Scheduler::forget_fd(fd) before it closes fd, and before it is
//    destroyed (which ends the ownership);
//  - so on epoll the loop can skip, for fd, the check it makes before every
//    readiness event of an fd without an owner (is the number still open?
//    a closed fd whose file a dup keeps open would otherwise be reported
//    ready again and again);
//  - and when the loop cannot watch fd (epoll_ctl failing with ENOMEM or
//    ENOSPC, or fd found closed: EBADF), its waiters are dropped and the
//    owner's on_unwatchable() runs once, from the run phase, instead of a
//    report to the exception handler. The ownership ends there: the owner is
//    expected to close (a Connection aborts with that error, a Listener
//    stops listening and reports it). An fd without an owner is reported to
//    the exception handler, as before.
// Scheduler::live() does not list an owned fd's waiters one by one: it asks
// the owner, once per fd, to describe itself (a listener, a connect in
// progress). By default an owner adds nothing, for an owner listed by a
// service already (a connection, by the connections of its loop).
// An owner may also watch its fd itself (Scheduler::watch) instead of
// registering waiters: the loop then calls on_ready, and names origin() in
// the reports of an exception it throws or of a slow call (debug mode).
// Likewise it may keep one timer in the loop with no slot of its own
// (Scheduler::set_owner_timer): the loop calls on_owner_timer when it is
// due, and asks owner_timer_due to tell it from the earlier ones it replaced.
class REACTOR_API FdOwner {
public:
    virtual void on_unwatchable(int fd, std::error_code error) = 0;
    // fd is ready for `which` (Interest::read or Interest::write), watched
    // through Scheduler::watch. Readiness may be spurious (EAGAIN: wait again).
    virtual void on_ready(int fd, Interest which) {
        (void)fd;
        (void)which;
    }
    // The time given to Scheduler::set_owner_timer(fd, ...) has come: from
    // the run phase, as a timer's callback would run. Exceptions go to the
    // exception handler, naming origin().
    virtual void on_owner_timer(int fd) { (void)fd; }
    // The time last given to Scheduler::set_owner_timer(fd, ...): the loop
    // keeps no time of its own for fd, and asks this (when an entry of its
    // heap comes up) to tell the owner's timer from the entries of the
    // times it replaced. An owner that sets timers overrides both.
    virtual TimePoint owner_timer_due(int fd) const noexcept {
        (void)fd;
        return TimePoint::max();
    }
    // The user's line that made this owner, for reports.
    virtual std::source_location origin() const noexcept { return {}; }
    virtual void describe(int fd, std::vector<LiveItem>& out) const {
        (void)fd;
        (void)out;
    }

protected:
    FdOwner() = default;
    FdOwner(const FdOwner&) = default;
    FdOwner& operator=(const FdOwner&) = default;
    ~FdOwner() = default;
};

}  // namespace reactor
