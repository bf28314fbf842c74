// SPDX-License-Identifier: MIT
// A simulated host's clock: the world's virtual time plus the host's skew
// (testing/sim/clock_skew.hpp). Its Scheduler reads now() (its timers'
// deadlines are in this time), its kernel's wall_clock() too, and its
// selector asks world_time_for() when to wake the host for a deadline.
// Without a skew it is the world's clock, read for read. Shared by the
// host, its kernel and its Scheduler's clock function; kept across
// restarts (the skew is the machine's). Loop thread only.
#pragma once

#include "reactor/clock.hpp"
#include "reactor/testing/sim/clock_skew.hpp"

namespace reactor::testing::sim::detail {

class Network;

class HostClock {
public:
    explicit HostClock(const Network& network) noexcept : network_(network) {}

    void set_skew(const ClockSkew& skew) noexcept { skew_ = skew; }
    const ClockSkew& skew() const noexcept { return skew_; }

    // The host's time now: never before what it read last (a skew changed
    // mid-run may not take a monotonic clock back).
    TimePoint now() const noexcept;
    // The earliest world instant, from now on, at which the host's clock
    // reads `host_time` or later (TimePoint::max() if never).
    TimePoint world_time_for(TimePoint host_time) const noexcept;

private:
    TimePoint host_at(TimePoint world) const noexcept;

    const Network& network_;
    ClockSkew skew_;
    mutable TimePoint last_{};
};

}  // namespace reactor::testing::sim::detail
