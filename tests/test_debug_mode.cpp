// SPDX-License-Identifier: MIT
// Debug mode (Scheduler::Options::debug, REACTOR_DEBUG): slow callbacks, late
// timers and loop-thread-only members called from another thread are
// reported through the exception handler, one line each, with the line that
// scheduled the callback; stats() gets timings. The wrong-thread check is in
// test_debug_thread.cpp. CTest runs the suite once per selector backend.
//
// Time is a manual clock: a "slow" callback advances it itself, and the
// selector wrapper below advances it by exactly the timeout the loop asks
// for, so every duration in a report is exact.
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <reactor/scheduler.hpp>
#include <reactor/selector.hpp>

#include "support/backends.hpp"
#include "support/fds.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::Duration;
using reactor::ErrorContext;
using reactor::Scheduler;
using reactor::TimePoint;

// A clock that moves only when told to.
struct ManualClock {
    TimePoint now = TimePoint{} + 1000h;
    void advance(Duration d) { now += d; }
};

// The real backend, but a wait with a timeout and nothing ready takes no
// real time: the clock jumps by the timeout instead.
class JumpingSelector final : public reactor::Selector {
public:
    JumpingSelector(ManualClock& clock, std::unique_ptr<reactor::Selector> inner)
        : clock_(clock), inner_(std::move(inner)) {}
    std::string_view name() const noexcept override { return inner_->name(); }
    void set_interest(int fd, reactor::Interest interest) override { inner_->set_interest(fd, interest); }
    bool has_pending_changes() const noexcept override { return inner_->has_pending_changes(); }
    void forget(int fd) noexcept override { inner_->forget(fd); }
    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<reactor::FdEvent>& out) override {
        const std::size_t before = out.size();
        inner_->wait(std::chrono::nanoseconds::zero(), out);
        if (out.size() != before) return;
        if (timeout) {
            clock_.advance(std::chrono::ceil<Duration>(*timeout));
        } else {
            inner_->wait(std::chrono::seconds(5), out);  // bounded: a case that would hang fails instead
        }
    }

private:
    ManualClock& clock_;
    std::unique_ptr<reactor::Selector> inner_;
};

Scheduler::Options debug_options(ManualClock& clock) {
    Scheduler::Options o;
    o.selector = std::make_unique<JumpingSelector>(clock, reactor::make_selector(reactor_test::backend_under_test()));
    o.clock = [&clock] { return clock.now; };
    o.debug = true;
    return o;
}

