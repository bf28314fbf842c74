// SPDX-License-Identifier: MIT
// Scheduler::run_for: a run bounded by the loop's clock. CTest runs the suite
// once per selector backend. Every case runs on virtual time, so "the loop
// slept until the bound" is an exact statement about the clock and the
// timeouts the loop asked its selector for.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <chrono>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/check_empty.hpp"
#include "support/fds.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::Duration;
using reactor::Handle;
using reactor::Periodic;
using reactor::RunStatus;
using reactor::TimePoint;
using reactor::testing::VirtualLoop;
using reactor_test::TimeoutRecordingLoop;
using reactor_test::backend_under_test;
using reactor_test::Pipe;
using Bag = std::vector<std::string>;

}  // namespace

// Boost.Test names a RunStatus in failure messages (found by ADL).
namespace reactor {
inline std::ostream& boost_test_print_type(std::ostream& os, RunStatus status) {
    switch (status) {
    case RunStatus::idle: return os << "idle";
    case RunStatus::timed_out: return os << "timed_out";
    case RunStatus::stopped: return os << "stopped";
    }
    return os << "?";
}
}  // namespace reactor

BOOST_AUTO_TEST_CASE(with_no_work_it_returns_idle_at_once) {
    TimeoutRecordingLoop loop(backend_under_test());
    const TimePoint t0 = loop.clock.now();
    BOOST_TEST(loop.sched.run_for(1h) == RunStatus::idle);
    BOOST_TEST((loop.clock.now() == t0));
    BOOST_TEST(loop.selector->timeouts.empty());
    CHECK_EMPTY(loop.sched);
}

// Timers inside the window run; the loop then sleeps to the bound, not to the
// next timer, and what is left stays scheduled for the next run.
BOOST_AUTO_TEST_CASE(runs_the_timers_inside_the_window_and_sleeps_to_its_end) {
    TimeoutRecordingLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Bag bag;
    s.call_later(10ms, [&] { bag.push_back("10"); });
    s.call_later(50ms, [&] { bag.push_back("50"); });
    s.call_later(200ms, [&] { bag.push_back("200"); });
    BOOST_TEST(s.run_for(100ms) == RunStatus::timed_out);
    BOOST_TEST(bag == (Bag{"10", "50"}), boost::test_tools::per_element());
    BOOST_TEST((loop.clock.now() - t0 == 100ms));
    // The last wait was cut at the bound: 50 ms, not the 150 ms to the next timer.
    BOOST_REQUIRE(!loop.selector->timeouts.empty());
    BOOST_TEST((loop.selector->timeouts.back() == std::optional<std::chrono::nanoseconds>(50ms)));
    BOOST_TEST(s.timer_count() == 1u);
    // Ends as soon as the work does, long before the bound.
    BOOST_TEST(s.run_for(1h) == RunStatus::idle);
    BOOST_TEST(bag.back() == "200");
    BOOST_TEST((loop.clock.now() - t0 == 200ms));
    CHECK_EMPTY(s);
}

// A timer due exactly at the bound is due: it runs, and the run is then idle.
BOOST_AUTO_TEST_CASE(a_timer_due_at_the_bound_runs) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int runs = 0;
    s.call_later(100ms, [&] { ++runs; });
    BOOST_TEST(s.run_for(100ms) == RunStatus::idle);
    BOOST_TEST(runs == 1);
    CHECK_EMPTY(s);
}

