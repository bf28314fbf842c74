// SPDX-License-Identifier: MIT
// The order in which one Scheduler iteration runs things: call_soon FIFO,
// timers by (deadline, sequence), the phases (ready callbacks, then I/O, then
// due timers; what they schedule waits for the next iteration), the timeout
// the loop asks its selector for, and the snapshot rule (a callback that
// reschedules itself runs once per iteration and never starves I/O). fd
// waiters are covered in test_scheduler_io.cpp; pipes appear here only where
// the phase order needs one.
//
// Each case records what happened in a "bag", asserts exact order and counts,
// and ends by checking that the scheduler holds nothing (CHECK_EMPTY). CTest
// runs the suite once per selector backend (REACTOR_TEST_BACKEND). The loops
// run on virtual time (tests/support/virtual_time.hpp): their sleeps advance
// the clock, so they are instant and exact.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/fds.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::Duration;
using reactor::Handle;
using reactor::Scheduler;
using reactor::TimePoint;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::on;
using reactor_test::Pipe;
using reactor_test::TimeoutRecordingLoop;
using Bag = std::vector<std::string>;

}  // namespace

// ============================================================ ordering

// CTest runs this suite once per backend: each run is really on its backend.
BOOST_AUTO_TEST_CASE(suite_runs_on_the_backend_under_test) {
    VirtualLoop loop(backend_under_test());
    Scheduler s(on(backend_under_test()));
    const char* named = std::getenv("REACTOR_TEST_BACKEND");
    const std::string expected = named && *named ? named : "select";
    BOOST_TEST(loop.sched.selector().name() == expected);
    BOOST_TEST(s.selector().name() == expected);
}

BOOST_AUTO_TEST_SUITE(ordering)

BOOST_AUTO_TEST_CASE(call_soon_runs_fifo) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    std::vector<int> bag;
    for (int i = 0; i < 100; ++i) s.call_soon([&bag, i] { bag.push_back(i); });
    BOOST_TEST(s.ready_count() == 100u);
    s.run_once();
    std::vector<int> expected(100);
    for (int i = 0; i < 100; ++i) expected[static_cast<std::size_t>(i)] = i;
    BOOST_TEST(bag == expected, boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(equal_deadline_timers_fire_in_scheduling_order) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    std::vector<int> bag;
    const TimePoint deadline = loop.clock.now() + 10ms;
    // Mix call_later and call_at on the same deadline, and put a later timer
    // first so the heap has something to reorder.
    s.call_later(20ms, [&] { bag.push_back(100); });
    for (int i = 0; i < 50; ++i) {
        if (i % 2) {
            s.call_at(deadline, [&bag, i] { bag.push_back(i); });
        } else {
            s.call_later(10ms, [&bag, i] { bag.push_back(i); });
        }
    }
    s.run_once();  // one sleep of 10 ms; all 50 are due together
    BOOST_TEST(bag.size() == 50u);
    for (int i = 0; i < static_cast<int>(bag.size()); ++i) BOOST_TEST(bag[static_cast<std::size_t>(i)] == i);
    BOOST_TEST(s.timer_count() == 1u);
    s.run();
    BOOST_TEST(bag.back() == 100);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(timers_fire_by_deadline_then_sequence) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    std::vector<std::pair<int, Duration>> bag;  // (id, now - t0 when it ran)
    const std::array<std::chrono::milliseconds, 8> delays{30ms, 10ms, 20ms, 10ms, 0ms, 30ms, 5ms, 0ms};
    for (int i = 0; i < static_cast<int>(delays.size()); ++i) {
        s.call_later(delays[static_cast<std::size_t>(i)], [&, i] { bag.emplace_back(i, s.now() - t0); });
    }
    s.run();
    const std::vector<std::pair<int, Duration>> expected{{4, 0ms}, {7, 0ms},  {6, 5ms},  {1, 10ms},
                                                         {3, 10ms}, {2, 20ms}, {0, 30ms}, {5, 30ms}};
    BOOST_REQUIRE(bag.size() == expected.size());
    for (std::size_t i = 0; i < bag.size(); ++i) {
        BOOST_TEST(bag[i].first == expected[i].first);
        BOOST_TEST(bag[i].second.count() == Duration(expected[i].second).count());
    }
    // The loop slept exactly from deadline to deadline.
    BOOST_TEST((loop.clock.now() - t0 == 30ms));
    CHECK_EMPTY(s);
}

