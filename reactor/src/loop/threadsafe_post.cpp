// SPDX-License-Identifier: MIT
// Posting from other threads: call_soon_threadsafe queues under inbox_.mutex
// and, when the loop is asleep in its selector, wakes it through its eventfd
// (owned by the Scheduler, created in its constructor); the loop thread alone
// takes the queue, a whole batch at a time, and runs it in one place of its
// ready queue (libuv's and Asio's queues of posted operations do the same).
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <stdexcept>

#include "reactor/scheduler.hpp"
#include "reactor/kernel.hpp"

namespace reactor {

// Any thread.
void Scheduler::call_soon_threadsafe(Callback cb, std::source_location where) {
    if (!cb) throw std::invalid_argument("reactor: empty callback");
    {
        std::lock_guard lock(inbox_.mutex);
        inbox_.queue.push(std::move(cb), where);
    }
    wake();
}

// Any thread.
bool Scheduler::try_call_soon_threadsafe(Callback&& cb, std::source_location where) {
    if (!cb) throw std::invalid_argument("reactor: empty callback");
    {
        std::lock_guard lock(inbox_.mutex);
        if (inbox_.refused) return false;
        inbox_.queue.push(std::move(cb), where);
    }
    wake();
    return true;
}

// Any thread. Refused posts are accepted here until finish(): only then has
// the loop's thread run its last callback.
bool Scheduler::try_send_home(Callback&& cb, std::source_location where) {
    if (!cb) throw std::invalid_argument("reactor: empty callback");
    {
        std::lock_guard lock(inbox_.mutex);
        if (inbox_.finished) return false;
        inbox_.queue.push(std::move(cb), where);
    }
    wake();
    return true;
}

// Loop thread, after close(). Each round's posts are destroyed outside the
// lock (their destructors may post again, here too); the flag is set in the
// same critical section that finds the queue empty, so a caller that is
// refused afterwards comes after every destruction made here (the mutex
// orders them: what the loop's thread did happens before what it does).
void Scheduler::finish() noexcept {
    for (;;) {
        detail::PostedQueue doomed;
        {
            std::lock_guard lock(inbox_.mutex);
            if (inbox_.queue.empty()) {
                inbox_.refused = true;
                inbox_.finished = true;
                inbox_.queue.release_spares();
                return;
            }
            doomed.append(inbox_.queue);
        }
    }
}

// Any thread.
void Scheduler::refuse_posts() noexcept {
    {
        std::lock_guard lock(inbox_.mutex);
        inbox_.refused = true;
    }
    // Those accepted before this run at the loop's next iteration, whatever
    // its budget (take_posts_now): the loop may be about to close.
    inbox_.look_for_posts.store(true);
}

// Any thread, and signal handlers: async-signal-safe (lock-free atomics and
// write(2)). At most one eventfd write per batch, and none while the loop is
// awake (Netty's "write only if asleep", Seastar's _sleeping): whoever flips
// inbox_.wake_pending first since the loop last took the queue is the one to wake
// it, and only if the loop has announced that it may block (inbox_.asleep).
//
// Why no wake-up is lost: the poster stores inbox_.wake_pending then reads inbox_.asleep;
// the loop stores inbox_.asleep then reads inbox_.wake_pending before it blocks
// (poll_io). All four are sequentially consistent, so either the loop sees
// the flag and does not block, or the poster sees the loop asleep and writes.
// A write made to a loop that has just woken anyway only leaves the eventfd
// readable: the next wait returns at once and reads it (consume_wakeup).
//
// A write that fails (EAGAIN on a full counter, or anything a failing kernel
// says) must not leave the flag set with nobody writing: the flag is cleared
// so that the next post or signal tries again, and inbox_.look_for_posts makes the loop
// look for pending work at its next iteration, whatever wakes it. Should
// nothing wake it, no wait is longer than Options::wakeup_recheck_interval
// (wait_announced): what the failed write announced is late by at most that.
//
// A loop whose kernel says it rests (Kernel::loop_rests: a simulated host's)
// stays announced while it rests, and its kernel's wake_loop takes the
// place of the write (it is not async-signal-safe: signals are no part of a
// simulated world). A loop without a kernel tests one null pointer here.
void Scheduler::wake() noexcept {
    // Already announced since the last drain: the announcer wakes the loop if
    // it must. Read first, so that a stream of posts to a busy loop shares
    // the flag's cache line instead of writing it once per post.
    if (inbox_.wake_pending.load() || inbox_.wake_pending.exchange(true)) return;
    if (!inbox_.asleep.load()) return;
    // A simulated host's resting loop: its kernel has the world wake it.
    if (kernel_ != nullptr && kernel_->wake_loop()) return;
    const int saved_errno = errno;
    const std::uint64_t one = 1;
    ssize_t n;
    while ((n = ::write(wakeup_fd_, &one, sizeof one)) < 0 && errno == EINTR) {
    }
    if (n < 0) {
        inbox_.look_for_posts.store(true);
        inbox_.wake_pending.store(false);
        inbox_.wake_failures.fetch_add(1, std::memory_order_relaxed);
    } else {
        inbox_.wake_writes.fetch_add(1, std::memory_order_relaxed);
    }
    errno = saved_errno;
}

// Loop thread, from move_ready_io when the selector reports the eventfd
// readable: resets its counter, so that it does not fire again. What was
// posted is taken by drain_threadsafe, which inbox_.wake_pending calls for.
void Scheduler::consume_wakeup() noexcept {
    std::uint64_t count;
    while (::read(wakeup_fd_, &count, sizeof count) < 0 && errno == EINTR) {
    }
}

// Loop thread, from move_ready_io when inbox_.wake_pending (or inbox_.look_for_posts) is set:
// the whole queue joins the ready queue in the order it was posted (one lock
// per batch, not per post) as ONE entry, kPostedBatch, in whose place
// run_batch runs them straight from inbox_.batch. A post cannot be
// cancelled (no Handle), so it needs no slot: no slot allocated and freed
// per post, and a burst of posts does not grow the slot table. None runs here.
void Scheduler::drain_threadsafe() {
    inbox_.look_for_posts.store(false);
    inbox_.callbacks_at_take = stats_.callbacks_run;
    // Sequentially consistent, not just release: dispatch_signals reads the
    // signals' pending flags after this store (see on_signal in signals.cpp).
    inbox_.wake_pending.store(false);
    const std::size_t before = inbox_.batch.size();
    {
        // Chunks change hands, none is copied: the posts join what a batch
        // an exception cut short left (see run_batch), after it, and the
        // chunks the last batch emptied go back to the posters.
        std::lock_guard lock(inbox_.mutex);
        inbox_.batch.append(inbox_.queue);
        inbox_.queue.swap_spares(inbox_.batch);
    }
    const std::size_t taken = inbox_.batch.size() - before;
    inbox_.taken += taken;
    if (taken != 0) ready_.push_back(detail::kPostedBatch);
}

}  // namespace reactor
