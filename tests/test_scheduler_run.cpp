// SPDX-License-Identifier: MIT
// Running the loop: run() returns when there is no work, run_forever() only on
// stop(), stop() ends the current iteration and does not leak into later
// runs, run_once() is exactly one iteration, running the loop from inside a
// callback is refused, and a selector that throws leaves the loop usable.
// (run_for and run_until have their own suites.)
//
// Each case records what happened in a "bag", asserts exact order and counts,
// and ends by checking that the scheduler holds nothing (CHECK_EMPTY). CTest
// runs the suite once per selector backend (REACTOR_TEST_BACKEND). The loops
// run on virtual time (tests/support/virtual_time.hpp): their sleeps advance
// the clock, so they are instant and exact. (The throwing selector's case has
// a loop of its own, on select.)
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <reactor/scheduler.hpp>
#include <reactor/selector.hpp>

#include "support/check_empty.hpp"
#include "support/fds.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::ErrorContext;
using reactor::Handle;
using reactor::Scheduler;
using reactor::TimePoint;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::Pipe;
using reactor_test::TimeoutRecordingLoop;
using Bag = std::vector<std::string>;

}  // namespace

// ============================================================ running

BOOST_AUTO_TEST_SUITE(running)

BOOST_AUTO_TEST_CASE(run_returns_when_there_is_no_work) {
    TimeoutRecordingLoop loop(backend_under_test());
    auto& s = loop.sched;
    s.run();  // nothing at all: returns at once, never blocks
    BOOST_TEST(loop.selector->timeouts.empty());
    const TimePoint t0 = loop.clock.now();
    Bag bag;
    s.call_later(30ms, [&] { bag.push_back("30"); });
    s.call_later(10ms, [&] {
        bag.push_back("10");
        s.call_soon([&] { bag.push_back("soon"); });
    });
    s.run();
    BOOST_TEST(bag == (Bag{"10", "soon", "30"}), boost::test_tools::per_element());
    BOOST_TEST((loop.clock.now() - t0 == 30ms));  // it slept exactly as long as needed
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(run_forever_until_stop_from_a_callback) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    int ticks = 0;
    std::function<void()> tick = [&] {
        if (++ticks == 3) {
            s.stop();
        } else {
            s.call_later(10ms, [&] { tick(); });
        }
    };
    s.call_later(10ms, [&] { tick(); });
    Handle far = s.call_later(1h, [] {});  // work is left: only stop() ends run_forever
    s.run_forever();
    BOOST_TEST(ticks == 3);
    BOOST_TEST((loop.clock.now() - t0 == 30ms));
    BOOST_TEST(s.timer_count() == 1u);
    BOOST_TEST(far.cancel());
    CHECK_EMPTY(s);
}

