// SPDX-License-Identifier: MIT
// The public testing kit's scripted readiness (reactor/testing/fd_script.hpp):
// "fd N becomes readable at virtual time T", delivered then by the loop, with
// no real socket behind N. CTest runs the suite once per backend (the real
// selector the script sits beside).
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/testing/virtual_loop.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/fds.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::testing::VirtualLoop;
using Trace = std::vector<std::string>;

// Never opened in these tests: only the script answers for it.
constexpr int kFd = 900;

struct Loop : VirtualLoop {
    Loop() : VirtualLoop(reactor_test::backend_under_test()) {}
    reactor::TimePoint at(reactor::Duration d) const { return reactor::testing::VirtualClock::kStart + d; }
    std::string stamp(const std::string& what) const { return fmt::format("{} {}", what, clock.elapsed() / 1ms); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(readiness_arrives_exactly_when_declared_once_per_declaration) {
    Loop loop;
    Trace trace;
    loop.script().readable_at(kFd, loop.at(5s));
    loop.script().readable_at(kFd, loop.at(7s));
    BOOST_TEST(loop.script().scripts(kFd));
    BOOST_TEST(loop.script().pending() == 2u);
    loop.sched.add_reader(kFd, [&] { trace.push_back(loop.stamp("read")); });
    loop.sched.call_later(6s, [&] { trace.push_back(loop.stamp("timer")); });
    loop.sched.call_later(10s, [&] { loop.sched.remove_reader(kFd); });
    loop.sched.run();
    BOOST_TEST(trace == (Trace{"read 5000", "timer 6000", "read 7000"}), boost::test_tools::per_element());
    BOOST_TEST(loop.script().pending() == 0u);
    BOOST_TEST((loop.clock.elapsed() == 10s));
    CHECK_EMPTY(loop.sched);
}

// A report made before anyone watches the fd waits for a watcher; a report
// for a direction nobody watches neither fires nor makes time stop there.
BOOST_AUTO_TEST_CASE(a_report_waits_for_a_watcher_of_its_direction) {
    Loop loop;
    Trace trace;
    loop.script().readable_at(kFd, loop.at(1s));
    loop.script().writable_at(kFd, loop.at(2s));
    loop.sched.call_later(3s, [&] {
        loop.sched.read_wait(kFd, [&] { trace.push_back(loop.stamp("readable")); });
    });
    loop.sched.run();
    BOOST_TEST(trace == (Trace{"readable 3000"}), boost::test_tools::per_element());
    BOOST_TEST(loop.selector->jumps() == 1u);  // straight to 3 s
    BOOST_TEST(loop.script().pending() == 1u);  // the writable report, never watched
    loop.sched.write_wait(kFd, [&] { trace.push_back(loop.stamp("writable")); });
    loop.sched.run();
    BOOST_TEST(trace == (Trace{"readable 3000", "writable 3000"}), boost::test_tools::per_element());
    CHECK_EMPTY(loop.sched);
}

// The loop jumps to a scripted report due before its next timer.
BOOST_AUTO_TEST_CASE(time_jumps_to_the_next_report_before_the_next_timer) {
    Loop loop;
    Trace trace;
    loop.script().writable_at(kFd, loop.at(250ms));
    loop.sched.write_wait(kFd, [&] { trace.push_back(loop.stamp("writable")); });
    loop.sched.call_later(1h, [&] { trace.push_back(loop.stamp("timer")); });
    loop.sched.run();
    BOOST_TEST(trace == (Trace{"writable 250", "timer 3600000"}), boost::test_tools::per_element());
    BOOST_TEST(loop.selector->jumps() == 2u);
    CHECK_EMPTY(loop.sched);
}

// Readable and writable due together come in one report; two declarations of
// the same direction at the same time are two reports, one per wait.
BOOST_AUTO_TEST_CASE(one_report_per_fd_per_wait) {
    Loop loop;
    Trace trace;
    for (int i = 0; i < 2; ++i) loop.script().readable_at(kFd, loop.at(1s));
    loop.script().writable_at(kFd, loop.at(1s));
    int iteration = 0;
    loop.sched.add_reader(kFd, [&] { trace.push_back(fmt::format("read in {}", iteration)); });
    loop.sched.add_writer(kFd, [&] { trace.push_back(fmt::format("write in {}", iteration)); });
    while (loop.script().pending() != 0) {
        loop.sched.run_once();
        ++iteration;
    }
    BOOST_TEST(trace == (Trace{"read in 0", "write in 0", "read in 1"}), boost::test_tools::per_element());
    BOOST_TEST((loop.clock.elapsed() == 1s));
    loop.sched.forget_fd(kFd);
    CHECK_EMPTY(loop.sched);
}

// A scripted failure is what a closed fd looks like to the loop: its waiters
// are dropped and the exception handler names the fd.
BOOST_AUTO_TEST_CASE(a_scripted_failure_drops_the_waiters_and_is_reported) {
    Loop loop;
    std::vector<reactor::ErrorContext> reports;
    loop.sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx); });
    loop.script().fails_at(kFd, loop.at(2s), EBADF);
    bool ran = false;
    loop.sched.read_wait(kFd, [&] { ran = true; });
    loop.sched.write_wait(kFd, [&] { ran = true; });
    loop.sched.run();
    BOOST_TEST(!ran);
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(reports[0].fd == kFd);
    BOOST_TEST(reports[0].message.find("closed while registered") != std::string::npos, reports[0].message);
    BOOST_TEST((loop.clock.elapsed() == 2s));
    CHECK_EMPTY(loop.sched);
}

