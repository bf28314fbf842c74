// SPDX-License-Identifier: MIT
// reactor::SchedulerOptions (also spelled Scheduler::Options): what a
// Scheduler is built with. Copyable, so one set of options can build several
// Schedulers (`Scheduler sched(opts)`, a loop per thread).
#pragma once

#include <chrono>
#include <concepts>
#include <cstddef>
#include <memory>
#include <stdexcept>

#include "reactor/clock.hpp"
#include "reactor/kernel.hpp"
#include "reactor/selector.hpp"

namespace reactor {

// One selector instance handed to a Scheduler through its options (tests
// inject a recording or virtual one). Copies of the options share it, and the
// first Scheduler built takes it: a second one built from a copy would share
// its selector, so it throws std::logic_error instead.
class SelectorHandoff {
public:
    SelectorHandoff() = default;
    SelectorHandoff(std::nullptr_t) noexcept {}
    template <class S>
        requires std::derived_from<S, Selector>
    SelectorHandoff(std::unique_ptr<S> selector)
        : slot_(selector ? std::make_shared<std::unique_ptr<Selector>>(std::move(selector)) : nullptr) {}

    explicit operator bool() const noexcept { return slot_ != nullptr; }
    std::unique_ptr<Selector> take() {
        if (!*slot_) throw std::logic_error("SchedulerOptions::selector: already taken by another Scheduler");
        return std::move(*slot_);
    }

private:
    std::shared_ptr<std::unique_ptr<Selector>> slot_;
};

struct SchedulerOptions {
    Backend backend = Backend::select;
    SelectorHandoff selector;  // overrides backend when set (see SelectorHandoff)
    ClockFunction clock;                 // empty: Clock::now
    // The system calls of this loop's sockets (reactor/kernel.hpp): null,
    // the default, is the C library's, called directly. A simulated host's
    // kernel, or a test's recording one. Copies of the options share it;
    // every Scheduler built with it must run on one thread (a kernel is
    // loop-thread only), and it lives as long as the last of them.
    std::shared_ptr<Kernel> kernel;

    // Debug mode (docs/debugging.md): off by default, and on when `debug`
    // is true or the environment has REACTOR_DEBUG set to anything but ""
    // or "0" (read once, by the constructor). When on, the loop reports
    // through the exception handler, one line each: a callback that ran
    // longer than slow_callback_threshold (with the line that scheduled
    // it), timers that fired more than timer_lateness_threshold after
    // their deadline (one line per iteration, naming the latest), and a
    // loop-thread-only member called from another thread while the loop
    // runs (refused: it throws std::logic_error and changes nothing);
    // stats() then has timings too. A negative threshold throws
    // std::invalid_argument from the constructor.
    bool debug = false;
    Duration slow_callback_threshold = std::chrono::milliseconds(100);
    Duration timer_lateness_threshold = std::chrono::milliseconds(100);
    // The longest the loop sleeps in its selector without looking for posts
    // and signals. A post from another thread or a signal wakes a sleeping
    // loop by writing its eventfd; should that write fail (docs/faults.md),
    // what it announced is taken at the latest when this much time has
    // passed, rather than whenever something else wakes the loop. An idle
    // loop therefore wakes this often (one system call, nothing run).
    // Zero: it sleeps as long as its timers allow, and a failed wake-up is
    // made good at the next post, signal or I/O event. Only on the real
    // clock: a loop given `clock` sleeps as its timers say. A negative value
    // throws std::invalid_argument from the constructor.
    Duration wakeup_recheck_interval = std::chrono::seconds(1);
};

}  // namespace reactor
