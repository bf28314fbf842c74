// Scheduler tests: ready queue, timers, cancel, the snapshot rule, stop/run
// variants, the exception handler, call_soon_threadsafe and destruction.
// CTest runs this suite once per selector backend (REACTOR_TEST_BACKEND).
//
// Timer tests run on a VirtualClock (tests/support/virtual_time.hpp): the loop's
// sleeps advance it, so they are instant and exact. Each test records what
// happened in a "bag" and asserts exact order and counts, and ends by checking
// that the scheduler holds nothing (CHECK_EMPTY). fd waiters are covered in
// test_scheduler_io.cpp; pipes appear here only where the phase order needs one.
#define BOOST_TEST_MODULE scheduler
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/fds.hpp"
#include "support/stderr_capture.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::Clock;
using reactor::Duration;
using reactor::ErrorContext;
using reactor::Handle;
using reactor::Scheduler;
using reactor::TimePoint;
using reactor::testing::VirtualLoop;
using reactor_test::TimeoutRecordingLoop;
using reactor_test::backend_under_test;
using reactor_test::Pipe;
using Bag = std::vector<std::string>;

using reactor_test::StderrCapture;

std::string what_of(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        return ex.what();
    } catch (...) {
        return "<non-std exception>";
    }
}

}  // namespace

// ============================================================ ordering

// CTest runs this suite once per backend: each run is really on its backend.
BOOST_AUTO_TEST_CASE(suite_runs_on_the_backend_under_test) {
    VirtualLoop loop(backend_under_test());
    Scheduler s(reactor_test::on(reactor_test::backend_under_test()));
    const char* named = std::getenv("REACTOR_TEST_BACKEND");
    const std::string expected = named && *named ? named : "select";
    BOOST_TEST(loop.sched.selector().name() == expected);
    BOOST_TEST(s.selector().name() == expected);
}

BOOST_AUTO_TEST_SUITE(ordering)

BOOST_AUTO_TEST_CASE(call_soon_runs_fifo) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    std::vector<int> bag;
    for (int i = 0; i < 100; ++i) s.call_soon([&bag, i] { bag.push_back(i); });
    BOOST_TEST(s.ready_count() == 100u);
    s.run_once();
    std::vector<int> expected(100);
    for (int i = 0; i < 100; ++i) expected[static_cast<std::size_t>(i)] = i;
    BOOST_TEST(bag == expected, boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(equal_deadline_timers_fire_in_scheduling_order) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    std::vector<int> bag;
    const TimePoint deadline = loop.clock.now() + 10ms;
    // Mix call_later and call_at on the same deadline, and put a later timer
    // first so the heap has something to reorder.
    s.call_later(20ms, [&] { bag.push_back(100); });
    for (int i = 0; i < 50; ++i) {
        if (i % 2) {
            s.call_at(deadline, [&bag, i] { bag.push_back(i); });
        } else {
            s.call_later(10ms, [&bag, i] { bag.push_back(i); });
        }
    }
    s.run_once();  // one sleep of 10 ms; all 50 are due together
    BOOST_TEST(bag.size() == 50u);
    for (int i = 0; i < static_cast<int>(bag.size()); ++i) BOOST_TEST(bag[static_cast<std::size_t>(i)] == i);
    BOOST_TEST(s.timer_count() == 1u);
    s.run();
    BOOST_TEST(bag.back() == 100);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(timers_fire_by_deadline_then_sequence) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    std::vector<std::pair<int, Duration>> bag;  // (id, now - t0 when it ran)
    const std::array<std::chrono::milliseconds, 8> delays{30ms, 10ms, 20ms, 10ms, 0ms, 30ms, 5ms, 0ms};
    for (int i = 0; i < static_cast<int>(delays.size()); ++i) {
        s.call_later(delays[static_cast<std::size_t>(i)], [&, i] { bag.emplace_back(i, s.now() - t0); });
    }
    s.run();
    const std::vector<std::pair<int, Duration>> expected{{4, 0ms}, {7, 0ms},  {6, 5ms},  {1, 10ms},
                                                         {3, 10ms}, {2, 20ms}, {0, 30ms}, {5, 30ms}};
    BOOST_REQUIRE(bag.size() == expected.size());
    for (std::size_t i = 0; i < bag.size(); ++i) {
        BOOST_TEST(bag[i].first == expected[i].first);
        BOOST_TEST(bag[i].second.count() == Duration(expected[i].second).count());
    }
    // The loop slept exactly from deadline to deadline.
    BOOST_TEST((loop.clock.now() - t0 == 30ms));
    CHECK_EMPTY(s);
}