// The futures layer needs nothing special: readable() on a scripted fd under
// with_timeout either completes at the scripted time or times out exactly.
BOOST_AUTO_TEST_CASE(futures_wait_on_scripted_fds) {
    for (auto [ready_at, timeout, ok] : {std::tuple{3s, 5s, true}, std::tuple{7s, 5s, false}}) {
        Loop loop;
        loop.script().readable_at(kFd, loop.at(ready_at));
        auto fut = futures::with_timeout(futures::readable(loop.sched, kFd), timeout);
        BOOST_REQUIRE(futures::run_until(loop.sched, fut));
        if (ok) {
            BOOST_CHECK_NO_THROW(fut.result());
        } else {
            BOOST_CHECK_THROW(fut.result(), futures::TimeoutError);
        }
        BOOST_TEST((loop.clock.elapsed() == (ok ? ready_at : timeout)));
        loop.sched.forget_fd(kFd);
        loop.sched.run();
        CHECK_EMPTY(loop.sched);
    }
}

// forget_fd (the owner closes it) ends the script for that number: what was
// not delivered is dropped, and the number is a real fd's again (here: not
// open, so the real backend refuses it).
BOOST_AUTO_TEST_CASE(forgetting_a_scripted_fd_makes_its_number_real_again) {
    Loop loop;
    loop.script().readable_at(kFd, loop.at(1s));
    loop.sched.read_wait(kFd, [] {});
    loop.sched.forget_fd(kFd);
    BOOST_TEST(!loop.script().scripts(kFd));
    BOOST_TEST(loop.script().pending() == 0u);
    BOOST_CHECK_EXCEPTION(loop.sched.read_wait(kFd, [] {}), std::invalid_argument,
                          [](const auto& e) { return std::string(e.what()).find("is not open") != std::string::npos; });
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(bad_declarations_are_refused_clearly) {
    Loop loop;
    auto says = [](const char* text) {
        return [text](const std::invalid_argument& e) { return std::string(e.what()).find(text) != std::string::npos; };
    };
    BOOST_CHECK_EXCEPTION(loop.script().readable_at(-1, loop.at(1s)), std::invalid_argument, says("invalid fd -1"));
    BOOST_CHECK_EXCEPTION(loop.script().fails_at(kFd, loop.at(1s), 0), std::invalid_argument, says("needs an errno"));
    // An fd the real backend watches cannot be scripted: its reports would mix.
    reactor_test::Pipe p;
    loop.sched.add_reader(p.r, [] {});
    BOOST_CHECK_EXCEPTION(loop.script().writable_at(p.r, loop.at(1s)), std::invalid_argument,
                          says("is watched by the real selector"));
    BOOST_TEST(!loop.script().scripts(p.r));
    BOOST_TEST(!loop.script().scripts(kFd));
    BOOST_TEST(loop.script().pending() == 0u);
    // Once it is no longer watched, it may be (a pipe filled beforehand, its
    // readiness on the script's schedule).
    BOOST_TEST(loop.sched.remove_reader(p.r));
    p.put();
    loop.script().readable_at(p.r, loop.at(4s));
    reactor::Duration read_at{};
    loop.sched.read_wait(p.r, [&] {
        p.take();
        read_at = loop.clock.elapsed();
    });
    loop.sched.run();
    BOOST_TEST((read_at == 4s));
    loop.sched.forget_fd(p.r);
    CHECK_EMPTY(loop.sched);
}
