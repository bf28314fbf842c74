// SPDX-License-Identifier: MIT
// Posting from other threads: call_soon_threadsafe queues under posted_mutex_
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

namespace reactor {

// Any thread.
void Scheduler::call_soon_threadsafe(Callback cb, std::source_location where) {
    if (!cb) throw std::invalid_argument("reactor: empty callback");
    {
        std::lock_guard lock(posted_mutex_);
        posted_.push(std::move(cb), where);
    }
    wake();
}

// Any thread.
bool Scheduler::try_call_soon_threadsafe(Callback&& cb, std::source_location where) {
    if (!cb) throw std::invalid_argument("reactor: empty callback");
    {
        std::lock_guard lock(posted_mutex_);
        if (posts_refused_) return false;
        posted_.push(std::move(cb), where);
    }
    wake();
    return true;
}

// Any thread. Refused posts are accepted here until finish(): only then has
// the loop's thread run its last callback.
bool Scheduler::try_send_home(Callback&& cb, std::source_location where) {
    if (!cb) throw std::invalid_argument("reactor: empty callback");
    {
        std::lock_guard lock(posted_mutex_);
        if (finished_) return false;
        posted_.push(std::move(cb), where);
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
            std::lock_guard lock(posted_mutex_);
            if (posted_.empty()) {
                posts_refused_ = true;
                finished_ = true;
                posted_.release_spares();
                return;
            }
            doomed.append(posted_);
        }
    }
}

// Any thread.
void Scheduler::refuse_posts() noexcept {
    {
        std::lock_guard lock(posted_mutex_);
        posts_refused_ = true;
    }
    // Those accepted before this run at the loop's next iteration, whatever
    // its budget (take_posts_now): the loop may be about to close.
    look_for_posts_.store(true);
}

// Any thread, and signal handlers: async-signal-safe (lock-free atomics and
// write(2)). At most one eventfd write per batch, and none while the loop is
// awake (Netty's "write only if asleep", Seastar's _sleeping): whoever flips
// wake_pending_ first since the loop last took the queue is the one to wake
// it, and only if the loop has announced that it may block (asleep_).
//
// Why no wake-up is lost: the poster stores wake_pending_ then reads asleep_;
// the loop stores asleep_ then reads wake_pending_ before it blocks
// (poll_io). All four are sequentially consistent, so either the loop sees
// the flag and does not block, or the poster sees the loop asleep and writes.
// A write made to a loop that has just woken anyway only leaves the eventfd
// readable: the next wait returns at once and reads it (consume_wakeup).
//
// A write that fails (EAGAIN on a full counter, or anything a failing kernel
// says) must not leave the flag set with nobody writing: the flag is cleared
// so that the next post or signal tries again, and look_for_posts_ makes the loop
// look for pending work at its next iteration, whatever wakes it. Should
// nothing wake it, no wait is longer than Options::wakeup_recheck_interval
// (wait_announced): what the failed write announced is late by at most that.
void Scheduler::wake() noexcept {
    // Already announced since the last drain: the announcer wakes the loop if
    // it must. Read first, so that a stream of posts to a busy loop shares
    // the flag's cache line instead of writing it once per post.
    if (wake_pending_.load() || wake_pending_.exchange(true)) return;
    if (!asleep_.load()) return;
    const int saved_errno = errno;
    const std::uint64_t one = 1;
    ssize_t n;
    while ((n = ::write(wakeup_fd_, &one, sizeof one)) < 0 && errno == EINTR) {
    }
    if (n < 0) {
        look_for_posts_.store(true);
        wake_pending_.store(false);
        wake_failures_.fetch_add(1, std::memory_order_relaxed);
    } else {
        wake_writes_.fetch_add(1, std::memory_order_relaxed);
    }
    errno = saved_errno;
}

// Loop thread, from move_ready_io when the selector reports the eventfd
// readable: resets its counter, so that it does not fire again. What was
// posted is taken by drain_threadsafe, which wake_pending_ calls for.
void Scheduler::consume_wakeup() noexcept {
    std::uint64_t count;
    while (::read(wakeup_fd_, &count, sizeof count) < 0 && errno == EINTR) {
    }
}

// Loop thread, from move_ready_io when wake_pending_ (or look_for_posts_) is set:
// the whole queue joins the ready queue in the order it was posted (one lock
// per batch, not per post) as ONE entry, kPostedBatch, in whose place
// run_batch runs them straight from posted_batch_. A post cannot be
// cancelled (no Handle), so it needs no slot: no slot allocated and freed
// per post, and a burst of posts does not grow the slot table. None runs here.
void Scheduler::drain_threadsafe() {
    look_for_posts_.store(false);
    callbacks_at_take_ = stats_.callbacks_run;
    // Sequentially consistent, not just release: dispatch_signals reads the
    // signals' pending flags after this store (see on_signal in signals.cpp).
    wake_pending_.store(false);
    const std::size_t before = posted_batch_.size();
    {
        // Chunks change hands, none is copied: the posts join what a batch
        // an exception cut short left (see run_batch), after it, and the
        // chunks the last batch emptied go back to the posters.
        std::lock_guard lock(posted_mutex_);
        posted_batch_.append(posted_);
        posted_.swap_spares(posted_batch_);
    }
    const std::size_t taken = posted_batch_.size() - before;
    posts_taken_ += taken;
    if (taken != 0) ready_.push_back(detail::kPostedBatch);
}

}  // namespace reactor
