// SPDX-License-Identifier: MIT
// reactor::SchedulerOptions (also spelled Scheduler::Options): what a
// Scheduler is built with.
#pragma once

#include <chrono>
#include <memory>

#include "reactor/clock.hpp"
#include "reactor/selector.hpp"

namespace reactor {

struct SchedulerOptions {
    Backend backend = Backend::select;
    std::unique_ptr<Selector> selector;  // overrides backend when set (tests inject one)
    ClockFunction clock;                 // empty: Clock::now

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
};

}  // namespace reactor
