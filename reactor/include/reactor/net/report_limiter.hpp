// SPDX-License-Identifier: MIT
// reactor::ReportLimiter: rate limit for a report that can repeat without end. A listener out of fds
// fails an accept every accept_pause for as long as the shortage lasts; one
// line each time would bury everything else in the log. So the first
// occurrence is reported, then at most one per interval, which says how many
// were left out since the previous report; and when the trouble ends, the
// count not yet mentioned is reported once (see Listener::on_readable).
// Plain data on the loop thread; the caller passes the loop's now().
#pragma once

#include <cstdint>

#include "reactor/scheduler.hpp"

namespace reactor {

class ReportLimiter {
public:
    explicit ReportLimiter(Duration interval) : interval_(interval) {}

    // One occurrence at `now`: true if it is to be reported, with
    // `left_out` = the occurrences not reported since the previous report.
    bool admit(TimePoint now, std::uint64_t& left_out) {
        if (reported_once_ && now - last_report_ < interval_) {
            ++left_out_;
            return false;
        }
        reported_once_ = true;
        last_report_ = now;
        left_out = left_out_;
        left_out_ = 0;
        return true;
    }

    // Occurrences left out and not yet mentioned; resets the count.
    std::uint64_t take_left_out() noexcept {
        std::uint64_t n = left_out_;
        left_out_ = 0;
        return n;
    }

private:
    Duration interval_;
    TimePoint last_report_{};
    bool reported_once_ = false;
    std::uint64_t left_out_ = 0;
};

}  // namespace reactor
