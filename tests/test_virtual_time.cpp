// SPDX-License-Identifier: MIT
// The public testing kit's driver (reactor/testing/): virtual time that jumps
// to the next deadline whenever nothing is ready, mixed with real fds, held
// still while real I/O is in flight, and the same on every run. CTest runs
// the suite once per backend (the real selector inside the VirtualSelector).
// Scripted readiness (FdScript) has its own suite, test_fd_script.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>
#include <reactor/testing/virtual_loop.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/fds.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::Duration;
using reactor::testing::VirtualClock;
using reactor::testing::VirtualLoop;
using reactor_test::Pipe;

struct Loop : VirtualLoop {
    Loop() : VirtualLoop(reactor_test::backend_under_test()) {}
};

// The code under test: retries an operation with exponential backoff (1 s,
// doubling, at most 1 h between attempts) and gives up once a day has
// passed since the first attempt.
class Retrier {
public:
    Retrier(reactor::Scheduler& sched, std::function<bool()> attempt) : sched_(sched), attempt_(std::move(attempt)) {}
    void start() {
        first_ = sched_.now();
        try_once();
    }
    bool gave_up() const { return gave_up_; }

private:
    void try_once() {
        if (attempt_()) return;
        if (sched_.now() + delay_ - first_ > 24h) {
            gave_up_ = true;
            return;
        }
        sched_.call_later(delay_, [this] { try_once(); });
        delay_ = std::min<Duration>(delay_ * 2, 1h);
    }
    reactor::Scheduler& sched_;
    std::function<bool()> attempt_;
    reactor::TimePoint first_{};
    Duration delay_ = 1s;
    bool gave_up_ = false;
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_day_of_retries_runs_without_sleeping) {
    Loop loop;
    std::vector<Duration> attempts;
    Retrier retrier(loop.sched, [&] {
        attempts.push_back(loop.clock.elapsed());
        return false;
    });
    retrier.start();
    loop.sched.run();
    BOOST_TEST(retrier.gave_up());
    // 0, 1, 3, 7, ... s: doubling gaps until the gap reaches 1 h (after the
    // 4095 s attempt), then one attempt an hour until the day is over.
    std::vector<Duration> expected{0s};
    for (Duration gap = 1s; expected.back() + gap <= 24h; gap = std::min<Duration>(gap * 2, 1h)) {
        expected.push_back(expected.back() + gap);
    }
    BOOST_TEST(expected.size() == 35u);
    BOOST_TEST((expected[12] == 4095s && expected[13] == 4095s + 1h && expected.back() == 4095s + 22h));
    BOOST_TEST(attempts == expected, boost::test_tools::per_element());
    BOOST_TEST((loop.clock.elapsed() == expected.back()));
    // Every wait was a jump: the loop never blocked for real.
    BOOST_TEST(loop.selector->jumps() == expected.size() - 1);
    BOOST_TEST(loop.selector->real_blocks() == 0u);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(run_for_a_day_of_periodic_ticks) {
    Loop loop;
    std::vector<Duration> ticks;
    reactor::Handle h =
        loop.sched.call_every(1min, [&] { ticks.push_back(loop.clock.elapsed()); }, reactor::Periodic::fixed_rate);
    BOOST_TEST((loop.sched.run_for(24h) == reactor::RunStatus::timed_out));
    BOOST_REQUIRE(ticks.size() == 1440u);
    BOOST_TEST((ticks.front() == 1min && ticks.back() == 24h));
    BOOST_TEST((loop.clock.elapsed() == 24h));
    BOOST_TEST(loop.selector->real_blocks() == 0u);
    h.cancel();
    CHECK_EMPTY(loop.sched);
}

// A real fd that is ready is served first: the jump waits for it.
BOOST_AUTO_TEST_CASE(a_ready_real_fd_is_served_before_time_jumps) {
    Loop loop;
    Pipe p;
    std::vector<std::string> trace;
    loop.sched.add_reader(p.r, [&] {
        p.take();
        trace.push_back(fmt::format("read at {}", loop.clock.elapsed() / 1s));
    });
    loop.sched.call_later(10s, [&] { p.put(); });
    loop.sched.call_later(10s + 1ns, [&] { trace.push_back("10 s + 1 ns"); });
    loop.sched.call_later(20s, [&] {
        trace.push_back("20 s");
        loop.sched.remove_reader(p.r);
    });
    loop.sched.run();
    BOOST_TEST(trace == (std::vector<std::string>{"read at 10", "10 s + 1 ns", "20 s"}),
               boost::test_tools::per_element());
    CHECK_EMPTY(loop.sched);
}

// Another thread's work is real I/O in flight: held, virtual time waits for it
// (here the 1 h timer would otherwise run first).
BOOST_AUTO_TEST_CASE(a_hold_keeps_time_still_until_real_work_arrives) {
    Loop loop;
    std::vector<std::string> trace;
    reactor::testing::TimeHold hold = loop.hold_time();
    BOOST_TEST(loop.selector->time_held());
    loop.sched.call_later(1h, [&] { trace.push_back(fmt::format("timer at {} s", loop.clock.elapsed() / 1s)); });
    std::thread worker([&] {
        std::this_thread::sleep_for(20ms);  // real work; no assertion on how long it takes
        loop.sched.call_soon_threadsafe([&] {
            trace.push_back(fmt::format("posted at {} s", loop.clock.elapsed() / 1s));
            hold.release();
        });
    });
    loop.sched.run();
    worker.join();
    BOOST_TEST(trace == (std::vector<std::string>{"posted at 0 s", "timer at 3600 s"}),
               boost::test_tools::per_element());
    BOOST_TEST(!loop.selector->time_held());
    BOOST_TEST(loop.selector->real_blocks() >= 1u);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(holds_count_and_move) {
    Loop loop;
    auto a = loop.hold_time();
    auto b = loop.hold_time();
    reactor::testing::TimeHold c = std::move(a);
    BOOST_TEST((!a.holds() && c.holds()));
    c.release();
    c.release();  // idempotent: b still holds
    BOOST_TEST(loop.selector->time_held());
    b = reactor::testing::TimeHold{};
    BOOST_TEST(!loop.selector->time_held());
}

// Held with nothing real to wait for, or with nothing at all to wait for: an
// error after the real wait limit, never a hang.
BOOST_AUTO_TEST_CASE(a_loop_that_cannot_move_throws_instead_of_hanging) {
    Loop loop;
    loop.selector->set_real_wait_limit(20ms);
    Pipe p;
    loop.sched.read_wait(p.r, [] {});
    try {
        loop.sched.run();
        BOOST_FAIL("run() returned");
    } catch (const std::runtime_error& e) {
        BOOST_TEST(std::string(e.what()).find("waits forever with nothing ready") != std::string::npos, e.what());
    }
    loop.sched.call_later(1s, [&] { loop.sched.remove_reader(p.r); });
    auto hold = loop.hold_time();
    try {
        loop.sched.run();
        BOOST_FAIL("run() returned");
    } catch (const std::runtime_error& e) {
        BOOST_TEST(std::string(e.what()).find("virtual time is held") != std::string::npos, e.what());
    }
    BOOST_TEST((loop.clock.elapsed() == 0s));
    hold.release();
    loop.sched.run();  // the timer may now jump
    BOOST_TEST((loop.clock.elapsed() == 1s));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused_clearly) {
    VirtualClock clock;
    BOOST_CHECK_EXCEPTION(clock.advance(-1ns), std::invalid_argument, [](const auto& e) {
        return std::string(e.what()) == "VirtualClock: cannot advance by a negative duration";
    });
    clock.advance(5s);
    BOOST_CHECK_EXCEPTION(clock.advance_to(VirtualClock::kStart + 4s), std::invalid_argument, [](const auto& e) {
        return std::string(e.what()) == "VirtualClock: cannot go back in time";
    });
    BOOST_TEST((clock.elapsed() == 5s));
    clock.advance(Duration::max());  // saturates, never wraps into the past
    BOOST_TEST((clock.now() == reactor::TimePoint::max()));
    BOOST_CHECK_EXCEPTION(reactor::testing::VirtualSelector(clock, nullptr), std::invalid_argument,
                          [](const auto& e) { return std::string(e.what()).find("needs a real selector") != std::string::npos; });
    Loop loop;
    BOOST_CHECK_EXCEPTION(loop.selector->set_real_wait_limit(0s), std::invalid_argument,
                          [](const auto& e) { return std::string(e.what()).find("must be > 0") != std::string::npos; });
    BOOST_TEST((loop.selector->real_wait_limit() == 5s));
}

// One scenario with everything the driver orders: timers at equal and
// nearby deadlines, a periodic timer, a real pipe and scripted readiness.
// Run twice, it gives the same trace, exactly the expected one. At 2 s the
// fd report comes first (I/O before timers in an iteration), then the timers
// by scheduling order (the tick was re-armed at 1 s, after "timer" was
// scheduled); at 3 s "end" cancels the tick due in the same batch.
namespace {
std::vector<std::string> scenario() {
    Loop loop;
    Pipe p;
    constexpr int kScripted = 900;  // never opened: the script alone answers for it
    std::vector<std::string> trace;
    auto say = [&](const std::string& what) { trace.push_back(fmt::format("{} ms {}", loop.clock.elapsed() / 1ms, what)); };
    loop.script().readable_at(kScripted, loop.clock.now() + 1500ms);
    loop.script().readable_at(kScripted, loop.clock.now() + 2s);
    loop.sched.add_reader(kScripted, [&] { say("scripted"); });
    loop.sched.add_reader(p.r, [&] {
        p.take();
        say("pipe");
    });
    reactor::Handle tick = loop.sched.call_every(1s, [&] { say("tick"); }, reactor::Periodic::fixed_rate);
    loop.sched.call_later(2s, [&] { say("timer"); });
    loop.sched.call_later(2500ms, [&] { p.put(); });
    loop.sched.call_later(3s, [&] {
        say("end");
        tick.cancel();
        loop.sched.remove_reader(p.r);
        loop.sched.forget_fd(kScripted);
    });
    loop.sched.run();
    return trace;
}
}  // namespace

BOOST_AUTO_TEST_CASE(the_same_scenario_gives_the_same_trace_every_run) {
    const std::vector<std::string> expected{
        "1000 ms tick", "1500 ms scripted", "2000 ms scripted", "2000 ms timer", "2000 ms tick",
        "2500 ms pipe", "3000 ms end"};
    BOOST_TEST(scenario() == expected, boost::test_tools::per_element());
    BOOST_TEST(scenario() == expected, boost::test_tools::per_element());
}
