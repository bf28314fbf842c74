// SPDX-License-Identifier: MIT
// docs/debugging.md: debug mode (slow callbacks, late timers, wrong-thread
// calls) and Scheduler::stats().
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <fmt/format.h>
#include <reactor/loop_stats.hpp>
#include <reactor/scheduler.hpp>

using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(debugging_turn_it_on) {
    // A clock the case moves by hand, so that "slow" takes no real time.
    reactor::TimePoint fake_now{};
    // [snippet:options]
    reactor::Scheduler::Options options;
    options.debug = true;                                  // or run the program with REACTOR_DEBUG=1
    options.slow_callback_threshold = 50ms;                // default 100 ms
    options.timer_lateness_threshold = 20ms;               // default 100 ms
    // [end-snippet:options]
    options.clock = [&] { return fake_now; };
    // [snippet:hook]
    reactor::Scheduler sched(std::move(options));
    std::vector<std::string> lines;
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) {
        lines.push_back(reactor::describe(ctx));  // the default handler prints this line on stderr
    });
    // [end-snippet:hook]
    sched.call_later(10ms, [] {});
    sched.call_soon([&] { fake_now += 80ms; });  // "blocks" the loop for 80 ms
    sched.run();
    BOOST_REQUIRE_EQUAL(lines.size(), 2u);
    BOOST_TEST(lines[0].starts_with("reactor: slow callback: it ran for 80.0 ms (threshold 50.0 ms) (from "));
    BOOST_TEST(lines[1].starts_with(
        "reactor: late timer: it fired 70.0 ms after its deadline (threshold 20.0 ms; loop lag) (from "));
    BOOST_TEST(contains(lines[1], "debugging.cpp:"));
}

BOOST_AUTO_TEST_CASE(debugging_wrong_thread) {
    reactor::Scheduler::Options options;
    options.debug = true;
    reactor::Scheduler sched(std::move(options));
    std::string caught;
    std::thread worker;
    sched.call_soon([&] {
        worker = std::thread([&] {
            // [snippet:wrong_thread]
            try {
                sched.call_soon([] {});  // wrong: the loop runs on another thread
            } catch (const std::logic_error& e) {
                caught = e.what();  // "reactor: call_soon called from a thread other than ...: refused ..."
            }
            sched.call_soon_threadsafe([&] { sched.stop(); });  // right
            // [end-snippet:wrong_thread]
        });
    });
    std::vector<std::string> reports;
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    sched.run_forever();
    worker.join();
    BOOST_TEST(contains(caught, "call_soon called from a thread other than the one running the loop: refused"));
    BOOST_REQUIRE_EQUAL(reports.size(), 1u);
    BOOST_TEST(contains(reports[0], "call_soon called from a thread other than"));
}

BOOST_AUTO_TEST_CASE(debugging_stats) {
    reactor::Scheduler sched;
    for (int i = 1; i <= 3; ++i) sched.call_later(i * 1ms, [] {});
    sched.run();
    // [snippet:stats]
    reactor::LoopStats s = sched.stats();
    fmt::print("{} callbacks in {} iterations; timers fired late by {} ns at worst (p99 {} ns)\n",
               s.callbacks_run, s.iterations, s.lag.max.count(), s.lag.p99.count());
    fmt::print("{}", reactor::format_stats(s, "myserver: "));  // the block the example servers print on SIGUSR1
    // [end-snippet:stats]
    BOOST_TEST(s.callbacks_run == 3u);
    BOOST_TEST(s.timers_fired == 3u);
    BOOST_TEST(s.lag.samples == 3u);
    BOOST_TEST(!s.timed);
}
