// SPDX-License-Identifier: MIT
// Timers (call_later, call_at): never early, on the virtual clock and on the
// real one; zero, negative, past and huge delays; which time a delay counts
// from, inside and outside the loop. Their order among themselves and with
// the other phases is in test_scheduler_order.cpp, cancelling them in
// test_scheduler_cancel.cpp.
//
// Each case records what happened in a "bag", asserts exact order and counts,
// and ends by checking that the scheduler holds nothing (CHECK_EMPTY). CTest
// runs the suite once per selector backend (REACTOR_TEST_BACKEND). The loops
// run on virtual time (tests/support/virtual_time.hpp), their sleeps advancing
// the clock exactly, but for one case on the real clock, which checks only
// that no timer fires early.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::Clock;
using reactor::Duration;
using reactor::Handle;
using reactor::Scheduler;
using reactor::TimePoint;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::on;
using Bag = std::vector<std::string>;

}  // namespace

// ============================================================ timers

BOOST_AUTO_TEST_SUITE(timers)

BOOST_AUTO_TEST_CASE(timer_never_fires_before_its_deadline_virtual_clock) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int fired = 0;
    auto arm = [&](auto delay) {
        const TimePoint deadline = loop.clock.now() + std::chrono::ceil<Duration>(delay);
        s.call_later(delay, [&, deadline] {
            BOOST_TEST((s.now() >= deadline));
            BOOST_TEST((loop.clock.now() >= deadline));
            ++fired;
        });
    };
    arm(1ns);
    arm(1us);
    arm(std::chrono::duration<double, std::milli>(1.5));
    arm(std::chrono::duration<double, std::nano>(0.25));  // rounds up to 1 ns, never down to 0
    arm(7ms);
    arm(1h);
    s.run();
    BOOST_TEST(fired == 6);
    CHECK_EMPTY(s);
}

// The same with the real clock and the real select(2): select's timeout is in
// microseconds, so a loop rounding down would wake (and fire) early.
BOOST_AUTO_TEST_CASE(timer_never_fires_before_its_deadline_real_clock) {
    Scheduler s(on(backend_under_test()));
    int fired = 0;
    for (std::chrono::microseconds delay : {1500us, 3333us, 10'000us, 20'000us}) {
        const TimePoint start = Clock::now();
        s.call_later(delay, [&, start, delay] {
            BOOST_TEST((Clock::now() - start >= delay));
            BOOST_TEST((s.now() - start >= delay));
            ++fired;
        });
        s.run();
    }
    BOOST_TEST(fired == 4);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(negative_delay_counts_as_zero_and_keeps_fifo) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Bag bag;
    s.call_later(0ms, [&] { bag.push_back("zero"); });
    s.call_later(-5s, [&] {
        bag.push_back("negative");
        BOOST_TEST((s.now() == t0));
    });
    s.call_later(1ms, [&] { bag.push_back("one ms"); });
    s.run_once();
    BOOST_TEST(bag == (Bag{"zero", "negative"}), boost::test_tools::per_element());
    BOOST_TEST((loop.clock.now() == t0));  // due at once: the loop did not sleep
    s.run();
    BOOST_TEST(bag.size() == 3u);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(call_at_fires_at_the_time_point_and_past_ones_at_once) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    std::vector<std::pair<std::string, Duration>> bag;
    s.call_at(t0 + 50ms, [&] { bag.emplace_back("at 50ms", s.now() - t0); });
    s.call_at(t0 - 1h, [&] { bag.emplace_back("past", s.now() - t0); });
    s.call_at(t0, [&] { bag.emplace_back("now", s.now() - t0); });
    s.run();
    BOOST_REQUIRE(bag.size() == 3u);
    BOOST_TEST(bag[0].first == "past");  // earlier deadline first, despite its later sequence
    BOOST_TEST(bag[1].first == "now");
    BOOST_TEST(bag[2].first == "at 50ms");
    BOOST_TEST((bag[0].second == 0ms && bag[1].second == 0ms && bag[2].second == 50ms));
    CHECK_EMPTY(s);
}

// Outside the loop the cached now() may be arbitrarily old: a delay scheduled
// there counts from the clock as it is, or the timer would fire early.
BOOST_AUTO_TEST_CASE(delays_outside_the_loop_count_from_the_current_clock) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    s.call_soon([] {});
    s.run();  // the loop's cache now holds t0
    loop.clock.advance(1h);  // time passes while the loop is not running
    const TimePoint deadline = loop.clock.now() + 10ms;
    int fired = 0;
    s.call_later(10ms, [&] {
        BOOST_TEST((s.now() >= deadline));
        ++fired;
    });
    s.call_soon([] {});
    s.run_once();  // does not sleep (something is ready): counted from the stale cache, the timer would fire here
    BOOST_TEST(fired == 0);
    s.run_once();  // sleeps the remaining 10 ms
    BOOST_TEST(fired == 1);
    BOOST_TEST((loop.clock.now() == deadline));
    CHECK_EMPTY(s);
}

// Delays scheduled from a callback count from the loop's cached now(), read
// at most once per iteration (on first use), so timers armed in one batch
// share one time base.
BOOST_AUTO_TEST_CASE(delays_inside_callbacks_count_from_cached_now) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    std::vector<Duration> fired_at;
    const TimePoint t0 = loop.clock.now();
    s.call_soon([&] {
        BOOST_TEST((s.now() == t0));
        loop.clock.advance(3ms);  // the callback "takes" 3 ms; now() does not move
        BOOST_TEST((s.now() == t0));
        s.call_later(10ms, [&] { fired_at.push_back(s.now() - t0); });
    });
    s.run();
    BOOST_REQUIRE(fired_at.size() == 1u);
    // Due at t0 + 10ms, not 13ms: the delay counted from the cached now().
    // (It may fire late, by the time callbacks took; never early.)
    BOOST_TEST((fired_at[0] >= 10ms));
    BOOST_TEST((fired_at[0] <= 13ms));
    CHECK_EMPTY(s);
}

// Regression: a delay beyond the clock's range (seconds::max() as "never", a
// huge floating-point duration) used to overflow into the past and fire at once.
BOOST_AUTO_TEST_CASE(huge_delay_means_never_not_now) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int fired = 0;
    std::vector<Handle> handles;
    handles.push_back(s.call_later(std::chrono::seconds::max(), [&] { ++fired; }));
    handles.push_back(s.call_later(std::chrono::hours::max(), [&] { ++fired; }));
    handles.push_back(s.call_later(std::chrono::duration<double>(1e300), [&] { ++fired; }));
    handles.push_back(s.call_later(std::chrono::duration<double>(1e10), [&] { ++fired; }));  // 317 years: overflows ns
    int soon = 0;
    s.call_soon([&] { ++soon; });
    s.run_once();
    BOOST_TEST(soon == 1);
    BOOST_TEST(fired == 0);
    BOOST_TEST(s.timer_count() == 4u);
    for (auto& h : handles) BOOST_TEST(h.cancel());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()
