// SPDX-License-Identifier: MIT
// futures::run_until: running the loop until one future is done, with or
// without a bound on the loop's clock. CTest runs the suite once per selector
// backend. Every case runs on virtual time, so bounds are exact.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/futures.hpp>

#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::Future;
using futures::InvalidStateError;
using reactor::TimePoint;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using Bag = std::vector<std::string>;

}  // namespace

// The future completes; what was scheduled after it stays scheduled.
BOOST_AUTO_TEST_CASE(runs_until_the_future_is_done_and_no_further) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Bag bag;
    Future<int> answer(s);
    s.call_later(30ms, [&] {
        bag.push_back("complete");
        answer.set_result(42);
    });
    s.call_later(30ms, [&] { bag.push_back("same batch"); });
    s.call_later(100ms, [&] { bag.push_back("later"); });
    BOOST_TEST(futures::run_until(s, answer));
    BOOST_TEST(answer.result() == 42);
    BOOST_TEST(bag == (Bag{"complete", "same batch"}), boost::test_tools::per_element());
    BOOST_TEST((loop.clock.now() - t0 == 30ms));
    BOOST_TEST(s.timer_count() == 1u);
    s.run();
    BOOST_TEST(bag.back() == "later");
    CHECK_EMPTY(s);
}

// The future's own error stays in the future: run_until only waits.
BOOST_AUTO_TEST_CASE(a_failed_or_cancelled_future_is_done) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Future<void> failing(s);
    s.call_later(10ms, [&] { failing.set_exception(std::runtime_error("no")); });
    BOOST_TEST(futures::run_until(s, failing));
    BOOST_CHECK_THROW(failing.result(), std::runtime_error);
    Future<void> cancelled(s);
    s.call_later(10ms, [&] { cancelled.cancel(); });
    BOOST_TEST(futures::run_until(s, cancelled, 1s));
    BOOST_TEST(cancelled.cancelled());
    s.run();
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(the_bound_ends_the_run_with_the_future_pending) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Future<int> slow(s);
    s.call_later(500ms, [&] { slow.set_result(7); });
    BOOST_TEST(!futures::run_until(s, slow, 100ms));
    BOOST_TEST(!slow.done());
    BOOST_TEST((loop.clock.now() - t0 == 100ms));
    BOOST_TEST(futures::run_until(s, slow, 1s));
    BOOST_TEST(slow.result() == 7);
    BOOST_TEST((loop.clock.now() - t0 == 500ms));
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(the_bound_in_seconds_as_a_double) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Future<int> slow(s);
    s.call_later(500ms, [&] { slow.set_result(7); });
    BOOST_TEST(!futures::run_until(s, slow, 0.1));
    BOOST_TEST((loop.clock.now() - t0 == 100ms));
    BOOST_TEST(futures::run_until(s, slow, std::numeric_limits<double>::infinity()));  // no bound
    BOOST_TEST((loop.clock.now() - t0 == 500ms));
    BOOST_CHECK_THROW(futures::run_until(s, slow, -1.0), std::invalid_argument);
    CHECK_EMPTY(s);
}

// Regression guard: the done-callback that ends run_until is removed with
// it, so completing the future later does not stop an unrelated run.
BOOST_AUTO_TEST_CASE(a_bounded_run_leaves_no_stop_behind) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Bag bag;
    Future<void> f(s);
    s.call_later(500ms, [&] {
        bag.push_back("complete");
        f.set_result();
    });
    s.call_later(600ms, [&] { bag.push_back("after"); });
    BOOST_TEST(!futures::run_until(s, f, 100ms));
    s.run();  // would end after "complete" if the stop were still attached
    BOOST_TEST(bag == (Bag{"complete", "after"}), boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(an_already_done_future_returns_at_once) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Future<int> done(s);
    done.set_result(1);
    s.run();  // its (no) callbacks
    int runs = 0;
    s.call_soon([&] { ++runs; });
    BOOST_TEST(futures::run_until(s, done));
    BOOST_TEST(futures::run_until(s, done, 0s));
    BOOST_TEST(runs == 0);  // nothing ran
    s.run();
    BOOST_TEST(runs == 1);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(stop_ends_the_run_with_the_future_pending) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Future<void> f(s);
    s.call_later(10ms, [&] { s.stop(); });
    s.call_later(20ms, [&] { f.set_result(); });
    BOOST_TEST(!futures::run_until(s, f));
    BOOST_TEST(!f.done());
    BOOST_TEST(futures::run_until(s, f));
    CHECK_EMPTY(s);
}

// Nothing is left that could complete the future: an error, not a hang.
BOOST_AUTO_TEST_CASE(running_out_of_work_throws_invalid_state_error) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const int line = __LINE__ + 1;
    Future<int> orphan(s);
    s.call_later(10ms, [] {});
    try {
        futures::run_until(s, orphan, 1h);
        BOOST_FAIL("run_until returned");
    } catch (const InvalidStateError& e) {
        const std::string what = e.what();
        BOOST_TEST(what.find("ran out of work") != std::string::npos, what);
        BOOST_TEST(what.find("test_run_until.cpp:" + std::to_string(line)) != std::string::npos, what);
    }
    BOOST_CHECK_THROW(futures::run_until(s, orphan), InvalidStateError);
    orphan.cancel();
    s.run();
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(a_future_of_another_scheduler_is_refused) {
    VirtualLoop loop(backend_under_test());
    VirtualLoop other(backend_under_test());
    Future<void> elsewhere(other.sched);
    BOOST_CHECK_THROW(futures::run_until(loop.sched, elsewhere), std::invalid_argument);
    BOOST_CHECK_THROW(futures::run_until(loop.sched, elsewhere, 1s), std::invalid_argument);
    elsewhere.cancel();
    other.sched.run();
    CHECK_EMPTY(loop.sched);
    CHECK_EMPTY(other.sched);
}

BOOST_AUTO_TEST_CASE(from_inside_a_callback_it_is_refused) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Future<void> f(s);
    bool refused = false;
    s.call_soon([&] {
        try {
            futures::run_until(s, f, 1s);
        } catch (const std::logic_error&) {
            refused = true;
        }
        f.set_result();
    });
    s.run();
    BOOST_TEST(refused);
    BOOST_TEST(f.done());
    CHECK_EMPTY(s);
}

// A task's join handle is a future like any other.
BOOST_AUTO_TEST_CASE(waits_for_a_task) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    struct Sleeper {
        reactor::Scheduler* sched;
        Future<void> nap;
        int step = 0;
        futures::Step<int> resume() {
            if (step++ == 0) return nap = futures::sleep(*sched, 50ms);
            nap.result();
            return 5;
        }
    };
    Future<int> task = futures::spawn(s, Sleeper{&s, {}});
    BOOST_TEST(!futures::run_until(s, task, 20ms));
    BOOST_TEST(futures::run_until(s, task, 1s));
    BOOST_TEST(task.result() == 5);
    CHECK_EMPTY(s);
}
