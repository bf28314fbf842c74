// SPDX-License-Identifier: MIT
// reactor::from_seconds: a double number of seconds as the loop's Duration.
#include "reactor/clock.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace reactor {

Duration from_seconds(double seconds, std::string_view what) {
    if (std::isnan(seconds) || seconds < 0.0) {
        throw std::invalid_argument(fmt::format("{} must be a number of seconds >= 0, not {}", what, seconds));
    }
    using Ticks = std::chrono::duration<long double, Duration::period>;
    const long double exact =
        std::chrono::duration_cast<Ticks>(std::chrono::duration<long double>(static_cast<long double>(seconds))).count();
    // Up to the next tick, except for the double's own representation error:
    // 0.1 is 0.1000000000000000055 and means 100 ms, not 100 ms + 1 ns.
    const long double nearest = std::round(exact);
    const long double ticks =
        std::fabs(exact - nearest) <= nearest * 0x1p-52L ? nearest : std::ceil(exact);
    // Also +infinity: as long as the clock can wait.
    if (ticks >= static_cast<long double>(Duration::max().count())) return Duration::max();
    return Duration(static_cast<Duration::rep>(ticks));
}

}  // namespace reactor
