// SPDX-License-Identifier: MIT
// Scheduler::stats(): the always-kept counters, what is pending, the loop
// lag percentiles over the recent window, and format_stats(). CTest runs the
// suite once per selector backend.
//
// Every case runs on a VirtualLoop (tests/support/virtual_time.hpp): the loop's
// sleeps advance the virtual clock by exactly what it asked for, so a timer
// fires exactly at its deadline unless a callback advanced the clock past it
// (a stall): latenesses are exact.
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include <reactor/loop_stats.hpp>
#include <reactor/scheduler.hpp>

#include "support/fds.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::Duration;
using reactor::LagWindow;
using reactor::LoopStats;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;

// Timers late by exactly 1, 2, ..., n ms: all due before a stall of
// n + 1 ms that the first callback makes, so they fire together after it.
void fire_late_timers(VirtualLoop& loop, int n) {
    for (int i = 1; i <= n; ++i) loop.sched.call_later(std::chrono::milliseconds(n + 1 - i), [] {});
    loop.sched.call_soon([&loop, n] { loop.clock.advance(std::chrono::milliseconds(n + 1)); });
    loop.sched.run();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(counters)

BOOST_AUTO_TEST_CASE(a_new_loop_counts_nothing) {
    VirtualLoop loop(backend_under_test());
    const LoopStats s = loop.sched.stats();
    BOOST_TEST(s.iterations == 0u);
    BOOST_TEST(s.callbacks_run == 0u);
    BOOST_TEST(s.timers_fired == 0u);
    BOOST_TEST(s.io_events == 0u);
    BOOST_TEST(s.selector_waits == 0u);
    BOOST_TEST(s.ready + s.timers + s.readers + s.writers + s.posted + s.signal_handlers == 0u);
    BOOST_TEST(s.lag.samples == 0u);
    BOOST_TEST(s.lag.max.count() == 0);
}

BOOST_AUTO_TEST_CASE(iterations_and_callbacks) {
    VirtualLoop loop(backend_under_test());
    int chain = 0;
    std::function<void()> next = [&] {
        if (++chain < 5) loop.sched.call_soon(next);
    };
    loop.sched.call_soon(next);
    loop.sched.call_soon([] {});
    loop.sched.call_soon([] {}).cancel();  // cancelled: never runs, not counted
    loop.sched.run();
    const LoopStats s = loop.sched.stats();
    BOOST_TEST(chain == 5);
    BOOST_TEST(s.callbacks_run == 6u);  // the chain's 5 and the other one
    BOOST_TEST(s.iterations == 5u);     // one per link of the chain
    BOOST_TEST(s.selector_waits <= s.iterations);
}

BOOST_AUTO_TEST_CASE(timers_and_fd_events) {
    VirtualLoop loop(backend_under_test());
    reactor_test::Pipe pipe;
    int ticks = 0;
    reactor::Handle tick;
    tick = loop.sched.call_every(10ms, [&] {
        if (++ticks == 3) tick.cancel();
    }, reactor::Periodic::fixed_rate);
    loop.sched.call_later(5ms, [] {});
    loop.sched.call_later(7ms, [] {}).cancel();  // never fires
    loop.sched.read_wait(pipe.r.get(), [] {});
    loop.sched.write_wait(pipe.w.get(), [] {});
    pipe.put();
    loop.sched.run();
    const LoopStats s = loop.sched.stats();
    BOOST_TEST(s.timers_fired == 4u);  // three ticks and the 5 ms timer
    BOOST_TEST(s.io_events == 2u);
    BOOST_TEST(s.callbacks_run == 6u);
    BOOST_TEST(s.selector_waits >= 1u);
}

BOOST_AUTO_TEST_CASE(what_is_pending_now) {
    VirtualLoop loop(backend_under_test());
    reactor_test::Pipe a, b;
    loop.sched.call_soon([] {});
    loop.sched.call_soon([] {});
    loop.sched.call_soon([] {}).cancel();
    loop.sched.call_later(1s, [] {});
    reactor::Handle periodic = loop.sched.call_every(1s, [] {}, reactor::Periodic::fixed_delay);
    loop.sched.read_wait(a.r.get(), [] {});
    loop.sched.add_reader(b.r.get(), [] {});
    loop.sched.add_writer(b.w.get(), [] {});
    loop.sched.call_soon_threadsafe([] {});
    loop.sched.add_signal_handler(SIGUSR2, [] {});
    LoopStats s = loop.sched.stats();
    BOOST_TEST(s.ready == 2u);
    BOOST_TEST(s.timers == 2u);
    BOOST_TEST(s.readers == 2u);
    BOOST_TEST(s.writers == 1u);
    BOOST_TEST(s.posted == 1u);
    BOOST_TEST(s.signal_handlers == 1u);

    loop.sched.remove_reader(b.r.get());
    loop.sched.remove_writer(b.w.get());
    loop.sched.remove_signal_handler(SIGUSR2);
    periodic.cancel();
    s = loop.sched.stats();
    BOOST_TEST(s.readers == 1u);
    BOOST_TEST(s.writers == 0u);
    BOOST_TEST(s.timers == 1u);
    BOOST_TEST(s.signal_handlers == 0u);
    loop.sched.forget_fd(a.r.get());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(loop_lag)

BOOST_AUTO_TEST_CASE(timers_on_time_have_no_lag) {
    VirtualLoop loop(backend_under_test());
    for (int i = 1; i <= 10; ++i) loop.sched.call_later(i * 100ms, [] {});
    loop.sched.run();
    const LoopStats s = loop.sched.stats();
    BOOST_TEST(s.lag.samples == 10u);
    BOOST_TEST(s.lag.max.count() == 0);
}

// Nearest-rank percentiles of the latenesses 1..100 ms.
BOOST_AUTO_TEST_CASE(percentiles_of_the_latenesses) {
    VirtualLoop loop(backend_under_test());
    fire_late_timers(loop, 100);
    const LoopStats s = loop.sched.stats();
    BOOST_TEST(s.lag.samples == 100u);
    BOOST_TEST(s.lag.p50 == Duration(50ms));
    BOOST_TEST(s.lag.p90 == Duration(90ms));
    BOOST_TEST(s.lag.p99 == Duration(99ms));
    BOOST_TEST(s.lag.max == Duration(100ms));
}

BOOST_AUTO_TEST_CASE(one_sample) {
    VirtualLoop loop(backend_under_test());
    fire_late_timers(loop, 1);
    const LoopStats s = loop.sched.stats();
    BOOST_TEST(s.lag.samples == 1u);
    BOOST_TEST(s.lag.p50 == Duration(1ms));
    BOOST_TEST(s.lag.p99 == Duration(1ms));
    BOOST_TEST(s.lag.max == Duration(1ms));
}

// The window is the last kSize timers: an old stall ages out.
BOOST_AUTO_TEST_CASE(an_old_stall_leaves_the_window) {
    VirtualLoop loop(backend_under_test());
    fire_late_timers(loop, 50);
    BOOST_TEST(loop.sched.stats().lag.max == Duration(50ms));
    for (std::size_t i = 1; i < LagWindow::kSize; ++i) loop.sched.call_later(i * 1ms, [] {});
    loop.sched.run();
    LoopStats s = loop.sched.stats();
    BOOST_TEST(s.lag.samples == LagWindow::kSize);
    // The stall's timers were recorded latest first (deadline order): only
    // its last, 1 ms late, is still in the window.
    BOOST_TEST(s.lag.max == Duration(1ms));
    loop.sched.call_later(1ms, [] {});
    loop.sched.run();
    s = loop.sched.stats();
    BOOST_TEST(s.lag.max.count() == 0);
    BOOST_TEST(s.timers_fired == 50u + LagWindow::kSize);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(format)

BOOST_AUTO_TEST_CASE(one_block_of_prefixed_lines) {
    VirtualLoop loop(backend_under_test());
    fire_late_timers(loop, 100);
    loop.sched.call_later(1s, [] {});
    const LoopStats s = loop.sched.stats();
    const std::string text = reactor::format_stats(s, "srv: ");
    // Selector waits depend on the backend (epoll is called to bring its
    // registrations up to date even when nothing is to be waited for).
    BOOST_TEST(text ==
               fmt::format("srv: loop: 2 iterations, 101 callbacks run, 100 timers fired, 0 fd events, {} selector "
                           "waits\n",
                           s.selector_waits) +
               "srv: loop pending: 0 ready, 1 timers, 0 readers, 0 writers, 0 posted, 0 signal handlers\n"
               "srv: loop lag over the last 100 timers: p50 50.0 ms, p90 90.0 ms, p99 99.0 ms, max 100.0 ms\n"
               "srv: loop time: not measured (debug mode is off; REACTOR_DEBUG=1 turns it on)\n");
}

BOOST_AUTO_TEST_CASE(timings_when_measured) {
    LoopStats s;
    s.timed = true;
    s.selector_time = 1500ms;
    s.callback_time = 250ms;
    s.slow_callbacks = 2;
    s.slowest_callback = 210ms;
    s.late_timers = 3;
    s.wrong_thread_calls = 1;
    const std::string text = reactor::format_stats(s);
    BOOST_TEST(text.find("loop lag: no timer has fired yet\n") != std::string::npos);
    BOOST_TEST(text.find("loop time: 1.500 s in the selector, 0.250 s in callbacks; 2 slow callbacks (slowest "
                         "210.0 ms), 3 late timers, 1 wrong-thread calls\n") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
