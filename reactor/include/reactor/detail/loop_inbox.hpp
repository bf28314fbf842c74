// SPDX-License-Identifier: MIT
// reactor::detail::LoopInbox: a Scheduler's inbox, the only state of the
// loop that other threads touch (call_soon_threadsafe, try_send_home,
// refuse_posts, signals' wake-ups). It sits on cache lines of its own, so
// that a thread posting to a busy loop does not pull in the lines the loop
// writes as it runs (false sharing), and the loop's reads of wake_pending do
// not fight the posters' writes to the queue. Part of scheduler.hpp: the
// Scheduler's members (threadsafe_post.cpp) are what use it.
#pragma once

#include <atomic>
#include <cstdint>

#include "reactor/detail/adaptive_mutex.hpp"
#include "reactor/detail/posted_queue.hpp"

namespace reactor::detail {

struct LoopInbox {
    // Written by the posters, and by the loop as it takes the queue. Spins
    // before it sleeps: see adaptive_mutex.hpp. Mutable: Scheduler::empty()
    // looks at the queue.
    alignas(kCacheLine) mutable AdaptiveMutex mutex;
    PostedQueue queue;
    bool refused = false;   // under mutex (Scheduler::refuse_posts)
    bool finished = false;  // under mutex (Scheduler::finish)

    // Read at every post and every iteration, written about once per batch.
    // wake_pending: set by the first post (or signal) since the loop last
    // took the queue; cleared by the loop as it takes it (drain_threadsafe).
    alignas(kCacheLine) std::atomic<bool> wake_pending{false};
    // The loop is in (or about to enter) a selector wait that may block: only
    // then does the first post write the eventfd (wake()).
    std::atomic<bool> asleep{false};
    // The next iteration takes the queue, whatever wakes it and whatever its
    // budget (take_posts_now): a wake-up write failed (wake()), posts were
    // just refused (refuse_posts: those accepted before must run in the one
    // iteration that follows) or the loop is closing (close).
    std::atomic<bool> look_for_posts{false};
    std::atomic<std::uint64_t> wake_writes{0};  // eventfd writes made (stats().wakeup_writes)
    std::atomic<std::uint64_t> wake_failures{0};

    // Loop thread only. What the loop took from the queue, run in the place
    // of one kPostedBatch entry of the ready queue. Its spares are the
    // chunks it emptied, handed back to the queue at the next take.
    alignas(kCacheLine) PostedQueue batch;
    std::uint64_t taken = 0;  // posts the loop took from the queue (stats().posts_taken)
    // stats().callbacks_run when the queue was last taken (take_posts_now).
    std::uint64_t callbacks_at_take = 0;
};

}  // namespace reactor::detail
