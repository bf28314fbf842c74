// SPDX-License-Identifier: MIT
// reactor::LoopService: state that lives exactly as long as its Scheduler
// and ends with it: Asio's execution_context services, for one loop.
//
// A service is a class derived from LoopService, constructible from
// `Scheduler&`, found (and made, on first use) with
// `sched.service<MyService>()`: at most one of each type per Scheduler,
// kept in creation order. The library's own are the connections of a loop,
// the futures tasks and hand-made futures, the parked futures of queues and
// events, the thread-pool port and the child-process watches; a program adds
// its own the same way (docs/scheduler.md, "Extending the loop").
//
// The end of the loop tells every service, newest first (a service made
// while another was being built, because that one needs it, is told after
// it), what is happening:
//   close()    Scheduler::close(), the orderly end: end what the service
//              keeps, in order. May schedule callbacks: close() runs what is
//              ready afterwards (a connection's close callback).
//   abandon()  what is still kept must end silently now: after close()'s
//              bounded run, and first of all in ~Scheduler. Anything it
//              schedules is destroyed unrun. After close() the loop may be
//              used again, so a service must stay usable after abandon().
//   describe() Scheduler::live(): one LiveItem per object the service keeps
//              alive, naming the user's line where it is known.
// The service itself is destroyed by ~Scheduler, newest first, after the
// last callback was destroyed; its destructor must leave nothing pointing
// at it. Loop thread only.
#pragma once

#include <vector>

#include "reactor/export.hpp"
#include "reactor/live_item.hpp"

namespace reactor {

class Scheduler;

class REACTOR_API LoopService {
public:
    LoopService(const LoopService&) = delete;
    LoopService& operator=(const LoopService&) = delete;
    virtual ~LoopService() = default;

    virtual void close() {}
    virtual void abandon() noexcept {}
    virtual void describe(std::vector<LiveItem>& out) const { (void)out; }

    Scheduler& scheduler() const noexcept { return sched_; }

protected:
    explicit LoopService(Scheduler& sched) noexcept : sched_(sched) {}

private:
    Scheduler& sched_;
};

}  // namespace reactor
