// SPDX-License-Identifier: MIT
// futures::retry on virtual time: the delays between attempts stay within the
// policy's bounds (and are the same for the same seed), the last error comes
// out after max_attempts, an error the predicate refuses stops at once, a
// cancelled attempt is not retried, cancelling during a backoff sleep or an
// attempt stops everything, and retry composes with with_timeout both ways.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/futures.hpp>

#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::Future;
using futures::RetryPolicy;
using reactor::Duration;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::mentions;

// An operation that fails with "attempt N" until attempt `succeed_at`, and
// records when each attempt started.
struct Flaky {
    VirtualLoop& loop;
    int succeed_at;
    std::vector<Duration> started{};
    Future<int> operator()() {
        started.push_back(loop.clock.elapsed());
        const int n = static_cast<int>(started.size());
        if (n == succeed_at) return futures::make_ready_future(loop.sched, n);
        return futures::sleep(loop.sched, 1ms).then([n]() -> int {
            throw std::runtime_error("attempt " + std::to_string(n));
        });
    }
};

RetryPolicy exact(unsigned attempts) {
    RetryPolicy p;
    p.max_attempts = attempts;
    p.initial_delay = 100ms;
    p.multiplier = 2.0;
    p.max_delay = 1s;
    p.jitter = 0.0;
    return p;
}

}  // namespace

