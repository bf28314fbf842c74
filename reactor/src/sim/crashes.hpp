// SPDX-License-Identifier: MIT
// Host crashes drawn from the seed (Params::crash_percent): when a crash
// may happen, which host crashes, and for how long it stays down. One stream
// of the seed that nothing else draws from, drawn only when crashes are on:
// a world without them draws, and traces, what it did before they existed.
//
// The chances are a schedule of time, drawn lazily, not events on the heap:
// a world whose hosts have nothing left to do still goes idle (an event per
// chance would keep it busy forever). The World asks next() before it moves
// time on and, at a chance, draw() among the hosts that may crash.
// Loop thread only.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "reactor/clock.hpp"
#include "reactor/testing/sim/params.hpp"
#include "reactor/testing/sim/random.hpp"

namespace reactor::testing::sim::detail {

class Crashes {
public:
    Crashes(const Params& params, Random random, TimePoint start)
        : params_(params), random_(random), next_(start) {}

    bool on() const noexcept { return params_.crash_percent > 0; }
    // The next chance, drawn on first ask after the last one was taken
    // (crashes on only).
    TimePoint next();

    struct Crash {
        std::size_t host = 0;  // an entry of `candidates`
        Duration downtime{};
    };
    // The chance at next() is taken: with crash_percent, one of `candidates`
    // (drawn uniformly) crashes for a downtime drawn in [min, max]. None when
    // `candidates` is empty (nothing is drawn then but the chance itself).
    std::optional<Crash> draw(const std::vector<std::size_t>& candidates);

private:
    Duration draw_between(Duration low, Duration high);

    Params params_;
    Random random_;
    TimePoint next_;
    bool drawn_ = false;  // next_ is a drawn chance not yet taken
};

}  // namespace reactor::testing::sim::detail
