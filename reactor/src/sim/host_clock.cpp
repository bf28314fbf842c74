// SPDX-License-Identifier: MIT
// A simulated host's clock (host_clock.hpp).
#include "host_clock.hpp"

#include <algorithm>

#include "network.hpp"

namespace reactor::testing::sim::detail {

TimePoint HostClock::host_at(TimePoint world) const noexcept {
    return world + skew_.offset_at(world - VirtualClock::kStart);
}

TimePoint HostClock::now() const noexcept {
    last_ = std::max(last_, host_at(network_.now()));
    return last_;
}

// The host's clock is monotonic in world time (ClockSkew::invalid refuses
// models that are not): an exponential search for a world instant late
// enough, then a binary search for the earliest, to the nanosecond.
TimePoint HostClock::world_time_for(TimePoint host_time) const noexcept {
    const TimePoint start = network_.now();
    if (skew_.kind == ClockSkew::Kind::none) return std::max(host_time, start);
    if (host_at(start) >= host_time) return start;
    // Searched up to a century ahead (beyond, the arithmetic of a skew
    // would overflow): a deadline further off is never reached.
    constexpr Duration kHorizon = std::chrono::hours(24 * 365 * 100);
    if (host_time - host_at(start) > kHorizon) return TimePoint::max();
    Duration step = std::max(host_time - host_at(start), Duration(1));
    TimePoint high = start + step;
    while (host_at(high) < host_time) {
        if (step >= kHorizon) return TimePoint::max();
        step = std::min(step * 2, kHorizon);
        high = start + step;
    }
    TimePoint low = start;  // host_at(low) < host_time <= host_at(high)
    while (high - low > Duration(1)) {
        const TimePoint middle = low + (high - low) / 2;
        if (host_at(middle) >= host_time) {
            high = middle;
        } else {
            low = middle;
        }
    }
    return high;
}

}  // namespace reactor::testing::sim::detail
