// SPDX-License-Identifier: MIT
// futures::with_timeout: a future bounded by a delay on the loop's clock.
//
// Completes like its input if that completes in time; else fails with
// TimeoutError and cancels the input. Holds one reference to itself in the
// Scheduler's timer until it fires or is cancelled. Loop thread only.
//
// When the input is a task, cancelling it only asks it to stop (the future it
// waits on is cancelled; the task ends when it resumes): whoever receives the
// TimeoutError (a done-callback, a continuation, a task waiting on it) finds
// the task still Status::pending, and it becomes cancelled only after the loop
// runs again. Wait on the task itself to know how it ended (docs/futures.md).
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <source_location>
#include <utility>

#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/future.hpp"

namespace futures {

namespace detail {

REACTOR_API std::exception_ptr make_timeout_error(reactor::Duration delay);

// What a timeout fails with: the caller's error when it gave a maker, else
// the default TimeoutError.
using TimeoutErrorMaker = std::function<std::exception_ptr()>;

// with_timeout(fut, delay): completes like fut, or fails with TimeoutError
// when the timer fires first, and then cancels fut.
template <class T>
class TimeoutState final : public WaitingState<T> {
public:
    TimeoutState(reactor::Scheduler& sched, std::source_location where, reactor::Duration delay,
                 TimeoutErrorMaker make_error = {})
        : WaitingState<T>(sched, where, false), delay_(delay), make_error_(std::move(make_error)) {}

    void start(State<T>& inner) {
        this->link_.template connect<&TimeoutState::on_inner>(inner);
        timer_ = this->scheduler().call_later(
            delay_, [self = Ref<TimeoutState>(this)] { self->on_timeout(); }, this->origin());
    }

private:
    void on_inner(State<T>& inner) {
        timer_.cancel();
        if (this->pending()) this->finish_from(inner);
    }
    void on_timeout() {
        if (!this->pending()) return;
        this->finish_failed(make_error_ ? make_error_() : make_timeout_error(delay_));
        this->cancel_upstream();
    }
    Ref<StateBase> cancel_step(bool& accepted) override {
        if (this->pending()) timer_.cancel();
        return WaitingState<T>::cancel_step(accepted);
    }

    reactor::Handle timer_;
    reactor::Duration delay_;
    TimeoutErrorMaker make_error_;
};

}  // namespace detail

// Completes like `fut` if it completes within `delay`; otherwise fails with
// TimeoutError and cancels `fut`. Cancelling the result cancels `fut` and the timer.
// A task `fut` is still pending when the TimeoutError arrives: it is cancelled
// when it next resumes, after the loop runs again (see the top of this file).
template <class T, class Rep, class Period>
[[nodiscard]] Future<T> with_timeout(const Future<T>& fut, std::chrono::duration<Rep, Period> delay,
                                     std::source_location where = std::source_location::current()) {
    auto& inner = detail::Access::state(fut);
    auto bound = std::chrono::ceil<reactor::Duration>(delay);
    return detail::launch<detail::TimeoutState<T>>(inner.scheduler(), where, bound).start(inner);
}

// The same, failing with the error `make_error` returns when the delay
// passes (called then, so it can say what was under way): how a library
// bounds a step with its own TimeoutError, as open_connection does with
// ConnectTimeoutError.
template <class T, class Rep, class Period>
[[nodiscard]] Future<T> with_timeout(const Future<T>& fut, std::chrono::duration<Rep, Period> delay,
                                     std::function<std::exception_ptr()> make_error,
                                     std::source_location where = std::source_location::current()) {
    auto& inner = detail::Access::state(fut);
    auto bound = std::chrono::ceil<reactor::Duration>(delay);
    return detail::launch<detail::TimeoutState<T>>(inner.scheduler(), where, bound, std::move(make_error)).start(inner);
}

// Both with `delay` in seconds, as asyncio.wait_for(x, 2.5) takes it
// (reactor::from_seconds: rounded up to 1 ns; +infinity is Duration::max(),
// as good as no timeout; a negative delay or NaN throws
// std::invalid_argument naming "with_timeout: delay").
template <class T, reactor::SecondsCount S>
[[nodiscard]] Future<T> with_timeout(const Future<T>& fut, S delay,
                                     std::source_location where = std::source_location::current()) {
    return with_timeout(fut, reactor::from_seconds(static_cast<double>(delay), "with_timeout: delay"), where);
}
template <class T, reactor::SecondsCount S>
[[nodiscard]] Future<T> with_timeout(const Future<T>& fut, S delay, std::function<std::exception_ptr()> make_error,
                                     std::source_location where = std::source_location::current()) {
    return with_timeout(fut, reactor::from_seconds(static_cast<double>(delay), "with_timeout: delay"),
                        std::move(make_error), where);
}

}  // namespace futures
