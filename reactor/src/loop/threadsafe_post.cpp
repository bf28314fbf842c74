// SPDX-License-Identifier: MIT
// Posting from other threads: call_soon_threadsafe queues under posted_mutex_
// and wakes the loop through its eventfd (owned by the Scheduler, created in
// its constructor); the loop thread alone drains the queue into ready_.
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>

#include "reactor/scheduler.hpp"

namespace reactor {

// Any thread.
void Scheduler::call_soon_threadsafe(Callback cb, std::source_location where) {
    {
        std::lock_guard lock(posted_mutex_);
        posted_.push_back(Posted{std::move(cb), where});
    }
    wake();
}

// Any thread, and signal handlers: async-signal-safe (lock-free atomics and
// write(2)). One eventfd write per batch: whoever flips wake_pending_ wakes
// the loop, and the loop's drain clears it. A write that fails (EAGAIN on a
// full counter, or anything a failing kernel says) must not leave the flag
// set with nobody writing: the flag is cleared so that the next post or
// signal tries again, and wake_lost_ makes the loop look for pending work at
// its next iteration (move_ready_io), whatever wakes it.
void Scheduler::wake() noexcept {
    if (wake_pending_.exchange(true)) return;
    const int saved_errno = errno;
    const std::uint64_t one = 1;
    ssize_t n;
    while ((n = ::write(wakeup_fd_, &one, sizeof one)) < 0 && errno == EINTR) {
    }
    if (n < 0) {
        wake_lost_.store(true);
        wake_pending_.store(false);
        wake_failures_.fetch_add(1, std::memory_order_relaxed);
    }
    errno = saved_errno;
}

// Loop thread, from move_ready_io when the wakeup fd is readable: the posts
// join the ready queue in the order they were made; none runs here.
void Scheduler::drain_threadsafe() {
    std::uint64_t count;
    while (::read(wakeup_fd_, &count, sizeof count) < 0 && errno == EINTR) {
    }
    wake_lost_.store(false);
    // Sequentially consistent, not just release: dispatch_signals reads the
    // signals' pending flags after this store (see on_signal in signals.cpp).
    wake_pending_.store(false);
    {
        std::lock_guard lock(posted_mutex_);
        posted_batch_.swap(posted_);
    }
    for (auto& p : posted_batch_) ready_.push_back(alloc_slot(std::move(p.cb), p.where, SlotKind::soon));
    posted_batch_.clear();
}

}  // namespace reactor
