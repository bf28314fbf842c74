// SPDX-License-Identifier: MIT
// reactor::testing::VirtualClock: the loop's time in a test, moved only by the
// test or by the driver (VirtualSelector jumps it to the next deadline).
//
// Give its function() to Scheduler::Options::clock and the Scheduler's now(),
// its timers, run_for and every layer above them (connection deadlines,
// futures' with_timeout) run on virtual time. The clock never moves by
// itself: a callback that "takes" 3 ms says so with advance(3ms). Loop thread
// only; it must outlive the Scheduler that reads it (VirtualLoop declares them
// in that order).
#pragma once

#include <chrono>
#include <stdexcept>

#include "reactor/clock.hpp"

namespace reactor::testing {

class VirtualClock {
public:
    // Far from the epoch, so that "now - something" in the code under test
    // never underflows; the same start every run, so traces are comparable.
    static constexpr TimePoint kStart = TimePoint{} + std::chrono::hours(1000);

    TimePoint now() const noexcept { return now_; }
    // Virtual time since this clock was created.
    Duration elapsed() const noexcept { return now_ - kStart; }

    // Moves time forward by `d` (zero is allowed). The clock must stay
    // monotonic, as the Scheduler requires: a negative `d` throws
    // std::invalid_argument and changes nothing.
    void advance(Duration d) {
        if (d < Duration::zero()) throw std::invalid_argument("VirtualClock: cannot advance by a negative duration");
        now_ = detail::saturating_add(now_, d);
    }
    // Moves time forward to `t`; a `t` earlier than now() throws
    // std::invalid_argument and changes nothing.
    void advance_to(TimePoint t) {
        if (t < now_) throw std::invalid_argument("VirtualClock: cannot go back in time");
        now_ = t;
    }

    // For Scheduler::Options::clock. Captures `this`: keep the clock alive.
    ClockFunction function() {
        return [this] { return now_; };
    }

private:
    TimePoint now_ = kStart;
};

}  // namespace reactor::testing