// Phases: already-ready callbacks, then I/O made ready by this iteration's
// poll, then due timers (see the phase comment in reactor/src/loop/iteration.cpp). What any of
// them schedules runs in the next iteration.
BOOST_AUTO_TEST_CASE(ready_then_io_then_timers_in_one_iteration) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Pipe p;
    p.put();
    Bag bag;
    s.call_later(0ms, [&] {
        bag.push_back("timer");
        s.call_soon([&] { bag.push_back("soon from timer"); });
    });
    s.read_wait(p.r, [&] {
        bag.push_back("io");
        s.call_soon([&] { bag.push_back("soon from io"); });
    });
    s.call_soon([&] {
        bag.push_back("soon");
        s.call_soon([&] { bag.push_back("soon from soon"); });
    });
    s.run_once();
    BOOST_TEST(bag == (Bag{"soon", "io", "timer"}), boost::test_tools::per_element());
    s.run_once();
    BOOST_TEST(bag == (Bag{"soon", "io", "timer", "soon from soon", "soon from io", "soon from timer"}),
               boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

// compute_timeout: 0 when something is ready, until the earliest live deadline
// otherwise; a cancelled timer on top of the heap must not cause an early wake.
// A watched pipe makes every iteration consult the selector (with no fd to
// watch, a zero-timeout poll is skipped: see the next test).
BOOST_AUTO_TEST_CASE(timeout_is_zero_when_ready_else_until_earliest_live_deadline) {
    TimeoutRecordingLoop loop(backend_under_test());
    auto& s = loop.sched;
    auto& timeouts = loop.selector->timeouts;
    Pipe p;
    s.add_reader(p.r, [] {});
    int fired = 0;
    Handle early = s.call_later(10ms, [&] { ++fired; });
    s.call_later(50ms, [&] { ++fired; });
    s.call_soon([] {});
    s.run_once();
    BOOST_REQUIRE(timeouts.size() == 1u);
    BOOST_TEST((timeouts.back() == std::chrono::nanoseconds::zero()));
    BOOST_TEST(early.cancel());
    s.run_once();
    BOOST_REQUIRE(timeouts.size() == 2u);
    BOOST_TEST((timeouts.back() == std::chrono::nanoseconds(50ms)));
    BOOST_TEST(fired == 1);
    BOOST_TEST(s.remove_reader(p.r));
    CHECK_EMPTY(s);
}

// With nothing to wait for (timeout 0) and no fd watched, the selector has
// nothing to say: the iteration skips it (a call_soon chain costs no system
// call per hop), unless it has registrations to bring up to date (epoll's
// batched epoll_ctl: at first, the loop's own wakeup fd). A post from
// call_soon_threadsafe is still seen in a skipping iteration, and once an fd
// is watched the zero-timeout poll happens again.
BOOST_AUTO_TEST_CASE(zero_timeout_poll_is_skipped_when_no_fd_is_watched) {
    TimeoutRecordingLoop loop(backend_under_test());
    auto& s = loop.sched;
    auto& timeouts = loop.selector->timeouts;
    const std::size_t syncs = loop.selector->has_pending_changes() ? 1 : 0;
    Bag bag;
    s.call_soon([&] {
        bag.push_back("soon");
        s.call_soon([&] { bag.push_back("soon 2"); });
    });
    s.call_soon_threadsafe([&] { bag.push_back("posted"); });
    s.run_once();
    BOOST_TEST(bag == (Bag{"soon", "posted"}), boost::test_tools::per_element());
    BOOST_TEST(timeouts.size() == syncs);
    BOOST_TEST(!loop.selector->has_pending_changes());
    Pipe p;
    s.add_reader(p.r, [&] { bag.push_back("io"); });
    p.put();
    s.run_once();
    BOOST_TEST(bag == (Bag{"soon", "posted", "soon 2", "io"}), boost::test_tools::per_element());
    BOOST_REQUIRE(timeouts.size() == syncs + 1);
    BOOST_TEST((timeouts.back() == std::chrono::nanoseconds::zero()));
    BOOST_TEST(s.remove_reader(p.r));
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

// ============================================================ timers

BOOST_AUTO_TEST_SUITE(timers)

BOOST_AUTO_TEST_CASE(timer_never_fires_before_its_deadline_virtual_clock) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int fired = 0;
    auto arm = [&](auto delay) {
        const TimePoint deadline = loop.clock.now() + std::chrono::ceil<Duration>(delay);
        s.call_later(delay, [&, deadline] {
            BOOST_TEST((s.now() >= deadline));
            BOOST_TEST((loop.clock.now() >= deadline));
            ++fired;
        });
    };
    arm(1ns);
    arm(1us);
    arm(std::chrono::duration<double, std::milli>(1.5));
    arm(std::chrono::duration<double, std::nano>(0.25));  // rounds up to 1 ns, never down to 0
    arm(7ms);
    arm(1h);
    s.run();
    BOOST_TEST(fired == 6);
    CHECK_EMPTY(s);
}

// The same with the real clock and the real select(2): select's timeout is in
// microseconds, so a loop rounding down would wake (and fire) early.
BOOST_AUTO_TEST_CASE(timer_never_fires_before_its_deadline_real_clock) {
    Scheduler s(reactor_test::on(reactor_test::backend_under_test()));
    int fired = 0;
    for (std::chrono::microseconds delay : {1500us, 3333us, 10'000us, 20'000us}) {
        const TimePoint start = Clock::now();
        s.call_later(delay, [&, start, delay] {
            BOOST_TEST((Clock::now() - start >= delay));
            BOOST_TEST((s.now() - start >= delay));
            ++fired;
        });
        s.run();
    }
    BOOST_TEST(fired == 4);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(negative_delay_counts_as_zero_and_keeps_fifo) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    Bag bag;
    s.call_later(0ms, [&] { bag.push_back("zero"); });
    s.call_later(-5s, [&] {
        bag.push_back("negative");
        BOOST_TEST((s.now() == t0));
    });
    s.call_later(1ms, [&] { bag.push_back("one ms"); });
    s.run_once();
    BOOST_TEST(bag == (Bag{"zero", "negative"}), boost::test_tools::per_element());
    BOOST_TEST((loop.clock.now() == t0));  // due at once: the loop did not sleep
    s.run();
    BOOST_TEST(bag.size() == 3u);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(call_at_fires_at_the_time_point_and_past_ones_at_once) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const TimePoint t0 = loop.clock.now();
    std::vector<std::pair<std::string, Duration>> bag;
    s.call_at(t0 + 50ms, [&] { bag.emplace_back("at 50ms", s.now() - t0); });
    s.call_at(t0 - 1h, [&] { bag.emplace_back("past", s.now() - t0); });
    s.call_at(t0, [&] { bag.emplace_back("now", s.now() - t0); });
    s.run();
    BOOST_REQUIRE(bag.size() == 3u);
    BOOST_TEST(bag[0].first == "past");  // earlier deadline first, despite its later sequence
    BOOST_TEST(bag[1].first == "now");
    BOOST_TEST(bag[2].first == "at 50ms");
    BOOST_TEST((bag[0].second == 0ms && bag[1].second == 0ms && bag[2].second == 50ms));
    CHECK_EMPTY(s);
}

// Outside the loop the cached now() may be arbitrarily old: a delay scheduled
// there counts from the clock as it is, or the timer would fire early.
BOOST_AUTO_TEST_CASE(delays_outside_the_loop_count_from_the_current_clock) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    s.call_soon([] {});
    s.run();  // the loop's cache now holds t0
    loop.clock.advance(1h);  // time passes while the loop is not running
    const TimePoint deadline = loop.clock.now() + 10ms;
    int fired = 0;
    s.call_later(10ms, [&] {
        BOOST_TEST((s.now() >= deadline));
        ++fired;
    });
    s.call_soon([] {});
    s.run_once();  // does not sleep (something is ready): counted from the stale cache, the timer would fire here
    BOOST_TEST(fired == 0);
    s.run_once();  // sleeps the remaining 10 ms
    BOOST_TEST(fired == 1);
    BOOST_TEST((loop.clock.now() == deadline));
    CHECK_EMPTY(s);
}

