// SPDX-License-Identifier: MIT
// The network's faults, drawn from the seed (faults.hpp).
#include "faults.hpp"

#include <algorithm>
#include <utility>

namespace reactor::testing::sim::detail {

Faults::Faults(const Params& params, Random random, TimePoint start, Note note)
    : params_(params), random_(random), note_(std::move(note)), drawn_until_(start) {}

std::optional<Faults::Break> Faults::draw_break() {
    if (!random_.percent(params_.reset_percent)) return std::nullopt;
    Break b;
    b.from = static_cast<int>(random_.below(2));
    b.after = static_cast<std::size_t>(random_.between(0, params_.max_reset_prefix));
    return b;
}

Duration Faults::draw_between(Duration low, Duration high) {
    const auto lo = static_cast<std::uint64_t>(std::max(low, Duration::zero()).count());
    const auto hi = static_cast<std::uint64_t>(std::max(high, low).count());
    return Duration(static_cast<Duration::rep>(random_.between(lo, std::max(hi, lo))));
}

// A stable period, then (with its chance) a partition, again and again
// until the schedule covers `at`. A stable period of zero would draw
// forever at one instant: it lasts at least a nanosecond.
void Faults::draw_until(TimePoint at, std::size_t hosts) {
    while (drawn_until_ <= at) {
        drawn_until_ += std::max(draw_between(params_.min_stable, params_.max_stable), Duration(1));
        if (hosts == 0 || !random_.percent(params_.partition_percent)) continue;
        Cut cut;
        cut.start = drawn_until_;
        cut.end = drawn_until_ + std::max(draw_between(params_.min_partition, params_.max_partition), Duration(1));
        cut.host = static_cast<std::size_t>(random_.below(hosts));
        if (random_.percent(params_.one_way_percent)) {
            cut.out = random_.below(2) == 0;
            cut.in = !cut.out;
        }
        drawn_until_ = cut.end;
        cuts_.push_back(cut);
        if (note_) note_(cut);
    }
}

TimePoint Faults::delivery(std::size_t from, std::size_t to, TimePoint at, TimePoint now, std::size_t hosts) {
    if (random_.percent(params_.clog_percent)) at += draw_between(Duration::zero(), params_.max_clog);
    if (params_.partition_percent == 0) return at;
    // Cuts that ended before now can cut nothing sent from now on.
    while (!cuts_.empty() && cuts_.front().end <= now) cuts_.pop_front();
    // A segment held until one cut heals may then meet the next one.
    for (bool moved = true; moved;) {
        moved = false;
        draw_until(at, hosts);
        for (const Cut& c : cuts_) {
            const bool cuts_way = (c.host == from && c.out) || (c.host == to && c.in);
            if (cuts_way && at >= c.start && at < c.end) {
                at = c.end;
                moved = true;
            }
        }
    }
    return at;
}

}  // namespace reactor::testing::sim::detail
