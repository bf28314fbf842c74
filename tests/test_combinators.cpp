// SPDX-License-Identifier: MIT
// Combinator and leaf-future tests: when_all (vector and tuple), when_any,
// with_timeout, sleep/sleep_until on a virtual clock, readable/writable on pipes.
// The policy under test: the first error or cancellation decides, and every
// input still pending is then cancelled; later errors are not lost.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <futures/futures.hpp>

#include "support/fds.hpp"
#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::CancelledError;
using futures::Future;
using futures::TimeoutError;
using reactor_test::Reports;
using reactor_test::Pipe;
using reactor_test::what;
using Bag = std::vector<std::string>;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;

// A sleep that then yields `value`.
Future<int> value_after(reactor::Scheduler& s, reactor::Duration d, int value) {
    return futures::sleep(s, d).then([value] { return value; });
}

Future<int> error_after(reactor::Scheduler& s, reactor::Duration d, std::string message) {
    return futures::sleep(s, d).then([message]() -> int { throw std::runtime_error(message); });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(leaves)

BOOST_AUTO_TEST_CASE(sleep_completes_at_its_deadline_never_before) {
    VirtualLoop loop(backend_under_test());
    auto start = loop.clock.now();
    std::vector<reactor::Duration> seen;
    Future<void> a = futures::sleep(loop.sched, 2s);
    Future<void> b = futures::sleep(loop.sched, 500ms);
    a.add_done_callback([&] { seen.push_back(loop.sched.now() - start); });
    b.add_done_callback([&] { seen.push_back(loop.sched.now() - start); });
    loop.sched.run_once();
    BOOST_TEST(!a.done());
    loop.sched.run();
    BOOST_TEST(seen.size() == 2u);
    BOOST_TEST((seen[0] == 500ms));
    BOOST_TEST((seen[1] == 2s));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(sleep_accepts_any_duration_and_negative_means_now) {
    VirtualLoop loop(backend_under_test());
    auto start = loop.clock.now();
    Future<void> a = futures::sleep(loop.sched, std::chrono::duration<double>(0.25));
    Future<void> b = futures::sleep(loop.sched, -5s);
    Future<void> c = futures::sleep_until(loop.sched, start + 3s);
    loop.sched.run_once();
    BOOST_TEST(b.done());
    BOOST_TEST(!a.done());
    loop.sched.run();
    BOOST_TEST((loop.clock.now() - start == 3s));
    BOOST_TEST(a.done());
    BOOST_TEST(c.done());
    CHECK_EMPTY(loop.sched);
}

// issue 47: seconds as a double, as asyncio.sleep(0.25) takes them, on
// virtual time: exact for what a double says (0.1 is 100 ms, not 100 ms +
// 1 ns), rounded up below the clock's tick, +infinity as "never".
BOOST_AUTO_TEST_CASE(sleep_takes_seconds_as_a_double) {
    VirtualLoop loop(backend_under_test());
    auto start = loop.clock.now();
    std::vector<reactor::Duration> seen;
    Future<void> a = futures::sleep(loop.sched, 0.1);
    Future<void> b = futures::sleep(loop.sched, 1.5);
    Future<void> c = futures::sleep(loop.sched, 2);  // an int is seconds too
    Future<void> never = futures::sleep(loop.sched, std::numeric_limits<double>::infinity());
    for (Future<void>* f : {&a, &b, &c}) f->add_done_callback([&] { seen.push_back(loop.sched.now() - start); });
    loop.sched.run_for(10s);
    BOOST_TEST((seen == std::vector<reactor::Duration>{100ms, 1500ms, 2s}));
    BOOST_TEST(!never.done());
    never.cancel();
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(from_seconds_rounds_up_saturates_and_refuses_what_is_no_duration) {
    using reactor::Duration;
    using reactor::from_seconds;
    BOOST_TEST((from_seconds(0.1) == 100ms));
    BOOST_TEST((from_seconds(0.001) == 1ms));
    BOOST_TEST((from_seconds(2.5) == 2500ms));
    BOOST_TEST((from_seconds(0.0) == Duration::zero()));
    BOOST_TEST((from_seconds(-0.0) == Duration::zero()));
    BOOST_TEST((from_seconds(1e-12) == 1ns));  // never truncated to nothing
    BOOST_TEST((from_seconds(1.0000000015) == 1000000002ns));  // up, not down
    BOOST_TEST((from_seconds(std::numeric_limits<double>::infinity()) == Duration::max()));
    BOOST_TEST((from_seconds(1e300) == Duration::max()));
    auto refused = [](double s, const std::string& name, const std::string& shown) {
        try {
            (void)from_seconds(s, name);
            BOOST_ERROR("from_seconds(" << s << ") accepted");
        } catch (const std::invalid_argument& e) {
            BOOST_TEST(std::string(e.what()) == name + " must be a number of seconds >= 0, not " + shown);
        }
    };
    refused(-1.0, "sleep: delay", "-1");
    refused(-1e-9, "x", "-1e-09");
    refused(std::numeric_limits<double>::quiet_NaN(), "with_timeout: delay", "nan");
    refused(-std::numeric_limits<double>::infinity(), "drain", "-inf");
}

BOOST_AUTO_TEST_CASE(a_negative_or_nan_double_delay_is_refused_naming_the_parameter) {
    VirtualLoop loop(backend_under_test());
    const double nan = std::numeric_limits<double>::quiet_NaN();
    auto names = [](const std::string& name) {
        return [name](const std::invalid_argument& e) { return std::string(e.what()).starts_with(name + " must be"); };
    };
    BOOST_CHECK_EXCEPTION((void)futures::sleep(loop.sched, -0.5), std::invalid_argument, names("sleep: delay"));
    BOOST_CHECK_EXCEPTION((void)futures::sleep(loop.sched, nan), std::invalid_argument, names("sleep: delay"));
    Future<int> f = futures::make_ready_future(loop.sched, 1);
    BOOST_CHECK_EXCEPTION((void)futures::with_timeout(f, -1.0), std::invalid_argument, names("with_timeout: delay"));
    BOOST_CHECK_EXCEPTION((void)futures::with_timeout(f, nan), std::invalid_argument, names("with_timeout: delay"));
    BOOST_CHECK_EXCEPTION((void)futures::with_timeout(f, nan, [] { return std::exception_ptr(); }),
                          std::invalid_argument, names("with_timeout: delay"));
    BOOST_CHECK_EXCEPTION((void)futures::run_until(loop.sched, f, -2.0), std::invalid_argument,
                          names("run_until: limit"));
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_a_sleep_cancels_its_timer) {
    VirtualLoop loop(backend_under_test());
    Future<void> s = futures::sleep(loop.sched, 1h);
    BOOST_TEST(loop.sched.timer_count() == 1u);
    BOOST_TEST(s.cancel());
    BOOST_TEST(loop.sched.timer_count() == 0u);
    BOOST_TEST(s.cancelled());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(readable_and_writable_on_a_pipe) {
    VirtualLoop loop(backend_under_test());
    Pipe p;
    Bag bag;
    Future<void> r = futures::readable(loop.sched, p.r);
    Future<void> w = futures::writable(loop.sched, p.w);
    r.add_done_callback([&] { bag.push_back("readable"); });
    w.add_done_callback([&] {
        bag.push_back("writable");
        BOOST_TEST(::write(p.w, "x", 1) == 1);
    });
    loop.sched.run();
    BOOST_TEST(bag == (Bag{"writable", "readable"}));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_readable_removes_the_waiter) {
    VirtualLoop loop(backend_under_test());
    Pipe p;
    Future<void> r = futures::readable(loop.sched, p.r);
    BOOST_TEST(loop.sched.waiter_count() == 1u);
    BOOST_TEST(r.cancel());
    BOOST_TEST(loop.sched.waiter_count() == 0u);
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(fd_closed_while_waited_on_cancels_the_future_and_is_reported) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    Pipe p;
    Future<void> r = futures::readable(loop.sched, p.r);
    p.r.close();
    loop.sched.run();
    BOOST_TEST(r.cancelled());
    BOOST_CHECK_EXCEPTION(r.result(), CancelledError,
                          [](const auto& e) { return std::string(e.what()).find("dropped this fd wait") != std::string::npos; });
    BOOST_TEST(reports.size() == 1u);  // the Scheduler's own report of the closed fd
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_replaced_fd_wait_cancels_the_older_future) {
    VirtualLoop loop(backend_under_test());
    Pipe p;
    Future<void> first = futures::readable(loop.sched, p.r);
    Future<void> second = futures::readable(loop.sched, p.r);
    BOOST_TEST(first.cancelled());
    BOOST_TEST(!second.done());
    BOOST_TEST(second.cancel());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(bad_fd_is_refused_at_once) {
    VirtualLoop loop(backend_under_test());
    BOOST_CHECK_THROW((void)futures::readable(loop.sched, -1), std::invalid_argument);
    BOOST_CHECK_THROW((void)futures::writable(loop.sched, -3), std::invalid_argument);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(when_all_)

BOOST_AUTO_TEST_CASE(values_in_input_order_once_the_last_is_done) {
    VirtualLoop loop(backend_under_test());
    auto start = loop.clock.now();
    Future<std::vector<int>> all = futures::when_all(std::vector<Future<int>>{
        value_after(loop.sched, 1s, 10), value_after(loop.sched, 3s, 30), value_after(loop.sched, 2s, 20)});
    loop.sched.run();
    BOOST_TEST(all.result() == (std::vector<int>{10, 30, 20}));
    BOOST_TEST((loop.clock.now() - start == 3s));  // concurrent: the longest, not the sum
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(void_inputs_and_empty_vectors) {
    VirtualLoop loop(backend_under_test());
    Future<void> all = futures::when_all(std::vector<Future<void>>{futures::sleep(loop.sched, 1s), futures::sleep(loop.sched, 2s)});
    Future<std::vector<int>> none = futures::when_all(loop.sched, std::vector<Future<int>>{});
    BOOST_TEST(none.done());
    BOOST_TEST(none.result().empty());
    BOOST_CHECK_THROW((void)futures::when_all(std::vector<Future<int>>{}), std::invalid_argument);
    BOOST_CHECK_THROW((void)futures::when_all(std::vector<Future<int>>{Future<int>()}), futures::InvalidStateError);
    loop.sched.run();
    BOOST_TEST(all.done());
    BOOST_CHECK_NO_THROW(all.result());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(first_error_wins_and_the_rest_are_cancelled) {
    VirtualLoop loop(backend_under_test());
    auto start = loop.clock.now();
    Future<int> slow = value_after(loop.sched, 10s, 1);
    Future<int> bad = error_after(loop.sched, 1s, "first");
    Future<int> also_bad = error_after(loop.sched, 2s, "second");
    Future<std::vector<int>> all = futures::when_all(std::vector<Future<int>>{slow, bad, also_bad});
    loop.sched.run();
    BOOST_TEST(what(all.exception()) == "first");
    BOOST_TEST((loop.clock.now() - start == 1s));  // decided at once, not at 10 s
    BOOST_TEST(slow.cancelled());
    BOOST_TEST(also_bad.cancelled());
    BOOST_TEST(loop.sched.timer_count() == 0u);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_later_error_is_not_lost) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    {
        // Both fail in the same iteration: the second cannot be cancelled any more.
        Future<int> a(loop.sched), b(loop.sched);
        Future<std::vector<int>> all = futures::when_all(std::vector<Future<int>>{a, b});
        a.set_exception(std::runtime_error("a"));
        b.set_exception(std::runtime_error("b"));
        loop.sched.run();
        BOOST_TEST(what(all.exception()) == "a");
    }
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(what(reports[0].exception) == "b");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelled_input_cancels_the_result_and_cancelling_the_result_cancels_inputs) {
    VirtualLoop loop(backend_under_test());
    {
        Future<int> a(loop.sched), b(loop.sched);
        auto all = futures::when_all(std::vector<Future<int>>{a, b});
        a.cancel();
        loop.sched.run();
        BOOST_TEST(all.cancelled());
        BOOST_TEST(b.cancelled());
    }
    {
        Future<void> s1 = futures::sleep(loop.sched, 1s), s2 = futures::sleep(loop.sched, 2s);
        auto all = futures::when_all(std::vector<Future<void>>{s1, s2});
        BOOST_TEST(all.cancel());
        BOOST_TEST(s1.cancelled());
        BOOST_TEST(s2.cancelled());
        BOOST_TEST(loop.sched.timer_count() == 0u);
        loop.sched.run();
    }
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(variadic_form_gives_a_tuple) {
    VirtualLoop loop(backend_under_test());
    auto all = futures::when_all(value_after(loop.sched, 2s, 7), futures::sleep(loop.sched, 1s),
                                 futures::make_ready_future(loop.sched, std::string("s")));
    static_assert(std::is_same_v<decltype(all), Future<std::tuple<int, std::monostate, std::string>>>);
    loop.sched.run();
    auto [n, nothing, s] = all.result();
    (void)nothing;
    BOOST_TEST(n == 7);
    BOOST_TEST(s == "s");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(variadic_form_fails_fast_too) {
    VirtualLoop loop(backend_under_test());
    Future<void> slow = futures::sleep(loop.sched, 1h);
    auto all = futures::when_all(slow, error_after(loop.sched, 1s, "tuple error"));
    loop.sched.run();
    BOOST_TEST(what(all.exception()) == "tuple error");
    BOOST_TEST(slow.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(when_any_)

BOOST_AUTO_TEST_CASE(first_to_finish_wins_the_rest_are_cancelled) {
    VirtualLoop loop(backend_under_test());
    std::vector<Future<int>> inputs{value_after(loop.sched, 3s, 3), value_after(loop.sched, 1s, 1),
                                    value_after(loop.sched, 2s, 2)};
    auto any = futures::when_any(inputs);
    loop.sched.run();
    BOOST_TEST(any.result().first == 1u);
    BOOST_TEST(any.result().second == 1);
    BOOST_TEST(inputs[0].cancelled());
    BOOST_TEST(inputs[2].cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(an_error_can_win_and_void_gives_the_index) {
    VirtualLoop loop(backend_under_test());
    auto bad = futures::when_any(std::vector<Future<int>>{value_after(loop.sched, 2s, 1), error_after(loop.sched, 1s, "fast failure")});
    auto idx = futures::when_any(std::vector<Future<void>>{futures::sleep(loop.sched, 5s), futures::sleep(loop.sched, 4s)});
    loop.sched.run();
    BOOST_TEST(what(bad.exception()) == "fast failure");
    BOOST_TEST(idx.result() == 1u);
    BOOST_CHECK_THROW((void)futures::when_any(std::vector<Future<int>>{}), std::invalid_argument);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(with_timeout_)

BOOST_AUTO_TEST_CASE(fires_with_timeout_error_and_cancels_the_inner_future) {
    VirtualLoop loop(backend_under_test());
    auto start = loop.clock.now();
    Future<int> slow = value_after(loop.sched, 10s, 1);
    Future<int> bounded = futures::with_timeout(slow, 2s);
    loop.sched.run();
    BOOST_CHECK_EXCEPTION(bounded.result(), TimeoutError, [](const TimeoutError& e) {
        return std::string(e.what()).find("2 s") != std::string::npos;
    });
    BOOST_TEST(slow.cancelled());
    BOOST_TEST((loop.clock.now() - start == 2s));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(completes_like_the_inner_future_in_time_and_drops_the_timer) {
    VirtualLoop loop(backend_under_test());
    auto start = loop.clock.now();
    Future<int> fast = value_after(loop.sched, 1s, 5);
    Future<int> bounded = futures::with_timeout(fast, 1h);
    Future<int> failing = futures::with_timeout(error_after(loop.sched, 1s, "inner"), 1h);
    loop.sched.run();  // would run for an hour if the timers stayed
    BOOST_TEST(bounded.result() == 5);
    BOOST_TEST(what(failing.exception()) == "inner");
    BOOST_TEST((loop.clock.now() - start == 1s));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(takes_seconds_as_a_double) {
    VirtualLoop loop(backend_under_test());
    auto start = loop.clock.now();
    Future<int> slow = value_after(loop.sched, 10s, 1);
    Future<int> bounded = futures::with_timeout(slow, 2.5);
    Future<int> own = futures::with_timeout(value_after(loop.sched, 10s, 2), 0.25,
                                            [] { return std::make_exception_ptr(std::runtime_error("mine")); });
    Future<int> in_time = futures::with_timeout(value_after(loop.sched, 1s, 3), std::numeric_limits<double>::infinity());
    loop.sched.run();
    BOOST_CHECK_THROW(bounded.result(), TimeoutError);
    BOOST_TEST(slow.cancelled());
    BOOST_TEST(what(own.exception()) == "mine");
    BOOST_TEST(in_time.result() == 3);
    BOOST_TEST((loop.clock.now() - start == 2500ms));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_the_result_cancels_inner_and_timer) {
    VirtualLoop loop(backend_under_test());
    Future<void> inner = futures::sleep(loop.sched, 1h);
    Future<void> bounded = futures::with_timeout(inner, 1s);
    BOOST_TEST(loop.sched.timer_count() == 2u);
    BOOST_TEST(bounded.cancel());
    BOOST_TEST(inner.cancelled());
    BOOST_TEST(loop.sched.timer_count() == 0u);
    loop.sched.run();
    BOOST_TEST(bounded.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(bounds_an_fd_wait_and_removes_the_waiter) {
    VirtualLoop loop(backend_under_test());
    Pipe p;
    Future<void> r = futures::readable(loop.sched, p.r);
    Future<void> bounded = futures::with_timeout(r, 100ms);
    loop.sched.run();
    BOOST_CHECK_THROW(bounded.result(), TimeoutError);
    BOOST_TEST(r.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(real_clock_short_timeout) {
    // The one test on the real clock: a 20 ms timeout around a 5 s sleep.
    reactor::Scheduler sched;
    auto start = reactor::Clock::now();
    Future<void> bounded = futures::with_timeout(futures::sleep(sched, 5s), 20ms);
    BOOST_CHECK_THROW(futures::run_until_complete(sched, bounded), TimeoutError);
    auto took = reactor::Clock::now() - start;
    BOOST_TEST((took >= 20ms));
    BOOST_TEST((took < 2s));
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_SUITE_END()