// Delays scheduled from a callback count from the loop's cached now(), read
// at most once per iteration (on first use), so timers armed in one batch
// share one time base.
BOOST_AUTO_TEST_CASE(delays_inside_callbacks_count_from_cached_now) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    std::vector<Duration> fired_at;
    const TimePoint t0 = loop.clock.now();
    s.call_soon([&] {
        BOOST_TEST((s.now() == t0));
        loop.clock.advance(3ms);  // the callback "takes" 3 ms; now() does not move
        BOOST_TEST((s.now() == t0));
        s.call_later(10ms, [&] { fired_at.push_back(s.now() - t0); });
    });
    s.run();
    BOOST_REQUIRE(fired_at.size() == 1u);
    // Due at t0 + 10ms, not 13ms: the delay counted from the cached now().
    // (It may fire late, by the time callbacks took; never early.)
    BOOST_TEST((fired_at[0] >= 10ms));
    BOOST_TEST((fired_at[0] <= 13ms));
    CHECK_EMPTY(s);
}

// Regression: a delay beyond the clock's range (seconds::max() as "never", a
// huge floating-point duration) used to overflow into the past and fire at once.
BOOST_AUTO_TEST_CASE(huge_delay_means_never_not_now) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int fired = 0;
    std::vector<Handle> handles;
    handles.push_back(s.call_later(std::chrono::seconds::max(), [&] { ++fired; }));
    handles.push_back(s.call_later(std::chrono::hours::max(), [&] { ++fired; }));
    handles.push_back(s.call_later(std::chrono::duration<double>(1e300), [&] { ++fired; }));
    handles.push_back(s.call_later(std::chrono::duration<double>(1e10), [&] { ++fired; }));  // 317 years: overflows ns
    int soon = 0;
    s.call_soon([&] { ++soon; });
    s.run_once();
    BOOST_TEST(soon == 1);
    BOOST_TEST(fired == 0);
    BOOST_TEST(s.timer_count() == 4u);
    for (auto& h : handles) BOOST_TEST(h.cancel());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

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

