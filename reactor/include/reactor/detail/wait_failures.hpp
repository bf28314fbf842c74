// SPDX-License-Identifier: MIT
// reactor::detail::WaitFailures: a Scheduler's record of its selector's wait
// failing (src/loop/wait_failures.cpp says what the loop does about it): the
// error, how many times in a row it came, and the rate limit of its reports.
// Part of scheduler.hpp; not API.
#pragma once

#include <cstdint>

#include "reactor/clock.hpp"

namespace reactor::detail {

struct WaitFailures {
    int error = 0;
    unsigned in_row = 0;
    TimePoint reported_at{};
    std::uint64_t reports_left_out = 0;
};

}  // namespace reactor::detail
