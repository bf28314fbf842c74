// SPDX-License-Identifier: MIT
// Host crashes drawn from the seed (crashes.hpp).
#include "crashes.hpp"

#include <algorithm>
#include <cstdint>

namespace reactor::testing::sim::detail {

Duration Crashes::draw_between(Duration low, Duration high) {
    const auto lo = static_cast<std::uint64_t>(std::max(low, Duration::zero()).count());
    const auto hi = static_cast<std::uint64_t>(std::max(high, low).count());
    return Duration(static_cast<Duration::rep>(random_.between(lo, std::max(hi, lo))));
}

// A gap of zero would offer chances forever at one instant: at least a nanosecond.
TimePoint Crashes::next() {
    if (!drawn_) {
        next_ += std::max(draw_between(params_.min_crash_gap, params_.max_crash_gap), Duration(1));
        drawn_ = true;
    }
    return next_;
}

std::optional<Crashes::Crash> Crashes::draw(const std::vector<std::size_t>& candidates) {
    drawn_ = false;
    if (!random_.percent(params_.crash_percent) || candidates.empty()) return std::nullopt;
    Crash c;
    c.host = candidates[static_cast<std::size_t>(random_.below(candidates.size()))];
    c.downtime = std::max(draw_between(params_.min_downtime, params_.max_downtime), Duration(1));
    return c;
}

}  // namespace reactor::testing::sim::detail