// ============================================================ snapshot rule

BOOST_AUTO_TEST_SUITE(snapshot)

BOOST_AUTO_TEST_CASE(self_rescheduling_call_soon_runs_once_per_iteration) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int runs = 0;
    bool keep_going = true;
    std::function<void()> again = [&] {
        ++runs;
        // (Bounded, so a loop that drained instead of snapshotting fails fast.)
        if (keep_going && runs < 1000) s.call_soon([&] { again(); });
    };
    s.call_soon([&] { again(); });
    for (int i = 1; i <= 5; ++i) {
        s.run_once();
        BOOST_TEST(runs == i);
        BOOST_TEST(s.ready_count() == 1u);
    }
    keep_going = false;
    s.run();
    BOOST_TEST(runs == 6);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(self_rescheduling_call_soon_does_not_starve_io) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Pipe p;
    int spins = 0;
    bool io_done = false;
    std::function<void()> spin = [&] {
        ++spins;
        if (!io_done && spins < 1000) s.call_soon([&] { spin(); });
    };
    s.call_soon([&] { spin(); });
    s.read_wait(p.r, [&] {
        char c;
        BOOST_TEST(::read(p.r, &c, 1) == 1);
        io_done = true;
    });
    s.run_once();
    s.run_once();
    BOOST_TEST(spins == 2);
    p.put();  // readiness arrives while the spinner is busy
    s.run_once();
    BOOST_TEST(io_done);
    BOOST_TEST(spins == 3);
    s.run();
    BOOST_TEST(spins == 4);  // the one it had queued before seeing io_done
    CHECK_EMPTY(s);
}

