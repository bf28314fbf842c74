// SPDX-License-Identifier: MIT
// The network's faults (Params, "Faults"): which connections break after a
// prefix, which connects are refused, which segments a clogged link holds
// back, and when a host is cut off by a partition and when it heals. All
// drawn from one stream of the seed that nothing else draws from, and only
// when the fault's rate is not zero: a world with faults off draws exactly
// what it drew before faults existed.
//
// Partitions are a schedule of time, not events on the heap: the periods
// are drawn lazily, as far as the latest time asked about, so a world with
// partitions on still goes idle when its hosts have nothing to do (an
// event every period would keep it busy forever). Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "reactor/clock.hpp"
#include "reactor/testing/sim/params.hpp"
#include "reactor/testing/sim/random.hpp"

namespace reactor::testing::sim::detail {

class Faults {
public:
    // A partition as drawn: `host` cut off from [start, end), its sending
    // (out) or its receiving (in) or both.
    struct Cut {
        TimePoint start;
        TimePoint end;
        std::size_t host = 0;
        bool out = true;
        bool in = true;
    };
    // Told of each partition when it is drawn, for the trace.
    using Note = std::function<void(const Cut&)>;

    Faults(const Params& params, Random random, TimePoint start, Note note);

    // A connection that breaks: after `after` bytes from side `from`.
    struct Break {
        int from = 0;
        std::size_t after = 0;
    };
    std::optional<Break> draw_break();
    bool draw_refusal() { return random_.percent(params_.refuse_percent); }

    // When a segment from host `from` to host `to` that would arrive at `at`
    // does arrive: later if it is clogged, at a partition's end if one cuts
    // the way then. `hosts` is how many hosts the world has now (a
    // partition's victim is drawn among them).
    TimePoint delivery(std::size_t from, std::size_t to, TimePoint at, TimePoint now, std::size_t hosts);

private:
    void draw_until(TimePoint at, std::size_t hosts);  // the schedule covers `at`
    Duration draw_between(Duration low, Duration high);

    Params params_;
    Random random_;
    Note note_;
    TimePoint drawn_until_;   // the partition schedule is drawn up to here
    std::deque<Cut> cuts_;    // drawn, not yet over (older are dropped)
};

}  // namespace reactor::testing::sim::detail
