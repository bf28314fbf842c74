// SPDX-License-Identifier: MIT
// futures::retry: call an operation again after it fails, with exponential
// backoff and jitter, a bounded number of times (Python's tenacity/backoff,
// Seastar's retry helpers, gRPC's connection backoff).
//
//   futures::RetryPolicy policy;
//   policy.max_attempts = 5;
//   policy.initial_delay = 100ms;   // then 200 ms, 400 ms, 800 ms (times 1 - jitter * random)
//   futures::Future<Reply> reply = futures::retry(sched, policy, [&] {
//       return futures::with_timeout(ask(server), 2s);   // a TimeoutError is retried too
//   });
//
// f() returns Future<T> (the attempt); an exception f throws counts as a
// failed attempt. The first attempt is made from the loop, never inside
// retry(). After attempt n fails with an error that policy.retry_on accepts,
// and while attempts are left, the loop sleeps (futures::sleep, on the
// Scheduler's clock: virtual time in tests) for
//     d(n) = min(max_delay, initial_delay * multiplier^(n-1)) * (1 - jitter * u)
// with u = policy.random() in [0, 1) (so with jitter 0.5, d is between half
// and all of the exponential delay: never more, never less than half), then
// makes attempt n+1. The result completes like the first attempt that
// succeeds; with the last attempt's error once max_attempts attempts have
// failed; at once with the error of an attempt that retry_on refuses. A
// cancelled attempt is never retried: it cancels the result (cancel the
// result to stop; with_timeout inside f makes slow attempts fail instead).
// Cancelling the result cancels the attempt in flight or the backoff sleep,
// and f is not called again. f and the policy's functions are destroyed as
// soon as the result completes. Loop thread only.
//
// Chosen where asyncio users have no standard: jitter scales the delay down
// ("equal jitter" at 0.5, "full jitter" at 1), never up, so max_delay is a
// true bound; the default retry_on retries every error (CancelledError never
// gets there); the default random source is a std::minstd_rand seeded from
// std::random_device once per retry() call, and a test injects its own
// (random_from_seed, or any function).
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <source_location>
#include <type_traits>
#include <utility>

#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/detail/loop_state.hpp"
#include "futures/errors.hpp"
#include "futures/future.hpp"
#include "futures/leaves.hpp"

namespace futures {

// The delays are reactor::Duration (std::chrono::steady_clock::duration):
// any std::chrono duration assigns; seconds as a double go through
// futures::from_seconds (reactor/clock.hpp), which refuses a negative
// number or NaN with std::invalid_argument naming the field:
//     policy.initial_delay = futures::from_seconds(0.1, "initial_delay");
struct RetryPolicy {
    // Attempts in all, the first one included (at least 1).
    unsigned max_attempts = 3;
    // The delay before the second attempt; each next one is `multiplier` times
    // the one before, up to `max_delay`.
    reactor::Duration initial_delay = std::chrono::milliseconds(100);
    double multiplier = 2.0;  // at least 1
    reactor::Duration max_delay = std::chrono::seconds(30);
    // How much of each delay is random, in [0, 1]: the delay is scaled by
    // 1 - jitter * random(). 0: exactly the exponential delays.
    double jitter = 0.5;
    // Which errors are worth another attempt (empty: every error).
    std::function<bool(const std::exception_ptr&)> retry_on;
    // A number in [0, 1) per delay (empty: a generator seeded once per retry()).
    std::function<double()> random;
    // Told before each backoff sleep, from the loop: `attempt` is the one that
    // failed (1-based: 1 after the first attempt), `error` its error (an
    // ErrorView, futures/errors.hpp: error.what() is its message, read
    // without rethrowing; error.as<E>() the exception as an E; it converts to
    // `const std::exception_ptr&`, so a function taking that still fits),
    // `delay` the backoff chosen before attempt + 1 (reactor::Duration, i.e.
    // std::chrono::steady_clock::duration: nanoseconds). Not told after the
    // last attempt, nor for an error retry_on refuses. For logs and tests;
    // may be empty. An exception it throws ends the retry with that error.
    //     policy.on_retry = [](unsigned attempt, const futures::ErrorView& error, reactor::Duration delay) {
    //         std::cerr << "attempt " << attempt << ": " << error.what() << "; again in "
    //                   << std::chrono::duration<double>(delay).count() << " s\n";
    //     };
    std::function<void(unsigned attempt, const ErrorView& error, reactor::Duration delay)> on_retry;
};

// A random source for RetryPolicy::random that gives the same numbers for the
// same seed (a std::minstd_rand).
REACTOR_API std::function<double()> random_from_seed(std::uint32_t seed);

namespace detail {

// Checks `policy` (std::invalid_argument naming the bad field) and fills in
// the default random source.
REACTOR_API void prepare_retry_policy(RetryPolicy& policy);
// d(attempt) as the top of futures/retry.hpp says, for the attempt that failed.
REACTOR_API reactor::Duration retry_delay(const RetryPolicy& policy, unsigned failed_attempt);
// Whether the error of attempt `failed_attempt` is worth another one.
REACTOR_API bool should_retry(const RetryPolicy& policy, unsigned failed_attempt, const std::exception_ptr& error);

// Attempt, then (if it failed and should be retried) a backoff sleep, then
// attempt again, through one link: cancelling the result cancels whichever
// it waits on.
template <class F>
class RetryState final : public WaitingState<typename std::invoke_result_t<F&>::value_type> {
    using T = typename std::invoke_result_t<F&>::value_type;

public:
    RetryState(reactor::Scheduler& sched, std::source_location where, RetryPolicy&& policy, F&& f)
        : WaitingState<T>(sched, where, false), policy_(std::move(policy)), f_(std::in_place, std::move(f)) {}