// libuv's "busy loop with zero timeout timers": due timers are moved out
// before any runs, so one re-armed with zero delay waits for the next poll.
BOOST_AUTO_TEST_CASE(zero_delay_timer_rearming_itself_does_not_starve_io) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    Pipe p;
    int ticks = 0;
    bool io_done = false;
    std::function<void()> tick = [&] {
        ++ticks;
        if (!io_done && ticks < 1000) s.call_later(0ms, [&] { tick(); });
    };
    s.call_later(0ms, [&] { tick(); });
    s.read_wait(p.r, [&] {
        char c;
        BOOST_TEST(::read(p.r, &c, 1) == 1);
        io_done = true;
    });
    for (int i = 1; i <= 3; ++i) {
        s.run_once();
        BOOST_TEST(ticks == i);  // one tick per iteration, never a spin
    }
    p.put();
    s.run_once();
    BOOST_TEST(io_done);
    BOOST_TEST(ticks == 4);
    s.run();
    BOOST_TEST(ticks == 4);  // I/O ran first in that iteration, so the tick did not re-arm
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

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
        BOOST_TEST(std::string(r.origin.file_name()).ends_with("test_scheduler.cpp"));
        BOOST_TEST(r.fd == -1);
        BOOST_TEST(bool(r.exception));
        BOOST_TEST(r.message.find("exception") != std::string::npos);
    }
    BOOST_TEST(reports[0].origin.line() == soon_line);
    BOOST_TEST(what_of(reports[0].exception) == "boom");
    BOOST_TEST(reports[1].origin.line() == timer_line);
    BOOST_TEST(what_of(reports[1].exception) == "<non-std exception>");
    // describe() is the default handler's line.
    const std::string line = reactor::describe(reports[0]);
    BOOST_TEST(line.find("test_scheduler.cpp:" + std::to_string(soon_line)) != std::string::npos);
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
    BOOST_TEST(text.find("test_scheduler.cpp") != std::string::npos);
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

// ============================================================ threads

BOOST_AUTO_TEST_SUITE(threadsafe)

BOOST_AUTO_TEST_CASE(four_threads_times_ten_thousand_posts_run_once_each_in_order) {
    Scheduler s(reactor_test::on(reactor_test::backend_under_test()));
    constexpr int kThreads = 4;
    constexpr int kPerThread = 10'000;
    std::array<std::vector<int>, kThreads> seen;  // touched by the loop thread only
    int total = 0;
    const auto loop_thread = std::this_thread::get_id();
    bool all_on_loop_thread = true;
    // A safety net so a lost post fails the test instead of hanging it.
    bool timed_out = false;
    Handle guard = s.call_later(10s, [&] {
        timed_out = true;
        s.stop();
    });

    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThread; ++i) {
                s.call_soon_threadsafe([&, t, i] {
                    seen[static_cast<std::size_t>(t)].push_back(i);
                    if (std::this_thread::get_id() != loop_thread) all_on_loop_thread = false;
                    if (++total == kThreads * kPerThread) s.stop();
                });
            }
        });
    }
    s.run_forever();
    for (auto& th : threads) th.join();
    BOOST_TEST(!timed_out);
    BOOST_TEST(total == kThreads * kPerThread);
    BOOST_TEST(all_on_loop_thread);
    for (int t = 0; t < kThreads; ++t) {
        const auto& v = seen[static_cast<std::size_t>(t)];
        BOOST_TEST_CONTEXT("thread " << t) {
            BOOST_TEST(v.size() == static_cast<std::size_t>(kPerThread));
            BOOST_TEST(std::is_sorted(v.begin(), v.end()));
            BOOST_TEST((std::adjacent_find(v.begin(), v.end()) == v.end()));  // no duplicates
        }
    }
    BOOST_TEST(guard.cancel());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(post_wakes_a_loop_blocked_with_nothing_to_do) {
    Scheduler s(reactor_test::on(reactor_test::backend_under_test()));
    std::atomic<bool> posted{false};
    const auto start = Clock::now();
    std::thread poster([&] {
        std::this_thread::sleep_for(30ms);
        posted = true;
        s.call_soon_threadsafe([&] { s.stop(); });
    });
    s.run_forever();  // no timers, no waiters: blocks in select until the post
    const auto elapsed = Clock::now() - start;
    poster.join();
    BOOST_TEST(posted.load());
    BOOST_TEST((elapsed >= 30ms));
    BOOST_TEST((elapsed < 1s));  // woken by the eventfd, not by some timeout
    const double ms = std::chrono::duration<double, std::milli>(elapsed).count();
    BOOST_TEST_MESSAGE("woken after " << ms << " ms");
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(post_from_the_loop_thread_is_work) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int ran = 0;
    s.call_soon_threadsafe([&] { ++ran; });
    BOOST_TEST(!s.empty());  // posted counts as work: run() must not return early
    s.run();
    BOOST_TEST(ran == 1);
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
