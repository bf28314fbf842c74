// SPDX-License-Identifier: MIT
// Scheduler::stats(): the loop as data. The counters are kept as the loop
// runs (iteration.cpp); this adds what is pending now and the lag
// percentiles, and formats a snapshot as lines. Loop thread only.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "reactor/scheduler.hpp"

namespace reactor {
namespace {

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// Nearest rank: the smallest sample with at least p% of the samples at or
// below it. `sorted` is sorted and not empty.
Duration rank(const std::vector<Duration>& sorted, unsigned percent) {
    const std::size_t n = sorted.size();
    const std::size_t r = (n * percent + 99) / 100;  // ceil(n * p / 100), at least 1 for n >= 1
    return sorted[std::max<std::size_t>(r, 1) - 1];
}

}  // namespace

LagPercentiles LagWindow::percentiles() const {
    LagPercentiles out;
    if (next_ == 0) return out;
    const std::size_t n = next_ < kSize ? static_cast<std::size_t>(next_) : kSize;
    std::vector<Duration> sorted(ring_.get(), ring_.get() + n);
    std::sort(sorted.begin(), sorted.end());
    out.samples = n;
    out.p50 = rank(sorted, 50);
    out.p90 = rank(sorted, 90);
    out.p99 = rank(sorted, 99);
    out.max = sorted.back();
    return out;
}

LoopStats Scheduler::stats() const {
    LoopStats s = stats_;
    s.ready = ready_count();
    s.timers = timers_.live;
    for (std::size_t fd = 0; fd < fds_.waiting.size(); ++fd) {
        const FdWaiters& w = fds_.waiting[fd];
        const FdCallbacks c = fds_.callbacks_of(static_cast<int>(fd));
        if (live(c.read) || wants(w.watched, Interest::read)) ++s.readers;
        if (live(c.write) || wants(w.watched, Interest::write)) ++s.writers;
    }
    {
        std::lock_guard lock(inbox_.mutex);
        s.posted = inbox_.queue.size();
    }
    s.signal_handlers = signal_handlers_;
    s.lag = lag_.percentiles();
    s.timed = debug_.on;
    s.wrong_thread_calls = debug_.wrong_thread_calls.load(std::memory_order_relaxed);
    s.wakeup_failures = inbox_.wake_failures.load(std::memory_order_relaxed);
    s.wakeup_writes = inbox_.wake_writes.load(std::memory_order_relaxed);
    s.posts_taken = inbox_.taken;
    return s;
}

std::string format_stats(const LoopStats& s, std::string_view prefix) {
    std::string out;
    out += fmt::format("{}loop: {} iterations, {} callbacks run, {} timers fired, {} fd events, {} selector waits\n",
                       prefix, s.iterations, s.callbacks_run, s.timers_fired, s.io_events, s.selector_waits);
    if (s.selector_failures != 0 || s.wakeup_failures != 0) {
        out += fmt::format("{}loop failures survived: {} selector waits, {} wake-up writes\n", prefix,
                           s.selector_failures, s.wakeup_failures);
    }
    out += fmt::format("{}loop pending: {} ready, {} timers, {} readers, {} writers, {} posted, {} signal handlers\n",
                       prefix, s.ready, s.timers, s.readers, s.writers, s.posted, s.signal_handlers);
    if (s.posts_taken != 0) {
        out += fmt::format("{}loop posts from other threads: {} taken, {} wake-up writes\n", prefix, s.posts_taken,
                           s.wakeup_writes);
    }
    if (s.lag.samples == 0) {
        out += fmt::format("{}loop lag: no timer has fired yet\n", prefix);
    } else {
        out += fmt::format("{}loop lag over the last {} timers: p50 {:.1f} ms, p90 {:.1f} ms, p99 {:.1f} ms, "
                           "max {:.1f} ms\n",
                           prefix, s.lag.samples, ms(s.lag.p50), ms(s.lag.p90), ms(s.lag.p99), ms(s.lag.max));
    }
    if (!s.timed) {
        out += fmt::format("{}loop time: not measured (debug mode is off; REACTOR_DEBUG=1 turns it on)\n", prefix);
    } else {
        out += fmt::format("{}loop time: {:.3f} s in the selector, {:.3f} s in callbacks; {} slow callbacks "
                           "(slowest {:.1f} ms), {} late timers, {} wrong-thread calls\n",
                           prefix, seconds(s.selector_time), seconds(s.callback_time), s.slow_callbacks,
                           ms(s.slowest_callback), s.late_timers, s.wrong_thread_calls);
    }
    return out;
}

}  // namespace reactor
