// SPDX-License-Identifier: MIT
// The selector's wait failing: a transient failure (the kernel short of
// memory, say) is reported and retried after a pause, so a server rides it
// out; a persistent one, or one that says the loop's own state is broken,
// ends the run with a clear std::system_error. The rule is stated with
// Scheduler::kWaitFailureLimit; docs/faults.md has the table. Loop thread only.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "reactor/scheduler.hpp"

namespace reactor {
namespace {

// The first retry comes after 1 ms, each next one after twice as long, up to
// 100 ms: a pause long enough not to spin on a kernel that keeps saying no,
// short enough that a server answers again soon after it recovers.
constexpr std::chrono::milliseconds kFirstPause{1};
constexpr std::chrono::milliseconds kLongestPause{100};
// A transient failure is reported at once, then at most once per interval.
constexpr std::chrono::seconds kReportInterval{1};

// The loop's own state is broken (a closed or bad epoll fd, a bad argument):
// retrying cannot help.
bool broken(const std::error_code& code) {
    if (code.category() != std::generic_category() && code.category() != std::system_category()) return false;
    return code.value() == EBADF || code.value() == EINVAL || code.value() == EFAULT;
}

}  // namespace

void Scheduler::wait_in_selector(std::optional<std::chrono::nanoseconds> timeout) {
    try {
        selector_->wait(timeout, events_);
        wait_failures_.in_row = 0;
    } catch (const std::system_error& failure) {
        on_wait_failure(failure);
    }
}

void Scheduler::on_wait_failure(const std::system_error& failure) {
    ++stats_.selector_failures;
    const int error = failure.code().value();
    if (error != wait_failures_.error) wait_failures_.in_row = 0;
    wait_failures_.error = error;
    ++wait_failures_.in_row;
    if (broken(failure.code()) || wait_failures_.in_row >= kWaitFailureLimit) {
        const unsigned times = std::exchange(wait_failures_.in_row, 0);
        // std::system_error appends ": <the error's message>" itself.
        std::string call = failure.what();
        if (const std::string suffix = ": " + failure.code().message(); call.ends_with(suffix))
            call.resize(call.size() - suffix.size());
        throw std::system_error(failure.code(),
                                times == 1 ? fmt::format("reactor: {} backend: {}", selector_->name(), call)
                                           : fmt::format("reactor: {} backend: {} failed {} times in a row",
                                                         selector_->name(), call, times));
    }
    const auto pause = std::min<std::chrono::nanoseconds>(
        kFirstPause * (1u << std::min(wait_failures_.in_row - 1, 10u)), kLongestPause);
    const TimePoint t = read_clock();
    if (wait_failures_.in_row == 1 || t - wait_failures_.reported_at >= kReportInterval) {
        ErrorContext ctx;
        ctx.message = fmt::format("{} backend: {}; retrying in {} ms", selector_->name(), failure.what(),
                                  std::chrono::duration_cast<std::chrono::milliseconds>(pause).count());
        if (wait_failures_.reports_left_out != 0)
            ctx.message += fmt::format(" ({} more failures since the last report)", wait_failures_.reports_left_out);
        wait_failures_.reports_left_out = 0;
        wait_failures_.reported_at = t;
        call_exception_handler(ctx);
    } else {
        ++wait_failures_.reports_left_out;
    }
    // Nothing to wait with: sleep instead, the whole pause even when work is
    // ready (timers may then run up to a pause late), so that giving up takes
    // the same time, about a second, however busy the loop. What became
    // ready meanwhile is found by the next wait.
    std::this_thread::sleep_for(pause);
}

}  // namespace reactor
