// SPDX-License-Identifier: MIT
// Periodic timers (Scheduler::call_every): the two drift policies, cancelling,
// errors, and that ticking allocates nothing. CTest runs the suite once per
// selector backend.
//
// Every case runs on a VirtualLoop (tests/support/virtual_time.hpp): the loop's
// sleeps advance it by exactly what the loop asked for, and a "slow callback"
// is one that advances it itself. Tick times are therefore exact.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/check_empty.hpp"
#include "support/counting_new.hpp"
#include "support/virtual_time.hpp"


namespace {

using namespace std::chrono_literals;
using reactor::Duration;
using reactor::ErrorContext;
using reactor::Handle;
using reactor::Periodic;
using reactor::Scheduler;
using reactor::TimePoint;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using Times = std::vector<Duration>;  // tick times, from the start of the case

// Runs the loop until `ticks` holds n entries (every case's timer records
// into it); fails instead of spinning if the loop runs out of work.
void run_ticks(Scheduler& s, const Times& ticks, std::size_t n) {
    while (ticks.size() < n) {
        BOOST_REQUIRE(!s.empty());
        s.run_once();
    }
}

Times ms(std::initializer_list<long> values) {
    Times out;
    for (long v : values) out.push_back(std::chrono::milliseconds(v));
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fixed_rate)

BOOST_AUTO_TEST_CASE(ticks_on_the_grid_of_its_start) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Times ticks;
    Handle h = s.call_every(100ms, [&] { ticks.push_back(s.now() - t0); }, Periodic::fixed_rate);
    BOOST_TEST(s.timer_count() == 1u);
    run_ticks(s, ticks, 5);
    BOOST_TEST(ticks == ms({100, 200, 300, 400, 500}), boost::test_tools::per_element());
    BOOST_TEST(s.timer_count() == 1u);  // one timer throughout, re-armed in place
    BOOST_TEST(h.is_pending());
    BOOST_TEST(h.cancel());
    BOOST_TEST(!h.is_pending());
    BOOST_TEST(!h.cancel());
    CHECK_EMPTY(s);
}

// A slow callback does not shift the grid: the next tick keeps its time.
BOOST_AUTO_TEST_CASE(a_slow_tick_does_not_move_the_next) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Times ticks;
    Handle h = s.call_every(
        100ms,
        [&] {
            ticks.push_back(loop.clock.now() - t0);
            loop.clock.advance(30ms);
        },
        Periodic::fixed_rate);
    run_ticks(s, ticks, 4);
    BOOST_TEST(ticks == ms({100, 200, 300, 400}), boost::test_tools::per_element());
    h.cancel();
    CHECK_EMPTY(s);
}

// Missed ticks are skipped, not run in a burst: after a tick that overran two
// grid points, the next is the first grid point after it ended.
BOOST_AUTO_TEST_CASE(missed_ticks_are_skipped_not_caught_up) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Times ticks;
    Handle h = s.call_every(
        100ms,
        [&] {
            ticks.push_back(loop.clock.now() - t0);
            if (ticks.size() == 1) loop.clock.advance(250ms);  // ends at 350
        },
        Periodic::fixed_rate);
    run_ticks(s, ticks, 3);
    BOOST_TEST(ticks == ms({100, 400, 500}), boost::test_tools::per_element());
    h.cancel();
    CHECK_EMPTY(s);
}

// The loop was late (another callback blocked it), not the tick itself.
BOOST_AUTO_TEST_CASE(a_late_loop_skips_the_ticks_it_missed) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Times ticks;
    Handle h = s.call_every(100ms, [&] { ticks.push_back(loop.clock.now() - t0); }, Periodic::fixed_rate);
    s.call_later(50ms, [&] { loop.clock.advance(320ms); });  // the loop is busy until 370
    run_ticks(s, ticks, 3);
    BOOST_TEST(ticks == ms({370, 400, 500}), boost::test_tools::per_element());
    h.cancel();
    CHECK_EMPTY(s);
}

