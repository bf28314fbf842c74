// SPDX-License-Identifier: MIT
// reactor::Periodic: how a periodic timer (Scheduler::call_every) keeps time.
#pragma once

#include <cstdint>

namespace reactor {

// How a periodic timer keeps time when a tick runs late (the loop was busy,
// or the callback itself was slow).
enum class Periodic : std::uint8_t {
    // Ticks stay on the grid start + k * interval, where start is when
    // call_every was called: a late tick does not move the ones after it.
    // Missed ticks are skipped, never run in a burst to catch up: after each
    // tick the next one is the first grid point not yet past when its
    // callback returned. A counter of elapsed intervals must therefore read
    // the clock, not count calls.
    fixed_rate,
    // Each tick is due `interval` after the previous tick's callback returned:
    // the gap between ticks never shrinks, and lateness adds up.
    fixed_delay,
};

}  // namespace reactor
