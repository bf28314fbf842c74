// SPDX-License-Identifier: MIT
// futures::Lock: mutual exclusion between state-machine tasks (asyncio.Lock),
// a Semaphore of one permit.
//
// acquire() returns a Future<Permit>: done at once if the lock is free and
// nobody waits, else when the holder lets go, FIFO. The hold is the Permit:
// the lock is released when it is destroyed (or by release()), straight to
// the first waiter still waiting. A wait cancelled before it was served never
// takes the lock, and a hold handed to a waiter that lets it go unread goes
// on to the next waiter (semaphore.hpp), so the lock is never lost. Loop
// thread only; never calls back synchronously.
#pragma once

#include <optional>
#include <source_location>

#include <reactor/scheduler.hpp>

#include "futures/future.hpp"
#include "futures/semaphore.hpp"

namespace futures {

class Lock {
public:
    explicit Lock(reactor::Scheduler& sched, std::source_location where = std::source_location::current())
        : sem_(sched, 1, where, "Lock") {}

    // The hold: at once if the lock is free and nobody waits, else FIFO.
    [[nodiscard]] Future<Permit> acquire(std::source_location where = std::source_location::current()) {
        return sem_.acquire(where);
    }
    // The hold if the lock is free; nothing otherwise.
    std::optional<Permit> try_acquire() { return sem_.try_acquire(); }

    bool locked() const noexcept { return sem_.locked(); }
    std::size_t waiting() const noexcept { return sem_.waiting(); }

private:
    Semaphore sem_;
};

}  // namespace futures
