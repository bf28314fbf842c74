// SPDX-License-Identifier: MIT
// A host's clock offset from its world's (testing/sim/clock_skew.hpp).
#include "reactor/testing/sim/clock_skew.hpp"

#include <fmt/format.h>

namespace reactor::testing::sim {

namespace {
// Products of nanosecond counts overflow 64 bits within days.
__extension__ using Wide = __int128;

// Rounded down, negative values too (C++'s / rounds toward zero): a slow
// clock's offset is a whole nanosecond further back, never ahead.
Wide floor_div(Wide a, Wide b) { return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0); }
}  // namespace

Duration ClockSkew::offset_at(Duration elapsed) const noexcept {
    switch (kind) {
    case Kind::none: return Duration::zero();
    case Kind::linear: {
        const Wide drift = floor_div(static_cast<Wide>(elapsed.count()) * drift_ppm, 1'000'000);
        return offset + Duration(static_cast<Duration::rep>(drift));
    }
    case Kind::step: return elapsed >= at ? offset : Duration::zero();
    case Kind::periodic: {
        if (period <= Duration::zero()) return Duration::zero();
        // A triangle wave: up a quarter period to +amplitude, down half a
        // period to -amplitude, up the last quarter to 0.
        const Wide p = period.count();
        const Wide phase = static_cast<Wide>(elapsed.count()) % p;
        const Wide a = amplitude.count();
        Wide value;
        if (4 * phase < p) {
            value = floor_div(4 * a * phase, p);
        } else if (4 * phase < 3 * p) {
            value = 2 * a - floor_div(4 * a * phase, p);
        } else {
            value = floor_div(4 * a * phase, p) - 4 * a;
        }
        return Duration(static_cast<Duration::rep>(value));
    }
    }
    return Duration::zero();
}

std::string ClockSkew::invalid() const {
    switch (kind) {
    case Kind::none: return {};
    case Kind::linear:
        return drift_ppm > -1'000'000 ? std::string{} : "a linear drift of -1000000 ppm or less stops the clock";
    case Kind::step:
        return offset >= Duration::zero() ? std::string{} : "a step back would take a monotonic clock back";
    case Kind::periodic:
        if (period <= Duration::zero()) return "a periodic skew needs a period above zero";
        if (amplitude < Duration::zero()) return "a periodic skew needs an amplitude of zero or more";
        return 4 * static_cast<Wide>(amplitude.count()) < period.count()
                   ? std::string{}
                   : "a periodic skew needs 4 * amplitude < period, or the clock goes back";
    }
    return {};
}

std::string to_string(const ClockSkew& s) {
    switch (s.kind) {
    case ClockSkew::Kind::none: return "none";
    case ClockSkew::Kind::linear: return fmt::format("linear {:+}ppm from {}ns", s.drift_ppm, s.offset.count());
    case ClockSkew::Kind::step: return fmt::format("step +{}ns at {}ns", s.offset.count(), s.at.count());
    case ClockSkew::Kind::periodic:
        return fmt::format("periodic +-{}ns every {}ns", s.amplitude.count(), s.period.count());
    }
    return "?";
}

}  // namespace reactor::testing::sim
