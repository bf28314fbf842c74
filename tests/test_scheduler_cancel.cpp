// SPDX-License-Identifier: MIT
// Handles and the lifetime of callbacks: cancel() (true once, false after the
// callback ran or from inside it, never reaching a slot's next user), cancel
// from inside a batch, mass cancellation and the heap purge, and that
// cancelling or destroying the Scheduler releases a callback's captures at
// once, even captures that schedule more work as they are destroyed.
//
// Each case records what happened in a "bag", asserts exact order and counts,
// and ends by checking that the scheduler holds nothing (CHECK_EMPTY). CTest
// runs the suite once per selector backend (REACTOR_TEST_BACKEND). The loops
// run on virtual time (tests/support/virtual_time.hpp): their sleeps advance
// the clock, so they are instant and exact.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/check_empty.hpp"
#include "support/fds.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::Handle;
using reactor::Scheduler;
using reactor::TimePoint;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::Pipe;
using Bag = std::vector<std::string>;

}  // namespace

// ============================================================ cancel

BOOST_AUTO_TEST_SUITE(cancel)

BOOST_AUTO_TEST_CASE(cancel_returns_true_once_then_false) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int ran = 0;
    Handle soon = s.call_soon([&] { ++ran; });
    Handle timer = s.call_later(5ms, [&] { ++ran; });
    BOOST_TEST(soon.is_pending());
    BOOST_TEST(timer.is_pending());
    BOOST_TEST(soon.cancel());
    BOOST_TEST(!soon.cancel());
    BOOST_TEST(timer.cancel());
    BOOST_TEST(!timer.cancel());
    BOOST_TEST(!soon.is_pending());
    BOOST_TEST(!timer.is_pending());
    BOOST_TEST(s.ready_count() == 0u);
    BOOST_TEST(s.timer_count() == 0u);
    s.run();
    BOOST_TEST(ran == 0);
    Handle none;  // a default Handle names nothing
    BOOST_TEST(!none.cancel());
    BOOST_TEST(!none.is_pending());
    CHECK_EMPTY(s);
}

// Regression: empty() must not count a cancelled entry still sitting in the
// ready queue (it is removed lazily) as work.
BOOST_AUTO_TEST_CASE(cancelled_call_soon_leaves_scheduler_empty_before_running) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Handle h = s.call_soon([] { BOOST_FAIL("cancelled callback ran"); });
    BOOST_TEST(!s.empty());
    BOOST_TEST(h.cancel());
    CHECK_EMPTY(s);
    s.run();  // harmless: drops the dead entry
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(cancel_after_run_or_from_itself_is_false) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Handle self;
    bool cancel_from_itself = true;
    bool pending_from_itself = true;
    self = s.call_later(1ms, [&] {
        cancel_from_itself = self.cancel();
        pending_from_itself = self.is_pending();
    });
    Handle ran = s.call_soon([] {});
    s.run();
    BOOST_TEST(!cancel_from_itself);
    BOOST_TEST(!pending_from_itself);
    BOOST_TEST(!ran.cancel());
    BOOST_TEST(!ran.is_pending());
    BOOST_TEST(!self.cancel());
    CHECK_EMPTY(s);
}

// A handle is a (slot, generation) value: once its callback ran, a new callback
// reusing the slot is not reachable through it.
BOOST_AUTO_TEST_CASE(stale_handle_does_not_cancel_slot_reuser) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int ran = 0;
    Handle old = s.call_soon([&] { ++ran; });
    s.run();
    Handle fresh = s.call_soon([&] { ++ran; });  // reuses the freed slot
    BOOST_TEST(!old.cancel());
    BOOST_TEST(!old.is_pending());
    BOOST_TEST(fresh.is_pending());
    s.run();
    BOOST_TEST(ran == 2);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(cancel_releases_captures_at_once) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    auto token = std::make_shared<int>(0);
    Handle soon = s.call_soon([token] {});
    Handle timer = s.call_later(1h, [token] {});
    Handle at = s.call_at(loop.clock.now() + 1ms, [token] {});
    BOOST_TEST(token.use_count() == 4);
    BOOST_TEST(soon.cancel());
    BOOST_TEST(token.use_count() == 3);
    BOOST_TEST(timer.cancel());
    BOOST_TEST(token.use_count() == 2);
    BOOST_TEST(at.cancel());
    BOOST_TEST(token.use_count() == 1);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(timer_cancelled_by_earlier_callback_of_same_batch_does_not_run) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Bag bag;
    auto token = std::make_shared<int>(0);
    Handle second;
    bool cancelled = false;
    bool was_pending = false;
    s.call_later(10ms, [&] {
        bag.push_back("first");
        was_pending = second.is_pending();  // due and queued, but not started
        cancelled = second.cancel();
        s.call_soon([&] { bag.push_back("scheduled by first"); });  // may reuse second's slot
    });
    second = s.call_later(20ms, [&bag, token] { bag.push_back("second"); });
    s.call_later(20ms, [&] { bag.push_back("third"); });
    loop.clock.advance(25ms);  // all three become due in the same iteration
    s.run_once();
    BOOST_TEST(bag == (Bag{"first", "third"}), boost::test_tools::per_element());
    s.run_once();
    BOOST_TEST(bag == (Bag{"first", "third", "scheduled by first"}), boost::test_tools::per_element());
    BOOST_TEST(was_pending);
    BOOST_TEST(cancelled);
    BOOST_TEST(token.use_count() == 1);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(call_soon_cancelled_by_earlier_callback_of_same_batch_does_not_run) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Bag bag;
    Handle victim;
    s.call_soon([&] {
        bag.push_back("a");
        BOOST_TEST(victim.is_pending());
        BOOST_TEST(victim.cancel());
        BOOST_TEST(!victim.is_pending());
        // Likely reuses the victim's slot: it must run next iteration, not in
        // the victim's place in this batch.
        s.call_soon([&] { bag.push_back("scheduled by a"); });
    });
    victim = s.call_soon([&] { bag.push_back("victim"); });
    s.call_soon([&] { bag.push_back("c"); });
    s.run_once();
    BOOST_TEST(bag == (Bag{"a", "c"}), boost::test_tools::per_element());
    s.run_once();
    BOOST_TEST(bag == (Bag{"a", "c", "scheduled by a"}), boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

// Cancelling most of a big heap purges it; the survivors still fire in
// (deadline, sequence) order, each exactly at its deadline.
BOOST_AUTO_TEST_CASE(mass_cancellation_purges_and_survivors_fire_in_order) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    constexpr int kTimers = 10'000;
    const TimePoint t0 = loop.clock.now();
    auto token = std::make_shared<int>(0);
    auto deadline_of = [](int i) { return std::chrono::milliseconds((i * 7919) % 1000); };  // many ties
    std::vector<Handle> handles;
    std::vector<int> bag;
    for (int i = 0; i < kTimers; ++i) {
        handles.push_back(s.call_later(deadline_of(i), [&, i, token] {
            BOOST_TEST((s.now() == t0 + deadline_of(i)));
            bag.push_back(i);
        }));
    }
    BOOST_TEST(token.use_count() == kTimers + 1);
    std::vector<int> survivors;
    for (int i = kTimers - 1; i >= 0; --i) {  // cancel in reverse: the heap's top dies last
        if (i % 10 == 3) continue;
        BOOST_TEST(handles[static_cast<std::size_t>(i)].cancel());
    }
    for (int i = 0; i < kTimers; ++i) {
        if (i % 10 == 3) survivors.push_back(i);
    }
    BOOST_TEST(token.use_count() == static_cast<long>(survivors.size()) + 1);
    BOOST_TEST(s.timer_count() == survivors.size());

    // Reuse the freed slots while dead heap entries may still name them.
    int late = 0;
    for (int i = 0; i < 100; ++i) s.call_later(2s, [&] { ++late; });

    std::stable_sort(survivors.begin(), survivors.end(),
                     [&](int a, int b) { return deadline_of(a) < deadline_of(b); });
    s.run();
    BOOST_TEST(bag == survivors, boost::test_tools::per_element());
    BOOST_TEST(late == 100);
    BOOST_TEST(token.use_count() == 1);
    CHECK_EMPTY(s);
}