BOOST_AUTO_TEST_CASE(exponential_delays_until_an_attempt_succeeds) {
    VirtualLoop loop(backend_under_test());
    Flaky op{loop, 3};
    Future<int> out = futures::retry(loop.sched, exact(5), std::ref(op));
    BOOST_TEST(op.started.empty());  // never inside retry()
    loop.sched.run();
    BOOST_TEST(out.result() == 3);
    // Attempt 1 at 0, fails at 1 ms; 100 ms later attempt 2 (at 101), fails at
    // 102; 200 ms later attempt 3 (at 302).
    BOOST_TEST((op.started == std::vector<Duration>{0ms, 101ms, 302ms}));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(gives_up_after_max_attempts_with_the_last_error) {
    VirtualLoop loop(backend_under_test());
    Flaky op{loop, 100};
    std::vector<unsigned> told;
    RetryPolicy policy = exact(4);
    policy.on_retry = [&](unsigned attempt, const std::exception_ptr& e, Duration) {
        told.push_back(attempt);
        BOOST_TEST(mentions(e, "attempt " + std::to_string(attempt)));
    };
    Future<int> out = futures::retry(loop.sched, policy, std::ref(op));
    loop.sched.run();
    BOOST_TEST(out.failed());
    BOOST_TEST(mentions(out.exception(), "attempt 4"));
    BOOST_TEST(op.started.size() == 4u);
    BOOST_TEST((told == std::vector<unsigned>{1, 2, 3}));
    CHECK_EMPTY(loop.sched);
}

// issue 47: on_retry's error is read without rethrowing it, and its
// parameter types are spelled out (unsigned, const ErrorView&, Duration).
BOOST_AUTO_TEST_CASE(on_retry_reads_the_error_message_without_rethrowing) {
    VirtualLoop loop(backend_under_test());
    Flaky op{loop, 3};
    std::vector<std::string> messages;
    std::vector<Duration> delays;
    RetryPolicy policy = exact(5);
    policy.on_retry = [&](unsigned attempt, const futures::ErrorView& error, reactor::Duration delay) {
        messages.push_back(std::to_string(attempt) + ": " + error.what());
        delays.push_back(delay);
        BOOST_TEST(error.as<std::runtime_error>() != nullptr);
        BOOST_TEST(error.as<futures::TimeoutError>() == nullptr);
        BOOST_TEST(static_cast<bool>(error.ptr()));
    };
    Future<int> out = futures::retry(loop.sched, policy, std::ref(op));
    loop.sched.run();
    BOOST_TEST(out.result() == 3);
    BOOST_TEST((messages == std::vector<std::string>{"1: attempt 1", "2: attempt 2"}));
    BOOST_TEST((delays == std::vector<Duration>{100ms, 200ms}));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(error_view_of_other_errors) {
    futures::ErrorView none{std::exception_ptr()};
    BOOST_TEST(std::string(none.what()) == "no error");
    BOOST_TEST(!none);
    futures::ErrorView odd{std::make_exception_ptr(42)};
    BOOST_TEST(std::string(odd.what()) == "unknown exception");
    BOOST_TEST(odd.exception() == nullptr);
    BOOST_TEST(odd.as<std::exception>() == nullptr);
    futures::ErrorView timeout{std::make_exception_ptr(futures::TimeoutError("slow"))};
    BOOST_TEST(std::string(timeout.what()) == "slow");
    BOOST_TEST(timeout.as<futures::TimeoutError>() != nullptr);
    const std::exception_ptr& back = timeout;  // what a function written for the pointer is given
    BOOST_TEST(mentions(back, "slow"));
}

// Delays in seconds as doubles (futures::from_seconds), on virtual time.
BOOST_AUTO_TEST_CASE(delays_from_seconds_as_doubles) {
    VirtualLoop loop(backend_under_test());
    Flaky op{loop, 3};
    RetryPolicy policy = exact(5);
    policy.initial_delay = futures::from_seconds(0.25, "initial_delay");
    policy.max_delay = futures::from_seconds(10.0, "max_delay");
    Future<int> out = futures::retry(loop.sched, policy, std::ref(op));
    loop.sched.run();
    BOOST_TEST(out.result() == 3);
    // 0, fails at 1 ms; 250 ms later (251) attempt 2, fails at 252; 500 ms later (752) attempt 3.
    BOOST_TEST((op.started == std::vector<Duration>{0ms, 251ms, 752ms}));
    BOOST_CHECK_EXCEPTION(policy.initial_delay = futures::from_seconds(-0.1, "initial_delay"), std::invalid_argument,
                          [](const std::invalid_argument& e) {
                              return std::string(e.what()).starts_with("initial_delay must be");
                          });
    BOOST_CHECK_THROW(policy.max_delay = futures::from_seconds(std::nan(""), "max_delay"), std::invalid_argument);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(jittered_delays_stay_within_the_bounds_and_repeat_for_a_seed) {
    auto gaps_for = [](std::uint32_t seed) {
        VirtualLoop loop(backend_under_test());
        Flaky op{loop, 100};
        RetryPolicy policy;
        policy.max_attempts = 8;
        policy.initial_delay = 100ms;
        policy.multiplier = 3.0;
        policy.max_delay = 2s;
        policy.jitter = 0.5;
        policy.random = futures::random_from_seed(seed);
        Future<int> out = futures::retry(loop.sched, policy, std::ref(op));
        loop.sched.run();
        BOOST_TEST(mentions(out.exception(), "attempt 8"));
        BOOST_TEST(op.started.size() == 8u);
        std::vector<Duration> gaps;
        for (std::size_t i = 1; i < op.started.size(); ++i) {
            gaps.push_back(op.started[i] - op.started[i - 1] - 1ms);  // minus the attempt's own 1 ms
        }
        CHECK_EMPTY(loop.sched);
        return gaps;
    };
    const std::vector<Duration> gaps = gaps_for(7);
    Duration exponential = 100ms;
    for (Duration gap : gaps) {
        const Duration bound = std::min<Duration>(exponential, 2s);
        BOOST_TEST((gap <= bound), "gap " << gap.count() << " above " << bound.count());
        BOOST_TEST((gap >= bound / 2), "gap " << gap.count() << " below half of " << bound.count());
        exponential *= 3;
    }
    BOOST_TEST((gaps_for(7) == gaps));  // the same seed, the same delays
    BOOST_TEST((gaps_for(8) != gaps));
}

BOOST_AUTO_TEST_CASE(an_error_the_predicate_refuses_stops_at_once) {
    VirtualLoop loop(backend_under_test());
    int attempts = 0;
    RetryPolicy policy = exact(5);
    policy.retry_on = [](const std::exception_ptr& e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::runtime_error&) {
            return true;
        } catch (...) {
            return false;
        }
    };
    Future<int> out = futures::retry(loop.sched, policy, [&]() -> Future<int> {
        ++attempts;
        if (attempts == 1) throw std::runtime_error("transient");  // thrown: a failed attempt, retried
        return futures::make_exception_future<int>(loop.sched, std::invalid_argument("permanent"));
    });
    loop.sched.run();
    BOOST_TEST(out.failed());
    BOOST_TEST(mentions(out.exception(), "permanent"));
    BOOST_TEST(attempts == 2);
    BOOST_TEST((loop.clock.elapsed() == 100ms));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_cancelled_attempt_is_not_retried) {
    VirtualLoop loop(backend_under_test());
    int attempts = 0;
    Future<int> out = futures::retry(loop.sched, exact(5), [&] {
        ++attempts;
        Future<int> gone(loop.sched);
        gone.cancel();
        return gone;
    });
    loop.sched.run();
    BOOST_TEST(out.cancelled());
    BOOST_TEST(attempts == 1);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_during_a_backoff_sleep) {
    VirtualLoop loop(backend_under_test());
    Flaky op{loop, 100};
    Future<int> out = futures::retry(loop.sched, exact(5), std::ref(op));
    loop.sched.call_later(50ms, [&] { out.cancel(); });  // attempt 1 failed at 1 ms; the sleep runs to 101 ms
    loop.sched.run();
    BOOST_TEST(out.cancelled());
    BOOST_TEST(op.started.size() == 1u);
    BOOST_TEST((loop.clock.elapsed() == 50ms));  // the backoff timer went with it
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_during_an_attempt_cancels_it) {
    VirtualLoop loop(backend_under_test());
    Future<void> attempt;
    Future<void> out = futures::retry(loop.sched, exact(5), [&] { return attempt = futures::sleep(loop.sched, 1s); });
    loop.sched.call_later(10ms, [&] { out.cancel(); });
    loop.sched.run();
    BOOST_TEST(out.cancelled());
    BOOST_TEST(attempt.cancelled());
    BOOST_TEST((loop.clock.elapsed() == 10ms));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_timeout_per_attempt_is_retried) {
    VirtualLoop loop(backend_under_test());
    int attempts = 0;
    Future<std::string> out = futures::retry(loop.sched, exact(5), [&] {
        ++attempts;
        const Duration takes = attempts < 3 ? Duration(10s) : Duration(10ms);
        return futures::with_timeout(futures::sleep(loop.sched, takes).then([] { return std::string("reply"); }), 1s);
    });
    loop.sched.run();
    BOOST_TEST(out.result() == "reply");
    BOOST_TEST(attempts == 3);
    // 1 s timeout, 100 ms, 1 s timeout, 200 ms, 10 ms.
    BOOST_TEST((loop.clock.elapsed() == 2310ms));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_timeout_around_the_whole_retry) {
    VirtualLoop loop(backend_under_test());
    Flaky op{loop, 100};
    Future<int> out = futures::with_timeout(futures::retry(loop.sched, exact(10), std::ref(op)), 250ms);
    loop.sched.run();
    BOOST_TEST(out.failed());
    BOOST_TEST(mentions(out.exception(), "gave up after 250 ms"));
    BOOST_TEST(op.started.size() == 2u);  // at 0 and 101 ms; the third was due at 302
    BOOST_TEST((loop.clock.elapsed() == 250ms));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(delays_are_capped_by_max_delay) {
    VirtualLoop loop(backend_under_test());
    Flaky op{loop, 100};
    RetryPolicy policy = exact(5);
    policy.multiplier = 10.0;
    policy.max_delay = 300ms;
    std::vector<Duration> delays;
    policy.on_retry = [&](unsigned, const std::exception_ptr&, Duration d) { delays.push_back(d); };
    Future<int> out = futures::retry(loop.sched, policy, std::ref(op));
    loop.sched.run();
    BOOST_TEST(mentions(out.exception(), "attempt 5"));
    BOOST_TEST((delays == std::vector<Duration>{100ms, 300ms, 300ms, 300ms}));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(bad_policies_are_refused) {
    VirtualLoop loop(backend_under_test());
    auto op = [&] { return futures::make_ready_future(loop.sched, 1); };
    auto refused = [&](auto change) {
        RetryPolicy p;
        change(p);
        BOOST_CHECK_THROW((void)futures::retry(loop.sched, p, op), std::invalid_argument);
    };
    refused([](RetryPolicy& p) { p.max_attempts = 0; });
    refused([](RetryPolicy& p) { p.initial_delay = -1ms; });
    refused([](RetryPolicy& p) { p.max_delay = 1ms; });
    refused([](RetryPolicy& p) { p.multiplier = 0.5; });
    refused([](RetryPolicy& p) { p.jitter = 1.5; });
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}
