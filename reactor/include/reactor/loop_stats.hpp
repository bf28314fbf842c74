// SPDX-License-Identifier: MIT
// reactor::LoopStats: what Scheduler::stats() returns, a snapshot of the loop
// as plain data (counters, what is pending now, timings, loop lag), and
// format_stats() to print one as a block of lines (the example servers do on
// SIGUSR1).
//
// What costs what: the counters and the lag window are always kept (an
// increment per iteration and per callback, a store per due timer: the clock
// is read for due timers anyway). The timings need two clock reads around
// every wait and one after every callback, so they are kept in debug mode
// only (Scheduler::Options::debug or REACTOR_DEBUG=1); `timed` says whether
// they were.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "reactor/export.hpp"
#include "reactor/clock.hpp"
#include "reactor/lag_window.hpp"

namespace reactor {

struct LoopStats {
    // ---- since the Scheduler was constructed, always counted ----
    std::uint64_t iterations = 0;      // loop iterations (run_once() is one; run() many)
    std::uint64_t callbacks_run = 0;   // user callbacks invoked (waiters, timers, posts, signal handlers)
    std::uint64_t timers_fired = 0;    // timers that fell due (periodic ones once per tick)
    std::uint64_t io_events = 0;       // fd readiness events that made a waiter ready
    std::uint64_t selector_waits = 0;  // calls into the selector (skipped when there is nothing to poll)
    // Failures the loop survived (docs/faults.md): selector waits that failed
    // and were retried, and wake-up writes (call_soon_threadsafe, signals)
    // that failed and were made good at the next iteration.
    std::uint64_t selector_failures = 0;
    std::uint64_t wakeup_failures = 0;
    // Posts from other threads (call_soon_threadsafe) the loop took, and the
    // eventfd writes that woke it (posts and signals): a write is made only
    // when the loop is asleep in its selector and nobody has written since it
    // last took the queue, so on a busy loop it is a small fraction of the posts.
    std::uint64_t posts_taken = 0;
    std::uint64_t wakeup_writes = 0;

    // ---- pending when the snapshot was taken ----
    std::size_t ready = 0;            // live callbacks in the ready queue
    std::size_t timers = 0;           // armed timers (periodic ones included)
    std::size_t readers = 0;          // fds watched for reading (a waiter, or their owner's watch)
    std::size_t writers = 0;          // fds watched for writing
    std::size_t posted = 0;           // call_soon_threadsafe posts not yet taken by the loop
    std::size_t signal_handlers = 0;  // registered signal handlers

    // ---- loop lag: how late the last LagWindow::kSize timers fired, always kept ----
    LagPercentiles lag;

    // ---- debug mode only (zero otherwise) ----
    bool timed = false;                // debug mode was on: the figures below were measured
    Duration selector_time{};          // blocked in (or polling) the selector
    Duration callback_time{};          // running callbacks (with the loop's bookkeeping between them)
    std::uint64_t slow_callbacks = 0;  // reported: over Options::slow_callback_threshold
    Duration slowest_callback{};
    std::uint64_t late_timers = 0;     // timers over Options::timer_lateness_threshold (each counted)
    std::uint64_t wrong_thread_calls = 0;  // loop-thread-only members refused on another thread
};

// The snapshot as lines, each starting with `prefix` (e.g. "echo_server: ")
// and ending with '\n':
//   loop: 120 iterations, 345 callbacks run, 12 timers fired, 200 fd events, 118 selector waits
//   loop failures survived: 2 selector waits, 1 wake-up write   (only when there were any)
//   loop pending: 0 ready, 2 timers, 5 readers, 0 writers, 0 posted, 3 signal handlers
//   loop posts from other threads: 1000 taken, 3 wake-up writes   (only when some were taken)
//   loop lag over the last 12 timers: p50 0.1 ms, p90 0.3 ms, p99 1.1 ms, max 1.1 ms
//   loop time: 1.234 s in the selector, 0.056 s in callbacks; 0 slow callbacks, 0 late timers, ...
// (the last line says "not measured" outside debug mode).
REACTOR_API std::string format_stats(const LoopStats& stats, std::string_view prefix = {});

}  // namespace reactor