// The purge (a heap rebuild) may happen inside a callback, while the batch
// that callback belongs to is running.
BOOST_AUTO_TEST_CASE(mass_cancellation_from_inside_a_callback) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    std::vector<Handle> handles;
    std::vector<int> bag;
    s.call_later(1ms, [&] {
        for (std::size_t i = 0; i < handles.size(); ++i) {
            if (i % 7 != 0) BOOST_TEST(handles[i].cancel());
        }
        bag.push_back(-1);
    });
    for (int i = 0; i < 2000; ++i) {
        handles.push_back(s.call_later(std::chrono::milliseconds(2 + (i * 31) % 50), [&bag, i] { bag.push_back(i); }));
    }
    s.run();
    std::vector<int> expected;
    for (int i = 0; i < 2000; i += 7) expected.push_back(i);
    std::stable_sort(expected.begin(), expected.end(), [](int a, int b) { return (a * 31) % 50 < (b * 31) % 50; });
    expected.insert(expected.begin(), -1);
    BOOST_TEST(bag == expected, boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

// ============================================================ lifetime

BOOST_AUTO_TEST_SUITE(lifetime)

BOOST_AUTO_TEST_CASE(destructor_releases_pending_captures) {
    auto token = std::make_shared<int>(0);
    Pipe p;
    {
        VirtualLoop loop(backend_under_test());
        auto& s = loop.sched;
        s.call_soon([token] {});
        s.call_later(1h, [token] {});
        s.call_at(loop.clock.now() + 1ms, [token] {});
        s.read_wait(p.r, [token] {});
        s.add_writer(p.w, [token] {});
        s.call_soon_threadsafe([token] {});
        BOOST_TEST(token.use_count() == 7);
        BOOST_TEST(!s.empty());
    }
    BOOST_TEST(token.use_count() == 1);
}

// A capture whose destructor schedules more work while the scheduler is being
// destroyed: that work is destroyed too, and nothing is touched after free.
struct SchedulesOnDestruction {
    Scheduler* sched;
    std::shared_ptr<int> token;
    SchedulesOnDestruction(Scheduler* s, std::shared_ptr<int> t) : sched(s), token(std::move(t)) {}
    SchedulesOnDestruction(SchedulesOnDestruction&& o) noexcept
        : sched(std::exchange(o.sched, nullptr)), token(std::move(o.token)) {}
    SchedulesOnDestruction& operator=(SchedulesOnDestruction&&) = delete;
    ~SchedulesOnDestruction() {
        if (sched) {
            sched->call_soon([t = token] {});
            sched->call_soon_threadsafe([t = token] {});
        }
    }
    void operator()() const {}
};

BOOST_AUTO_TEST_CASE(destructor_survives_captures_that_schedule) {
    auto token = std::make_shared<int>(0);
    {
        VirtualLoop loop(backend_under_test());
        loop.sched.call_later(1h, SchedulesOnDestruction(&loop.sched, token));
        loop.sched.call_soon(SchedulesOnDestruction(&loop.sched, token));
        BOOST_TEST(token.use_count() == 3);
    }
    BOOST_TEST(token.use_count() == 1);
}

BOOST_AUTO_TEST_SUITE_END()