// stop() makes run() return after the current iteration: the rest of the
// batch still runs, what the batch scheduled waits for the next run.
BOOST_AUTO_TEST_CASE(stop_from_a_callback_finishes_the_current_iteration) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Bag bag;
    s.call_soon([&] {
        bag.push_back("a");
        s.stop();
        s.call_soon([&] { bag.push_back("next"); });
    });
    s.call_soon([&] { bag.push_back("b"); });
    s.run();
    BOOST_TEST(bag == (Bag{"a", "b"}), boost::test_tools::per_element());
    BOOST_TEST(s.ready_count() == 1u);
    s.run();  // stop() was consumed: run works again
    BOOST_TEST(bag == (Bag{"a", "b", "next"}), boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

// Regression: a stop() made inside run_once() stayed pending, so the next
// run() returned at once without running anything, and the next run_once()
// polled instead of waiting for its timer.
BOOST_AUTO_TEST_CASE(stop_inside_run_once_does_not_leak_into_later_runs) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Bag bag;
    s.call_soon([&] {
        bag.push_back("stopper");
        s.stop();
    });
    s.run_once();
    s.call_soon([&] { bag.push_back("soon"); });
    s.run();
    BOOST_TEST(bag == (Bag{"stopper", "soon"}), boost::test_tools::per_element());
    s.call_soon([&] { s.stop(); });
    s.run_once();
    s.call_later(10ms, [&] { bag.push_back("timer"); });
    s.run_once();  // must wait for the timer, not poll and return
    BOOST_TEST(bag == (Bag{"stopper", "soon", "timer"}), boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(run_once_is_exactly_one_iteration) {
    TimeoutRecordingLoop loop(backend_under_test());
    auto& s = loop.sched;
    auto& timeouts = loop.selector->timeouts;
    const std::size_t syncs = loop.selector->has_pending_changes() ? 1 : 0;  // see the test above
    const TimePoint t0 = loop.clock.now();
    Bag bag;
    s.call_later(50ms, [&] { bag.push_back("timer"); });
    s.call_soon([&] {
        bag.push_back("soon");
        s.call_soon([&] { bag.push_back("soon 2"); });
    });
    s.run_once();  // something ready: polls without sleeping
    BOOST_TEST(bag == (Bag{"soon"}), boost::test_tools::per_element());
    BOOST_TEST((loop.clock.now() == t0));
    s.run_once();
    BOOST_TEST(bag == (Bag{"soon", "soon 2"}), boost::test_tools::per_element());
    s.run_once();  // nothing ready: sleeps until the timer and fires it
    BOOST_TEST(bag == (Bag{"soon", "soon 2", "timer"}), boost::test_tools::per_element());
    BOOST_TEST((loop.clock.now() - t0 == 50ms));
    // The first two iterations had nothing to wait for and no fd to watch:
    // they skipped the selector (but for epoll's first sync). The third slept in it.
    BOOST_REQUIRE(timeouts.size() == syncs + 1);
    BOOST_TEST((timeouts.back() == std::chrono::nanoseconds(50ms)));
    CHECK_EMPTY(s);
}

// run_once() from inside a callback would swap the ready queue under the batch
// being iterated. Running the loop re-entrantly is a contract violation: it
// throws std::logic_error, which the callback's exception boundary reports,
// and the outer loop carries on unharmed.
BOOST_AUTO_TEST_CASE(running_the_loop_from_inside_a_callback_is_refused) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Bag bag;
    std::vector<std::string> errors;
    s.set_exception_handler([&](const ErrorContext& ctx) {
        try {
            std::rethrow_exception(ctx.exception);
        } catch (const std::logic_error& e) {
            errors.emplace_back(e.what());
        } catch (...) {
            errors.emplace_back("unexpected exception type");
        }
    });
    s.call_soon([&] {
        bag.push_back("a");
        s.call_soon([&] { bag.push_back("queued by a"); });
        s.run_once();
    });
    s.call_soon([&] {
        bag.push_back("b");
        s.run();
    });
    s.call_soon([&] {
        bag.push_back("c");
        s.run_forever();
    });
    s.call_later(1ms, [&] {
        bag.push_back("timer");
        s.run_once();
    });
    s.call_soon([&] { bag.push_back("d"); });
    s.run();
    BOOST_TEST(bag == (Bag{"a", "b", "c", "d", "queued by a", "timer"}), boost::test_tools::per_element());
    BOOST_REQUIRE(errors.size() == 4u);
    for (const auto& e : errors) BOOST_TEST(e.find("already running") != std::string::npos, e);
    CHECK_EMPTY(s);
}

// If the selector throws, the loop is not left marked as running: run_once()
// from outside still works afterwards.
class ThrowingSelector final : public reactor::Selector {
public:
    explicit ThrowingSelector(bool* armed) : armed_(armed), inner_(reactor::make_select_selector()) {}
    std::string_view name() const noexcept override { return "throwing"; }
    void set_interest(int fd, reactor::Interest interest) override { inner_->set_interest(fd, interest); }
    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<reactor::FdEvent>& out) override {
        if (*armed_) throw std::runtime_error("selector failure");
        inner_->wait(timeout, out);
    }

private:
    bool* armed_;
    std::unique_ptr<reactor::Selector> inner_;
};

BOOST_AUTO_TEST_CASE(selector_failure_leaves_the_loop_usable) {
    bool armed = true;
    Scheduler::Options options;
    options.selector = std::make_unique<ThrowingSelector>(&armed);
    Scheduler s(std::move(options));
    int ran = 0;
    // A watched fd makes every iteration call the selector, even one whose
    // timer is already due (with no fd watched, a zero timeout skips it).
    Pipe idle;
    s.add_reader(idle.r.get(), [] {});
    s.call_later(1ms, [&] {
        ++ran;
        s.remove_reader(idle.r.get());
    });
    BOOST_CHECK_THROW(s.run_once(), std::runtime_error);
    BOOST_CHECK_THROW(s.run(), std::runtime_error);
    armed = false;
    BOOST_CHECK_NO_THROW(s.run());
    BOOST_TEST(ran == 1);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

// Options are copyable: one set builds several Schedulers. A selector
// instance in them can belong to one Scheduler only: the second throws.
BOOST_AUTO_TEST_CASE(options_build_several_schedulers_and_a_selector_instance_only_one) {
    Scheduler::Options options;
    options.backend = reactor_test::backend_under_test();
    Scheduler first(options);
    Scheduler second(options);
    int ran = 0;
    first.call_soon([&] { ++ran; });
    second.call_soon([&] { ++ran; });
    first.run();
    second.run();
    BOOST_TEST(ran == 2);
    BOOST_TEST(second.selector().name() == first.selector().name());

    Scheduler::Options with_instance = options;
    with_instance.selector = reactor::make_selector(reactor_test::backend_under_test());
    const Scheduler::Options copy = with_instance;
    Scheduler owner(with_instance);
    BOOST_CHECK_THROW(Scheduler{copy}, std::logic_error);
    owner.call_soon([&] { ++ran; });
    owner.run();
    BOOST_TEST(ran == 3);
}