// A tick that ends exactly on a grid point has not missed it.
BOOST_AUTO_TEST_CASE(a_tick_ending_on_a_grid_point_keeps_it) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Times ticks;
    Handle h = s.call_every(
        100ms,
        [&] {
            ticks.push_back(loop.clock.now() - t0);
            if (ticks.size() == 1) loop.clock.advance(100ms);  // ends at 200
        },
        Periodic::fixed_rate);
    run_ticks(s, ticks, 3);
    BOOST_TEST(ticks == ms({100, 200, 300}), boost::test_tools::per_element());
    h.cancel();
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fixed_delay)

// Each gap is counted from the end of the previous callback.
BOOST_AUTO_TEST_CASE(counts_each_interval_from_the_end_of_the_last_tick) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Times ticks;
    Handle h = s.call_every(
        100ms,
        [&] {
            ticks.push_back(loop.clock.now() - t0);
            loop.clock.advance(30ms);
        },
        Periodic::fixed_delay);
    run_ticks(s, ticks, 4);
    BOOST_TEST(ticks == ms({100, 230, 360, 490}), boost::test_tools::per_element());
    h.cancel();
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(a_late_loop_delays_every_later_tick) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Times ticks;
    Handle h = s.call_every(100ms, [&] { ticks.push_back(loop.clock.now() - t0); }, Periodic::fixed_delay);
    s.call_later(50ms, [&] { loop.clock.advance(320ms); });
    run_ticks(s, ticks, 3);
    BOOST_TEST(ticks == ms({370, 470, 570}), boost::test_tools::per_element());
    h.cancel();
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(lifetime)

BOOST_AUTO_TEST_CASE(cancel_from_inside_its_callback_stops_it) {
    for (Periodic policy : {Periodic::fixed_rate, Periodic::fixed_delay}) {
        VirtualLoop loop(backend_under_test());
        auto& s = loop.sched;
        Times ticks;
        Handle h;
        bool cancelled = false;
        bool pending_inside = false;
        h = s.call_every(
            10ms,
            [&] {
                ticks.push_back(loop.clock.now().time_since_epoch());
                pending_inside = h.is_pending();
                if (ticks.size() == 3) cancelled = h.cancel();
            },
            policy);
        s.run();  // returns: the timer was its only work
        BOOST_TEST(ticks.size() == 3u);
        BOOST_TEST(pending_inside);  // a running periodic timer still has ticks to come
        BOOST_TEST(cancelled);
        BOOST_TEST(!h.is_pending());
        CHECK_EMPTY(s);
    }
}

BOOST_AUTO_TEST_CASE(cancel_releases_the_callback_at_once) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    auto capture = std::make_shared<int>(0);
    std::weak_ptr<int> alive = capture;
    Handle h = s.call_every(10ms, [c = std::move(capture)] {}, Periodic::fixed_rate);
    s.run_once();  // one tick
    BOOST_TEST(!alive.expired());
    BOOST_TEST(h.cancel());
    BOOST_TEST(alive.expired());
    CHECK_EMPTY(s);
}