// Phases: already-ready callbacks, then I/O made ready by this iteration's
// poll, then due timers (see the phase comment in reactor/src/loop/iteration.cpp). What any of
// them schedules runs in the next iteration.
BOOST_AUTO_TEST_CASE(ready_then_io_then_timers_in_one_iteration) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Pipe p;
    p.put();
    Bag bag;
    s.call_later(0ms, [&] {
        bag.push_back("timer");
        s.call_soon([&] { bag.push_back("soon from timer"); });
    });
    s.read_wait(p.r, [&] {
        bag.push_back("io");
        s.call_soon([&] { bag.push_back("soon from io"); });
    });
    s.call_soon([&] {
        bag.push_back("soon");
        s.call_soon([&] { bag.push_back("soon from soon"); });
    });
    s.run_once();
    BOOST_TEST(bag == (Bag{"soon", "io", "timer"}), boost::test_tools::per_element());
    s.run_once();
    BOOST_TEST(bag == (Bag{"soon", "io", "timer", "soon from soon", "soon from io", "soon from timer"}),
               boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

// compute_timeout: 0 when something is ready, until the earliest live deadline
// otherwise; a cancelled timer on top of the heap must not cause an early wake.
// A watched pipe makes every iteration consult the selector (with no fd to
// watch, a zero-timeout poll is skipped: see the next test).
BOOST_AUTO_TEST_CASE(timeout_is_zero_when_ready_else_until_earliest_live_deadline) {
    TimeoutRecordingLoop loop(backend_under_test());
    auto& s = loop.sched;
    auto& timeouts = loop.selector->timeouts;
    Pipe p;
    s.add_reader(p.r, [] {});
    int fired = 0;
    Handle early = s.call_later(10ms, [&] { ++fired; });
    s.call_later(50ms, [&] { ++fired; });
    s.call_soon([] {});
    s.run_once();
    BOOST_REQUIRE(timeouts.size() == 1u);
    BOOST_TEST((timeouts.back() == std::chrono::nanoseconds::zero()));
    BOOST_TEST(early.cancel());
    s.run_once();
    BOOST_REQUIRE(timeouts.size() == 2u);
    BOOST_TEST((timeouts.back() == std::chrono::nanoseconds(50ms)));
    BOOST_TEST(fired == 1);
    BOOST_TEST(s.remove_reader(p.r));
    CHECK_EMPTY(s);
}

// With nothing to wait for (timeout 0) and no fd watched, the selector has
// nothing to say: the iteration skips it (a call_soon chain costs no system
// call per hop), unless it has registrations to bring up to date (epoll's
// batched epoll_ctl: at first, the loop's own wakeup fd), and once an fd is
// watched the zero-timeout poll happens again. A post from
// call_soon_threadsafe is taken by an iteration that calls the selector or
// has nothing else to run; a skipping iteration with callbacks to run leaves
// it for later (see the budget test below).
BOOST_AUTO_TEST_CASE(zero_timeout_poll_is_skipped_when_no_fd_is_watched) {
    TimeoutRecordingLoop loop(backend_under_test());
    auto& s = loop.sched;
    auto& timeouts = loop.selector->timeouts;
    const std::size_t syncs = loop.selector->has_pending_changes() ? 1 : 0;
    Bag bag;
    s.call_soon([&] {
        bag.push_back("soon");
        s.call_soon([&] { bag.push_back("soon 2"); });
    });
    s.call_soon_threadsafe([&] { bag.push_back("posted"); });
    s.run_once();
    const Bag first = syncs != 0 ? Bag{"soon", "posted"} : Bag{"soon"};
    BOOST_TEST(bag == first, boost::test_tools::per_element());
    BOOST_TEST(timeouts.size() == syncs);
    BOOST_TEST(!loop.selector->has_pending_changes());
    Pipe p;
    s.add_reader(p.r, [&] { bag.push_back("io"); });
    p.put();
    s.run_once();
    const Bag second = syncs != 0 ? Bag{"soon", "posted", "soon 2", "io"} : Bag{"soon", "soon 2", "posted", "io"};
    BOOST_TEST(bag == second, boost::test_tools::per_element());
    BOOST_REQUIRE(timeouts.size() == syncs + 1);
    BOOST_TEST((timeouts.back() == std::chrono::nanoseconds::zero()));
    BOOST_TEST(s.remove_reader(p.r));
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

// ============================================================ snapshot rule

BOOST_AUTO_TEST_SUITE(snapshot)

BOOST_AUTO_TEST_CASE(self_rescheduling_call_soon_runs_once_per_iteration) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int runs = 0;
    bool keep_going = true;
    std::function<void()> again = [&] {
        ++runs;
        // (Bounded, so a loop that drained instead of snapshotting fails fast.)
        if (keep_going && runs < 1000) s.call_soon([&] { again(); });
    };
    s.call_soon([&] { again(); });
    for (int i = 1; i <= 5; ++i) {
        s.run_once();
        BOOST_TEST(runs == i);
        BOOST_TEST(s.ready_count() == 1u);
    }
    keep_going = false;
    s.run();
    BOOST_TEST(runs == 6);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(self_rescheduling_call_soon_does_not_starve_io) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Pipe p;
    int spins = 0;
    bool io_done = false;
    std::function<void()> spin = [&] {
        ++spins;
        if (!io_done && spins < 1000) s.call_soon([&] { spin(); });
    };
    s.call_soon([&] { spin(); });
    s.read_wait(p.r, [&] {
        char c;
        BOOST_TEST(::read(p.r, &c, 1) == 1);
        io_done = true;
    });
    s.run_once();
    s.run_once();
    BOOST_TEST(spins == 2);
    p.put();  // readiness arrives while the spinner is busy
    s.run_once();
    BOOST_TEST(io_done);
    BOOST_TEST(spins == 3);
    s.run();
    BOOST_TEST(spins == 4);  // the one it had queued before seeing io_done
    CHECK_EMPTY(s);
}

// libuv's "busy loop with zero timeout timers": due timers are moved out
// before any runs, so one re-armed with zero delay waits for the next poll.
BOOST_AUTO_TEST_CASE(zero_delay_timer_rearming_itself_does_not_starve_io) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Pipe p;
    int ticks = 0;
    bool io_done = false;
    std::function<void()> tick = [&] {
        ++ticks;
        if (!io_done && ticks < 1000) s.call_later(0ms, [&] { tick(); });
    };
    s.call_later(0ms, [&] { tick(); });
    s.read_wait(p.r, [&] {
        char c;
        BOOST_TEST(::read(p.r, &c, 1) == 1);
        io_done = true;
    });
    for (int i = 1; i <= 3; ++i) {
        s.run_once();
        BOOST_TEST(ticks == i);  // one tick per iteration, never a spin
    }
    p.put();
    s.run_once();
    BOOST_TEST(io_done);
    BOOST_TEST(ticks == 4);
    s.run();
    BOOST_TEST(ticks == 4);  // I/O ran first in that iteration, so the tick did not re-arm
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()
