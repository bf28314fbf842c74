// SPDX-License-Identifier: MIT
// The exception handler: a throwing callback is reported with the line that
// scheduled it and the loop goes on; the default handler prints one line on
// stderr; an empty handler restores the default; a throwing handler does not
// unwind the loop.
//
// Each case records what happened in a "bag", asserts exact order and counts,
// and ends by checking that the scheduler holds nothing (CHECK_EMPTY). CTest
// runs the suite once per selector backend (REACTOR_TEST_BACKEND). The loops
// run on virtual time (tests/support/virtual_time.hpp): their sleeps advance
// the clock, so they are instant and exact.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/check_empty.hpp"
#include "support/futures_util.hpp"
#include "support/stderr_capture.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::ErrorContext;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::StderrCapture;
using reactor_test::what;
using Bag = std::vector<std::string>;

}  // namespace

// ============================================================ exception handler

BOOST_AUTO_TEST_SUITE(exceptions)

BOOST_AUTO_TEST_CASE(throwing_callback_is_reported_and_the_loop_continues) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Bag bag;
    std::vector<ErrorContext> reports;
    s.set_exception_handler([&](const ErrorContext& ctx) {
        bag.push_back("handler");
        reports.push_back(ctx);
    });
    const unsigned soon_line = __LINE__; s.call_soon([&] { bag.push_back("a"); throw std::runtime_error("boom"); });
    s.call_soon([&] { bag.push_back("b"); });
    const unsigned timer_line = __LINE__; s.call_later(5ms, [&] { bag.push_back("t"); throw 42; });
    s.call_later(5ms, [&] { bag.push_back("t2"); });
    s.run();
    BOOST_TEST(bag == (Bag{"a", "handler", "b", "t", "handler", "t2"}), boost::test_tools::per_element());
    BOOST_REQUIRE(reports.size() == 2u);
    for (const auto& r : reports) {
        BOOST_TEST(r.origin_known);
        BOOST_TEST(std::string(r.origin.file_name()).ends_with("test_scheduler_exceptions.cpp"));
        BOOST_TEST(r.fd == -1);
        BOOST_TEST(bool(r.exception));
        BOOST_TEST(r.message.find("exception") != std::string::npos);
    }
    BOOST_TEST(reports[0].origin.line() == soon_line);
    BOOST_TEST(what(reports[0].exception) == "boom");
    BOOST_TEST(reports[1].origin.line() == timer_line);
    BOOST_TEST(what(reports[1].exception) == "?");
    // describe() is the default handler's line.
    const std::string line = reactor::describe(reports[0]);
    BOOST_TEST(line.find("test_scheduler_exceptions.cpp:" + std::to_string(soon_line)) != std::string::npos);
    BOOST_TEST(line.find("boom") != std::string::npos);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(default_handler_prints_one_line_on_stderr) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int after = 0;
    s.call_soon([] { throw std::runtime_error("kaboom-4711"); });
    s.call_soon([&] { ++after; });
    std::string text;
    {
        StderrCapture capture;
        s.run();
        text = capture.finish();
    }
    BOOST_TEST_MESSAGE("captured: " << text);
    BOOST_TEST(after == 1);
    BOOST_TEST(text.find("kaboom-4711") != std::string::npos);
    BOOST_TEST(text.find("exception in callback") != std::string::npos);
    BOOST_TEST(text.find("test_scheduler_exceptions.cpp") != std::string::npos);
    BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 1);
    BOOST_TEST(text.ends_with("\n"));
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(empty_handler_restores_the_default) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int custom = 0;
    s.set_exception_handler([&](const ErrorContext&) { ++custom; });
    s.set_exception_handler({});
    s.call_soon([] { throw std::logic_error("restored-default"); });
    std::string text;
    {
        StderrCapture capture;
        s.run();
        text = capture.finish();
    }
    BOOST_TEST(custom == 0);
    BOOST_TEST(text.find("restored-default") != std::string::npos);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(throwing_handler_does_not_unwind_the_loop) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Bag bag;
    s.set_exception_handler([&](const ErrorContext&) {
        bag.push_back("handler");
        throw std::runtime_error("handler failed");
    });
    s.call_soon([&] { bag.push_back("a"); throw std::runtime_error("original-error"); });
    s.call_soon([&] { bag.push_back("b"); });
    s.call_later(1ms, [&] { bag.push_back("later"); });
    std::string text;
    {
        StderrCapture capture;
        BOOST_CHECK_NO_THROW(s.run());
        text = capture.finish();
    }
    BOOST_TEST(bag == (Bag{"a", "handler", "b", "later"}), boost::test_tools::per_element());
    // The original error still reaches stderr (through the default handler).
    BOOST_TEST(text.find("original-error") != std::string::npos);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()