// Cancelled by an earlier callback of the batch it is due in: it does not run.
BOOST_AUTO_TEST_CASE(cancelled_while_due_it_does_not_run) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int ticks = 0;
    Handle h;
    s.call_later(10ms, [&] { h.cancel(); });  // same deadline, scheduled first
    h = s.call_every(10ms, [&] { ++ticks; }, Periodic::fixed_rate);
    s.run();
    BOOST_TEST(ticks == 0);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(an_exception_goes_to_the_handler_and_ticking_goes_on) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    std::vector<std::string> reports;
    s.set_exception_handler([&](const ErrorContext& ctx) { reports.push_back(reactor::describe(ctx)); });
    const TimePoint t0 = loop.clock.now();
    Times ticks;
    const int line = __LINE__ + 1;
    Handle h = s.call_every(
        100ms,
        [&] {
            ticks.push_back(loop.clock.now() - t0);
            throw std::runtime_error("tick failed");
        },
        Periodic::fixed_rate);
    run_ticks(s, ticks, 3);
    BOOST_TEST(ticks == ms({100, 200, 300}), boost::test_tools::per_element());
    BOOST_REQUIRE(reports.size() == 3u);
    BOOST_TEST(reports[0].find("tick failed") != std::string::npos, reports[0]);
    BOOST_TEST(reports[0].find("test_periodic.cpp:" + std::to_string(line)) != std::string::npos, reports[0]);
    h.cancel();
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(destroying_the_scheduler_releases_it) {
    auto capture = std::make_shared<int>(0);
    std::weak_ptr<int> alive = capture;
    {
        VirtualLoop loop(backend_under_test());
        loop.sched.call_every(10ms, [c = std::move(capture)] {}, Periodic::fixed_delay);
        loop.sched.run_once();
    }
    BOOST_TEST(alive.expired());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(bad_input)

BOOST_AUTO_TEST_CASE(an_interval_that_is_not_positive_is_refused) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    BOOST_CHECK_THROW(s.call_every(0ms, [] {}, Periodic::fixed_rate), std::invalid_argument);
    BOOST_CHECK_THROW(s.call_every(-5s, [] {}, Periodic::fixed_delay), std::invalid_argument);
    BOOST_CHECK_THROW(s.call_every(std::chrono::duration<double>(-0.5), [] {}, Periodic::fixed_rate),
                      std::invalid_argument);
    BOOST_CHECK_THROW(s.call_every(std::chrono::duration<double>(std::nan("")), [] {}, Periodic::fixed_rate),
                      std::invalid_argument);
    BOOST_CHECK_THROW(s.call_every(10ms, reactor::Callback{}, Periodic::fixed_rate), std::invalid_argument);
    BOOST_CHECK_THROW(s.call_every(10ms, [] {}, static_cast<Periodic>(7)), std::invalid_argument);
    try {
        s.call_every(0ms, [] {}, Periodic::fixed_rate);
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()) == "reactor: call_every needs an interval > 0");
    }
    CHECK_EMPTY(s);
}

// A sub-tick interval rounds up to one tick; one beyond the clock's range
// means "never again" rather than overflowing into the past.
BOOST_AUTO_TEST_CASE(extreme_intervals_are_rounded_and_saturated) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Times ticks;
    Handle tiny = s.call_every(std::chrono::duration<double, std::nano>(0.25), [&] { ticks.push_back(s.now() - t0); },
                               Periodic::fixed_rate);
    run_ticks(s, ticks, 2);
    BOOST_TEST(ticks == (Times{Duration(1), Duration(2)}), boost::test_tools::per_element());
    tiny.cancel();

    int never = 0;
    Handle huge = s.call_every(std::chrono::hours::max(), [&] { ++never; }, Periodic::fixed_rate);
    Handle also_huge = s.call_every(std::chrono::duration<double>(1e300), [&] { ++never; }, Periodic::fixed_delay);
    s.call_later(1h, [] {});
    s.run_once();  // sleeps the hour, not forever and not zero
    BOOST_TEST(never == 0);
    BOOST_TEST(s.timer_count() == 2u);
    huge.cancel();
    also_huge.cancel();
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

// One slot for the timer's whole life: once the loop's queues have reached
// their working size, a thousand ticks allocate nothing.
BOOST_AUTO_TEST_CASE(ticking_allocates_nothing) {
    for (Periodic policy : {Periodic::fixed_rate, Periodic::fixed_delay}) {
        VirtualLoop loop(backend_under_test());
        auto& s = loop.sched;
        long ticks = 0;
        Handle h = s.call_every(1ms, [&ticks] { ++ticks; }, policy);
        for (int i = 0; i < 10; ++i) s.run_once();  // warm-up
        const std::size_t before = reactor_test::allocation_count;
        for (int i = 0; i < 1000; ++i) s.run_once();
        const std::size_t allocated = reactor_test::allocation_count - before;
        BOOST_TEST(allocated == 0u);
        BOOST_TEST(ticks == 1010);
        BOOST_TEST(s.timer_count() == 1u);
        h.cancel();
        CHECK_EMPTY(s);
    }
}
