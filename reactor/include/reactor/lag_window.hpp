// SPDX-License-Identifier: MIT
// reactor::LagWindow: how late the loop's recent timers fired, kept as a fixed
// ring of the last kSize latenesses, for the percentiles of Scheduler::stats().
// A fixed window, not a histogram since the start: a server that stalled an
// hour ago and is healthy now reads healthy. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "reactor/export.hpp"
#include "reactor/clock.hpp"

namespace reactor {

// Lateness percentiles over the window (nearest rank). All zero, and
// samples 0, before any timer fired.
struct LagPercentiles {
    std::size_t samples = 0;  // how many latenesses the figures below summarise
    Duration p50{}, p90{}, p99{}, max{};
};

class REACTOR_API LagWindow {
public:
    static constexpr std::size_t kSize = 512;

    // One due timer: how long after its deadline the loop moved it to the
    // ready queue. The ring is allocated on the first timer, so a loop that
    // never uses timers never pays for it.
    void record(Duration lateness) {
        if (!ring_) ring_ = std::make_unique<Duration[]>(kSize);
        ring_[next_ % kSize] = lateness;
        ++next_;
    }
    LagPercentiles percentiles() const;  // O(kSize): for stats(), not for the hot path

private:
    std::unique_ptr<Duration[]> ring_;
    std::uint64_t next_ = 0;  // latenesses recorded so far; the ring holds the last kSize
};

}  // namespace reactor