// An fd waiter is work: the loop waits for it until the bound, and keeps it.
BOOST_AUTO_TEST_CASE(waits_for_io_until_the_bound) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Pipe p;
    int reads = 0;
    s.add_reader(p.r, [&] {
        char c;
        BOOST_TEST(::read(p.r, &c, 1) == 1);
        ++reads;
    });
    BOOST_TEST(s.run_for(250ms) == RunStatus::timed_out);
    BOOST_TEST((loop.clock.now() - t0 == 250ms));
    BOOST_TEST(reads == 0);
    p.put();
    BOOST_TEST(s.run_for(250ms) == RunStatus::timed_out);
    BOOST_TEST(reads == 1);
    BOOST_TEST(s.waiter_count() == 1u);
    BOOST_TEST(s.remove_reader(p.r));
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(zero_runs_what_is_ready_without_waiting) {
    TimeoutRecordingLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Bag bag;
    s.call_soon([&] {
        bag.push_back("soon");
        s.call_soon([&] { bag.push_back("next iteration"); });
    });
    s.call_later(1ms, [&] { bag.push_back("timer"); });
    BOOST_TEST(s.run_for(0s) == RunStatus::timed_out);
    BOOST_TEST(bag == Bag{"soon"}, boost::test_tools::per_element());
    BOOST_TEST(s.run_for(-5s) == RunStatus::timed_out);  // negative counts as zero
    BOOST_TEST(bag == (Bag{"soon", "next iteration"}), boost::test_tools::per_element());
    BOOST_TEST((loop.clock.now() == t0));
    for (const auto& timeout : loop.selector->timeouts) BOOST_TEST((timeout == std::chrono::nanoseconds::zero()));
    BOOST_TEST(s.run_for(1h) == RunStatus::idle);
    BOOST_TEST(bag.back() == "timer");
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(stop_ends_it_after_the_iteration) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Bag bag;
    s.call_later(10ms, [&] {
        bag.push_back("stopper");
        s.stop();
    });
    s.call_later(10ms, [&] { bag.push_back("same batch"); });
    s.call_later(20ms, [&] { bag.push_back("later"); });
    BOOST_TEST(s.run_for(1h) == RunStatus::stopped);
    BOOST_TEST(bag == (Bag{"stopper", "same batch"}), boost::test_tools::per_element());
    // Like run(): a stop() requested beforehand still lets one iteration run,
    // and that one does not wait.
    s.stop();
    s.call_soon([&] { bag.push_back("ready"); });
    BOOST_TEST(s.run_for(1h) == RunStatus::stopped);
    BOOST_TEST(bag.back() == "ready");
    BOOST_TEST(s.timer_count() == 1u);
    BOOST_TEST(s.run_for(1h) == RunStatus::idle);
    BOOST_TEST(bag.back() == "later");
    CHECK_EMPTY(s);
}

// A periodic timer is work for ever: only the bound ends the run.
BOOST_AUTO_TEST_CASE(a_periodic_timer_runs_until_the_bound) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int ticks = 0;
    Handle h = s.call_every(100ms, [&] { ++ticks; }, Periodic::fixed_rate);
    BOOST_TEST(s.run_for(1s) == RunStatus::timed_out);
    BOOST_TEST(ticks == 10);
    BOOST_TEST(s.run_for(1s) == RunStatus::timed_out);
    BOOST_TEST(ticks == 20);
    h.cancel();
    CHECK_EMPTY(s);
}

// Regression: the wait was measured from the clock cached when the
// iteration's callbacks started, so the time they took was slept again: every
// timer late by that much, and run_for past its end.
BOOST_AUTO_TEST_CASE(time_spent_in_callbacks_is_not_slept_again) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Pipe p;
    s.add_reader(p.r, [] {});  // work, so only the bound ends the run
    TimePoint fired{};
    s.call_later(100ms, [&] { fired = loop.clock.now(); });
    s.call_soon([&] { loop.clock.advance(60ms); });  // a slow callback
    BOOST_TEST(s.run_for(150ms) == RunStatus::timed_out);
    BOOST_TEST((fired - t0 == 100ms));
    BOOST_TEST((loop.clock.now() - t0 == 150ms));
    BOOST_TEST(s.remove_reader(p.r));
    CHECK_EMPTY(s);
}

// A bound beyond the clock's range means no bound, not one in the past.
BOOST_AUTO_TEST_CASE(a_huge_duration_means_no_bound) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    int runs = 0;
    s.call_later(3h, [&] { ++runs; });
    BOOST_TEST(s.run_for(std::chrono::hours::max()) == RunStatus::idle);
    BOOST_TEST(s.run_for(std::chrono::duration<double>(1e300)) == RunStatus::idle);
    BOOST_TEST(runs == 1);
    BOOST_TEST((loop.clock.now() - t0 == 3h));
    CHECK_EMPTY(s);
}

// The bound belongs to that one run: a later run_once sleeps to its timer.
BOOST_AUTO_TEST_CASE(the_bound_does_not_outlive_the_run) {
    TimeoutRecordingLoop loop(backend_under_test());
    auto& s = loop.sched;
    s.call_later(1h, [] {});
    BOOST_TEST(s.run_for(10ms) == RunStatus::timed_out);
    s.run_once();
    BOOST_TEST((loop.selector->timeouts.back() == std::optional<std::chrono::nanoseconds>(1h - 10ms)));
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(from_inside_a_callback_it_is_refused) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    bool refused = false;
    s.call_soon([&] {
        try {
            s.run_for(1s);
        } catch (const std::logic_error&) {
            refused = true;
        }
    });
    s.run();
    BOOST_TEST(refused);
    CHECK_EMPTY(s);
}
