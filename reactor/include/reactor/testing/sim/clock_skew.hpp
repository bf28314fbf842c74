// SPDX-License-Identifier: MIT
// reactor::testing::sim::ClockSkew: how far a host's clock is from its
// world's, as a function of the virtual time since the world began
// (TigerBeetle's simulator: linear, step, periodic). A host with a skew
// (Host::set_clock_skew) reads its own time: its Scheduler::now(), the
// deadlines of its timers, and its wall_clock() are the world's time plus
// the offset; a timer fires at the world's instant when the host's clock
// reaches its deadline. Off by default (Kind::none): every host reads the
// world's clock. Integer arithmetic only: the same instants on every run.
//
// A host's monotonic clock never goes back, so a model must not make it:
// a linear drift above -1000000 ppm, a forward step, a periodic offset whose
// slope (4 * amplitude / period) is below 1; Host::set_clock_skew refuses
// others (std::invalid_argument).
#pragma once

#include <cstdint>
#include <string>

#include "reactor/clock.hpp"
#include "reactor/export.hpp"

namespace reactor::testing::sim {

struct ClockSkew {
    enum class Kind {
        none,      // the world's time
        linear,    // offset + elapsed * drift_ppm / 1e6: a crystal too fast (> 0) or too slow (< 0)
        step,      // offset from `at` on, nothing before: a clock that jumps (a resumed VM)
        periodic,  // a triangle wave of `amplitude` and `period`: 0, +amplitude, 0, -amplitude, 0
    };
    Kind kind = Kind::none;
    Duration offset{};           // linear: the offset at the start; step: the jump (>= 0)
    std::int64_t drift_ppm = 0;  // linear
    Duration at{};               // step: when, in virtual time since the world began
    Duration amplitude{};        // periodic
    Duration period{};           // periodic (> 0)

    static ClockSkew linear(std::int64_t drift_ppm, Duration offset = Duration::zero()) {
        ClockSkew s;
        s.kind = Kind::linear;
        s.drift_ppm = drift_ppm;
        s.offset = offset;
        return s;
    }
    static ClockSkew step(Duration at, Duration jump) {
        ClockSkew s;
        s.kind = Kind::step;
        s.at = at;
        s.offset = jump;
        return s;
    }
    static ClockSkew periodic(Duration amplitude, Duration period) {
        ClockSkew s;
        s.kind = Kind::periodic;
        s.amplitude = amplitude;
        s.period = period;
        return s;
    }

    // The host's offset from the world's time at `elapsed` since the world began.
    REACTOR_API Duration offset_at(Duration elapsed) const noexcept;
    // Empty if the model keeps a host's clock monotonic; else why not.
    REACTOR_API std::string invalid() const;
};

// "linear +500000ppm from 0ns", for a failing seed's line.
REACTOR_API std::string to_string(const ClockSkew& skew);

}  // namespace reactor::testing::sim