// A debug-mode loop on a manual clock, its reports collected.
struct DebugLoop {
    explicit DebugLoop(std::function<void(Scheduler::Options&)> tweak = {}) : sched(make(clock, tweak)) {
        sched.set_exception_handler([this](const ErrorContext& ctx) { reports.push_back(ctx); });
    }
    static Scheduler::Options make(ManualClock& clock, const std::function<void(Scheduler::Options&)>& tweak) {
        Scheduler::Options o = debug_options(clock);
        if (tweak) tweak(o);
        return o;
    }
    ManualClock clock;
    Scheduler sched;
    std::vector<ErrorContext> reports;
};

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// Sets (or unsets, for nullptr) REACTOR_DEBUG for the scope.
class DebugEnv {
public:
    explicit DebugEnv(const char* value) {
        if (const char* old = std::getenv("REACTOR_DEBUG")) old_ = old;
        value ? ::setenv("REACTOR_DEBUG", value, 1) : ::unsetenv("REACTOR_DEBUG");
    }
    ~DebugEnv() { old_ ? ::setenv("REACTOR_DEBUG", old_->c_str(), 1) : ::unsetenv("REACTOR_DEBUG"); }
    DebugEnv(const DebugEnv&) = delete;
    DebugEnv& operator=(const DebugEnv&) = delete;

private:
    std::optional<std::string> old_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(switching_it_on)

BOOST_AUTO_TEST_CASE(off_by_default_and_then_silent) {
    DebugEnv env(nullptr);
    ManualClock clock;
    Scheduler::Options o = debug_options(clock);
    o.debug = false;
    Scheduler s(std::move(o));
    BOOST_TEST(!s.debug());
    std::vector<ErrorContext> reports;
    s.set_exception_handler([&](const ErrorContext& ctx) { reports.push_back(ctx); });
    s.call_later(10ms, [] {});
    s.call_soon([&] { clock.advance(500ms); });  // slow, and makes the timer late
    s.run();
    BOOST_TEST(reports.empty());
    const reactor::LoopStats st = s.stats();
    BOOST_TEST(!st.timed);
    BOOST_TEST(st.callback_time.count() == 0);
    BOOST_TEST(st.slow_callbacks == 0u);
    BOOST_TEST(st.late_timers == 0u);
}

BOOST_AUTO_TEST_CASE(the_environment_turns_it_on) {
    for (const char* on : {"1", "yes"}) {
        DebugEnv env(on);
        BOOST_TEST(Scheduler().debug(), "REACTOR_DEBUG=" << on);
    }
    for (const char* off : {"0", ""}) {
        DebugEnv env(off);
        BOOST_TEST(!Scheduler().debug(), "REACTOR_DEBUG=" << off);
    }
    DebugEnv env("1");
    Scheduler s;
    ::unsetenv("REACTOR_DEBUG");  // read once, at construction
    BOOST_TEST(s.debug());
}

BOOST_AUTO_TEST_CASE(negative_thresholds_are_refused) {
    ManualClock clock;
    Scheduler::Options a = debug_options(clock);
    a.slow_callback_threshold = -1ms;
    BOOST_CHECK_EXCEPTION(Scheduler{std::move(a)}, std::invalid_argument, [](const std::invalid_argument& e) {
        return contains(e.what(), "slow_callback_threshold must not be negative");
    });
    Scheduler::Options b = debug_options(clock);
    b.timer_lateness_threshold = -1ns;
    BOOST_CHECK_EXCEPTION(Scheduler{std::move(b)}, std::invalid_argument, [](const std::invalid_argument& e) {
        return contains(e.what(), "timer_lateness_threshold must not be negative");
    });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(slow_callbacks)

BOOST_AUTO_TEST_CASE(reported_with_duration_and_the_line_that_scheduled_it) {
    DebugLoop loop;
    bool fast_ran = false;
    // clang-format off
    const unsigned line = std::source_location::current().line(); loop.sched.call_soon([&] { loop.clock.advance(200ms); });
    // clang-format on
    loop.sched.call_soon([&] {
        loop.clock.advance(100ms);  // exactly the threshold: not over it
        fast_ran = true;
    });
    loop.sched.run();
    BOOST_TEST(fast_ran);
    BOOST_REQUIRE_EQUAL(loop.reports.size(), 1u);
    const ErrorContext& r = loop.reports[0];
    BOOST_TEST(r.message == "slow callback: it ran for 200.0 ms (threshold 100.0 ms)");
    BOOST_TEST(!r.exception);
    BOOST_TEST(r.origin_known);
    BOOST_TEST(r.origin.line() == line);
    BOOST_TEST(contains(r.origin.file_name(), "test_debug_mode.cpp"));
    BOOST_TEST(reactor::describe(r) ==
               fmt::format("reactor: slow callback: it ran for 200.0 ms (threshold 100.0 ms) (from {}:{})",
                           r.origin.file_name(), line));
    const reactor::LoopStats st = loop.sched.stats();
    BOOST_TEST(st.timed);
    BOOST_TEST(st.slow_callbacks == 1u);
    BOOST_TEST(st.slowest_callback == Duration(200ms));
    BOOST_TEST(st.callback_time == Duration(300ms));
}

BOOST_AUTO_TEST_CASE(the_threshold_is_configurable) {
    DebugLoop loop([](Scheduler::Options& o) { o.slow_callback_threshold = 5ms; });
    loop.sched.call_soon([&] { loop.clock.advance(6ms); });
    loop.sched.call_soon([&] { loop.clock.advance(5ms); });
    loop.sched.run();
    BOOST_REQUIRE_EQUAL(loop.reports.size(), 1u);
    BOOST_TEST(loop.reports[0].message == "slow callback: it ran for 6.0 ms (threshold 5.0 ms)");
}

// Timers, fd waiters and periodic timers are timed like call_soon callbacks,
// and named by the line that registered them.
BOOST_AUTO_TEST_CASE(every_kind_of_callback_is_timed) {
    DebugLoop loop([](Scheduler::Options& o) { o.timer_lateness_threshold = 1h; });
    reactor_test::Pipe pipe;
    std::vector<unsigned> lines;
    reactor::Handle tick;
    // clang-format off
    lines.push_back(std::source_location::current().line()); loop.sched.call_later(1ms, [&] { loop.clock.advance(150ms); });
    lines.push_back(std::source_location::current().line()); loop.sched.read_wait(pipe.r.get(), [&] { loop.clock.advance(150ms); });
    lines.push_back(std::source_location::current().line()); tick = loop.sched.call_every(1h, [&] { loop.clock.advance(150ms); tick.cancel(); }, reactor::Periodic::fixed_rate);
    // clang-format on
    pipe.put();
    loop.sched.run();
    BOOST_REQUIRE_EQUAL(loop.reports.size(), 3u);
    std::vector<unsigned> reported;
    for (const ErrorContext& r : loop.reports) {
        BOOST_TEST(r.message == "slow callback: it ran for 150.0 ms (threshold 100.0 ms)");
        reported.push_back(r.origin.line());
    }
    std::sort(reported.begin(), reported.end());
    BOOST_TEST(reported == lines, boost::test_tools::per_element());
}

// The selector's wait and the callbacks are timed separately.
BOOST_AUTO_TEST_CASE(time_in_the_selector_and_in_callbacks) {
    DebugLoop loop;
    loop.sched.call_later(300ms, [&] { loop.clock.advance(20ms); });
    loop.sched.run();
    const reactor::LoopStats st = loop.sched.stats();
    BOOST_TEST(st.selector_time == Duration(300ms));
    BOOST_TEST(st.callback_time == Duration(20ms));
    BOOST_TEST(loop.reports.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(late_timers)

BOOST_AUTO_TEST_CASE(reported_with_lateness_after_the_timer_ran) {
    DebugLoop loop([](Scheduler::Options& o) { o.slow_callback_threshold = 1h; });
    std::vector<std::string> events;
    loop.sched.set_exception_handler([&](const ErrorContext& ctx) {
        loop.reports.push_back(ctx);
        events.push_back("report");
    });
    // clang-format off
    const unsigned line = std::source_location::current().line(); loop.sched.call_later(50ms, [&] { events.push_back("timer"); });
    // clang-format on
    loop.sched.call_soon([&] { loop.clock.advance(300ms); });  // the loop stalls: the timer is 250 ms late
    loop.sched.run();
    BOOST_TEST(events == (std::vector<std::string>{"timer", "report"}), boost::test_tools::per_element());
    BOOST_REQUIRE_EQUAL(loop.reports.size(), 1u);
    const ErrorContext& r = loop.reports[0];
    BOOST_TEST(r.message == "late timer: it fired 250.0 ms after its deadline (threshold 100.0 ms; loop lag)");
    BOOST_TEST(r.origin_known);
    BOOST_TEST(r.origin.line() == line);
    BOOST_TEST(loop.sched.stats().late_timers == 1u);
}

// A stall makes every timer due meanwhile late: one line, naming the latest.
BOOST_AUTO_TEST_CASE(one_line_per_iteration_naming_the_latest) {
    DebugLoop loop([](Scheduler::Options& o) {
        o.slow_callback_threshold = 1h;
        o.timer_lateness_threshold = 20ms;
    });
    // clang-format off
    const unsigned line = std::source_location::current().line(); loop.sched.call_later(10ms, [] {});
    // clang-format on
    loop.sched.call_later(30ms, [] {});
    loop.sched.call_later(490ms, [] {});  // 10 ms late: under the threshold
    loop.sched.call_soon([&] { loop.clock.advance(500ms); });
    loop.sched.run();
    BOOST_REQUIRE_EQUAL(loop.reports.size(), 1u);
    BOOST_TEST(loop.reports[0].message ==
               "late timer: it fired 490.0 ms after its deadline (threshold 20.0 ms; loop lag), the latest of 2 late "
               "timers in this iteration");
    BOOST_TEST(loop.reports[0].origin.line() == line);
    BOOST_TEST(loop.sched.stats().late_timers == 2u);
}

BOOST_AUTO_TEST_CASE(timers_on_time_are_not_reported) {
    DebugLoop loop;
    int fired = 0;
    for (int i = 1; i <= 5; ++i) loop.sched.call_later(i * 100ms, [&] { ++fired; });
    loop.sched.run();
    BOOST_TEST(fired == 5);
    BOOST_TEST(loop.reports.empty());
}

BOOST_AUTO_TEST_SUITE_END()