    void start() { this->scheduler().call_soon(Resume<RetryState>(this), this->origin()); }

    // A queued attempt (Resume): the first one.
    void turn() { attempt(); }

private:
    void attempt() {
        if (!this->pending()) return drop_payload();
        ++attempts_;
        Future<T> next;
        try {
            next = std::invoke(*f_);
            State<T>& s = Access::state(next);  // an empty future: InvalidStateError, a failed attempt
            if (!this->pending()) {  // f cancelled the retry: what it returned goes too
                s.cancel();
                return drop_payload();
            }
            this->link_.template connect<&RetryState::on_attempt>(s);
        } catch (...) {
            failed(std::current_exception(), nullptr);
        }
    }

    void on_attempt(State<T>& s) {
        if (!this->pending()) return drop_payload();
        if (s.status() == Status::done) {
            drop_payload();
            this->finish_value(s.take_value());
        } else if (s.status() == Status::cancelled) {
            drop_payload();
            this->finish_like(s);
        } else {
            failed(s.error(), &s);
        }
    }

    // Attempt attempts_ failed with `error` (from `s`, or thrown by f).
    void failed(std::exception_ptr error, State<T>* s) {
        if (s) s->mark_retrieved();  // this loop answers for it now: retried, passed on, or replaced
        bool again = false;
        reactor::Duration delay{};
        try {
            again = should_retry(policy_, attempts_, error);
            if (again) {
                delay = retry_delay(policy_, attempts_);
                if (policy_.on_retry) policy_.on_retry(attempts_, ErrorView(error), delay);
                Future<void> pause = sleep(this->scheduler(), delay, this->origin());
                this->link_.template connect<&RetryState::on_pause>(Access::state(pause));
                return;
            }
        } catch (...) {
            error = std::current_exception();  // the policy's own function failed: that error wins
            s = nullptr;
        }
        drop_payload();
        if (s) {
            this->finish_like(*s);
        } else {
            this->finish_exception(std::move(error));
        }
    }

    void on_pause(State<void>& pause) {
        if (!this->pending()) return drop_payload();
        if (pause.status() != Status::done) {  // the Scheduler dropped the timer
            drop_payload();
            this->finish_like(pause);
            return;
        }
        attempt();
    }

    void drop_payload() noexcept {
        f_.reset();
        policy_.retry_on = nullptr;
        policy_.random = nullptr;
        policy_.on_retry = nullptr;
    }
    void destroy_payload() noexcept override { drop_payload(); }

    RetryPolicy policy_;
    std::optional<F> f_;
    unsigned attempts_ = 0;  // made so far
};

}  // namespace detail

template <class F>
[[nodiscard]] Future<typename std::invoke_result_t<std::decay_t<F>&>::value_type> retry(
    reactor::Scheduler& sched, RetryPolicy policy, F&& f,
    std::source_location where = std::source_location::current()) {
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn&>, "retry(sched, policy, f): f must be callable with no arguments");
    static_assert(is_future_v<std::invoke_result_t<Fn&>>, "retry(sched, policy, f): f must return a Future");
    detail::prepare_retry_policy(policy);
    return detail::launch<detail::RetryState<Fn>>(sched, where, std::move(policy), Fn(std::forward<F>(f))).start();
}

}  // namespace futures
