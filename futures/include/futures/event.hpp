// SPDX-License-Identifier: MIT
// futures::Event: a flag that state-machine tasks wait on (asyncio.Event).
//
// wait() returns a future done once the flag is set: at once if it is set
// already, else when set() is called. set() completes every waiting future,
// in the order they came, and the flag stays set until clear(). A wait that
// was cancelled (or whose every handle was dropped) is simply forgotten. The
// futures belong to the Scheduler, which should outlive the Event (if not,
// waiters still parked are cancelled when the Scheduler goes; destroying the
// Event cancels them too). Loop thread only; never calls back synchronously.
#pragma once

#include <cstddef>
#include <source_location>

#include <reactor/scheduler.hpp>

#include "futures/detail/parked.hpp"
#include "futures/future.hpp"
#include "futures/leaves.hpp"

namespace futures {

class Event {
public:
    explicit Event(reactor::Scheduler& sched, std::source_location where = std::source_location::current())
        : sched_(sched), waiters_(sched, detail::primitive_name("Event", where)) {}
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    // Done once the flag is set (at once if it is).
    [[nodiscard]] Future<void> wait(std::source_location where = std::source_location::current()) {
        if (set_) return make_ready_future(sched_, where);
        return waiters_.park(where);
    }

    // Sets the flag and completes every waiting future, oldest first. Setting
    // a set flag does nothing.
    void set() {
        set_ = true;
        while (auto w = waiters_.pop()) w->finish_value();
    }
    // Clears the flag: later waits wait for the next set().
    void clear() noexcept { set_ = false; }
    bool is_set() const noexcept { return set_; }
    std::size_t waiting() const noexcept { return waiters_.size(); }

private:
    reactor::Scheduler& sched_;
    bool set_ = false;
    detail::ParkedList<void> waiters_;
};

}  // namespace futures
