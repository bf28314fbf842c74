// SPDX-License-Identifier: MIT
// Internal: the time budget of one Selector::wait across EINTR retries, and
// the conversions to what poll/epoll accept. Shared by the poll and epoll
// backends; best effort, never early: every conversion rounds up.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <optional>

namespace reactor::detail {

using std::chrono::nanoseconds;

// The clock is read only when the timeout is finite and non-zero (an infinite
// wait or a zero-timeout poll needs no deadline: those are the two hot cases,
// an idle loop and a loop with callbacks ready), and then once: the first
// attempt waits the whole timeout, only a retry after EINTR asks what is left.
class WaitBudget {
public:
    explicit WaitBudget(std::optional<nanoseconds> timeout) : timeout_(timeout) {
        if (timeout_ && *timeout_ < nanoseconds::zero()) timeout_ = nanoseconds::zero();
        if (timeout_ && *timeout_ > nanoseconds::zero()) {
            // Saturating: a timer at the end of time must not overflow into the past.
            const auto now = std::chrono::steady_clock::now();
            deadline_ = *timeout_ >= decltype(now)::max() - now ? decltype(now)::max() : now + *timeout_;
        }
    }

    // nullopt: no limit. The first call returns the whole timeout; after an
    // interruption it is what is left, so a retried wait ends at the original
    // deadline (zero once it has passed).
    std::optional<nanoseconds> remaining() {
        if (first_ || !timeout_ || *timeout_ == nanoseconds::zero()) {
            first_ = false;
            return timeout_;
        }
        return std::max(nanoseconds(deadline_ - std::chrono::steady_clock::now()), nanoseconds::zero());
    }

private:
    std::optional<nanoseconds> timeout_;
    std::chrono::steady_clock::time_point deadline_{};
    bool first_ = true;
};

inline timespec to_timespec(nanoseconds d) {
    auto ns = std::max(d.count(), nanoseconds::rep{0});
    return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

// True if `d` fits a millisecond call exactly (zero included). Those calls
// (poll, epoll_wait) are cheaper than their timespec variants (ppoll,
// epoll_pwait2), and zero is the hot case of a busy loop.
inline bool exact_in_milliseconds(nanoseconds d) {
    return d.count() % 1'000'000 == 0 && d.count() / 1'000'000 <= INT_MAX;
}

// For the calls that take milliseconds: round up, so a 1.5 ms wait never
// returns after 1 ms and makes the loop spin until the deadline; clamp to the
// largest timeout an int can say.
inline int to_milliseconds_ceil(nanoseconds d) {
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
    return static_cast<int>(std::clamp<decltype(ms)>(ms, 0, INT_MAX));
}

}  // namespace reactor::detail
