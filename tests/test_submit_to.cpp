// SPDX-License-Identifier: MIT
// futures::submit_to: fn runs on the target loop (its thread), the future
// completes on the caller's loop with fn's value, its exception, the value of
// the Future fn returned, or a cancellation; cancelling before fn started
// skips it, after lets it finish and discards its result; a target that has
// ended fails the future with LoopClosedError; a caller loop closed first
// cancels it and is never touched again. Real threads: the targets are loops
// of a LoopGroup, the caller's loop runs on this thread; threads meet through
// posts and latches, never through timing.
//
// CTest runs the suite once per selector backend (REACTOR_TEST_BACKEND), and
// under ThreadSanitizer in .ci/run; ASan checks that nothing leaks.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <latch>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <futures/future.hpp>
#include <futures/leaves.hpp>
#include <futures/run.hpp>
#include <futures/scope.hpp>
#include <futures/submit_to.hpp>
#include <futures/then.hpp>
#include <reactor/loop_group.hpp>
#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"

namespace {

using namespace std::chrono_literals;
using futures::Future;
using reactor::LoopGroup;
using reactor::LoopGroupOptions;
using reactor::Scheduler;
using reactor_test::backend_under_test;
using reactor_test::on;

constexpr auto kGuard = 60s;

LoopGroupOptions loops(std::size_t n) {
    LoopGroupOptions o;
    o.loops = n;
    o.loop_options = [](std::size_t) { return on(backend_under_test()); };
    return o;
}

// A caller loop (this thread) and a started group of target loops.
struct Fixture {
    Scheduler caller{on(backend_under_test())};
    LoopGroup group{loops(2)};
    Fixture() { group.start(); }
};

template <class T>
bool settle(Scheduler& s, const Future<T>& f) {
    return futures::run_until(s, f, kGuard);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(submit_to)

BOOST_AUTO_TEST_CASE(the_value_comes_back_to_the_callers_loop) {
    Fixture fx;
    const auto caller_thread = std::this_thread::get_id();
    std::thread::id ran_on;
    Future<int> f = futures::submit_to(fx.caller, fx.group.loop(1), [&] {
        ran_on = std::this_thread::get_id();
        return 6 * 7;
    });
    std::thread::id completed_on;
    f.add_done_callback([&] { completed_on = std::this_thread::get_id(); });
    BOOST_REQUIRE(settle(fx.caller, f));
    BOOST_TEST(f.result() == 42);
    fx.caller.run();  // the done callback
    BOOST_TEST((ran_on != caller_thread));
    BOOST_TEST((completed_on == caller_thread));
    fx.group.stop();
    CHECK_EMPTY(fx.caller);
}

BOOST_AUTO_TEST_CASE(void_and_move_only_values) {
    Fixture fx;
    std::atomic<int> ran{0};
    Future<void> v = futures::submit_to(fx.caller, fx.group.loop(0), [&] { ++ran; });
    Future<std::unique_ptr<std::string>> p =
        futures::submit_to(fx.caller, fx.group.loop(1), [] { return std::make_unique<std::string>("moved"); });
    BOOST_REQUIRE(settle(fx.caller, v));
    BOOST_REQUIRE(settle(fx.caller, p));
    v.result();
    BOOST_TEST(ran == 1);
    BOOST_TEST(*p.result() == "moved");
    fx.group.stop();
    CHECK_EMPTY(fx.caller);
}

BOOST_AUTO_TEST_CASE(an_exception_comes_back_as_a_failed_future) {
    Fixture fx;
    Future<int> f = futures::submit_to(fx.caller, fx.group.loop(1), []() -> int { throw std::runtime_error("boom there"); });
    BOOST_REQUIRE(settle(fx.caller, f));
    BOOST_CHECK_EXCEPTION(f.result(), std::runtime_error,
                          [](const std::runtime_error& e) { return std::string(e.what()) == "boom there"; });
    fx.group.stop();
    CHECK_EMPTY(fx.caller);
}

// fn returns a Future made on the target loop: the caller gets its value,
// once it completes there (a timer of the target's).
BOOST_AUTO_TEST_CASE(a_future_returned_by_fn_is_followed_on_the_target) {
    Fixture fx;
    Scheduler& target = fx.group.loop(1);
    Future<int> f = futures::submit_to(fx.caller, target, [&target] {
        return futures::sleep(target, 1ms).then([] { return 5; });
    });
    Future<void> failed = futures::submit_to(fx.caller, target, [&target] {
        return futures::sleep(target, 1ms).then([] { throw std::logic_error("late failure"); });
    });
    BOOST_REQUIRE(settle(fx.caller, f));
    BOOST_REQUIRE(settle(fx.caller, failed));
    BOOST_TEST(f.result() == 5);
    BOOST_CHECK_THROW(failed.result(), std::logic_error);
    fx.group.stop();
    CHECK_EMPTY(fx.caller);
}

// The caller runs the loop it submits from: submit_to(target, fn) finds it.
BOOST_AUTO_TEST_CASE(the_callers_loop_is_the_running_one) {
    Fixture fx;
    BOOST_CHECK_THROW((void)futures::submit_to(fx.group.loop(0), [] { return 1; }), std::logic_error);
    Future<int> outer(fx.caller);
    fx.caller.call_soon([&] {
        BOOST_TEST(Scheduler::running() == &fx.caller);
        futures::submit_to(fx.group.loop(0), [] { return 9; }).add_done_callback([&](Future<int>& f) {
            outer.set_result(f.result() + 1);
        });
    });
    BOOST_REQUIRE(settle(fx.caller, outer));
    BOOST_TEST(outer.result() == 10);
    BOOST_TEST(Scheduler::running() == nullptr);
    fx.group.stop();
    CHECK_EMPTY(fx.caller);
}

// Cancelled while the target is busy with something else: fn never runs.
BOOST_AUTO_TEST_CASE(cancelled_before_fn_started_skips_it) {
    Fixture fx;
    std::latch blocked(1);
    std::latch release(1);
    fx.group.loop(1).call_soon_threadsafe([&] {
        blocked.count_down();
        release.wait();
    });
    blocked.wait();
    std::atomic<bool> ran{false};
    Future<int> f = futures::submit_to(fx.caller, fx.group.loop(1), [&] {
        ran = true;
        return 1;
    });
    BOOST_TEST(f.cancel());
    BOOST_TEST(f.cancelled());
    release.count_down();
    // Everything the target had is run once the group stops.
    fx.group.stop();
    BOOST_TEST(!ran);
    fx.caller.run();
    CHECK_EMPTY(fx.caller);
}

// Cancelled while fn runs: fn finishes, its result is dropped, the future
// stays cancelled.
BOOST_AUTO_TEST_CASE(cancelled_after_fn_started_lets_it_finish) {
    Fixture fx;
    std::latch started(1);
    std::latch release(1);
    std::atomic<bool> finished{false};
    Future<int> f = futures::submit_to(fx.caller, fx.group.loop(1), [&] {
        started.count_down();
        release.wait();
        finished = true;
        return 1;
    });
    started.wait();
    BOOST_TEST(f.cancel());
    release.count_down();
    fx.group.stop();
    BOOST_TEST(finished);
    fx.caller.run();  // the dropped outcome arrives, and changes nothing
    BOOST_TEST(f.cancelled());
    CHECK_EMPTY(fx.caller);
}

// The target loop has ended: the future fails with a clear error at once.
BOOST_AUTO_TEST_CASE(a_target_that_has_ended_fails_the_future) {
    Fixture fx;
    fx.group.stop();
    std::atomic<bool> ran{false};
    auto token = std::make_shared<int>(1);
    Future<int> f = futures::submit_to(fx.caller, fx.group.loop(0), [&, token] {
        ran = true;
        return 1;
    });
    BOOST_REQUIRE(settle(fx.caller, f));
    BOOST_TEST(!ran);
    BOOST_TEST(token.use_count() == 1);  // fn destroyed
    BOOST_CHECK_EXCEPTION(f.result(), futures::LoopClosedError, [](const futures::LoopClosedError& e) {
        return std::string(e.what()).find("the target loop ended before the function submitted at") !=
               std::string::npos;
    });
    CHECK_EMPTY(fx.caller);
}

// The target ends while fn's future is still pending there, and while a
// submitted fn is still queued behind a blocked callback: both fail.
BOOST_AUTO_TEST_CASE(a_target_that_ends_with_the_work_pending_fails_the_future) {
    Fixture fx;
    Scheduler& target = fx.group.loop(1);
    target.set_exception_handler([](const reactor::ErrorContext&) {});  // its close() names the sleep
    std::latch started(1);
    Future<int> waiting = futures::submit_to(fx.caller, target, [&] {
        started.count_down();
        return futures::sleep(target, 1h).then([] { return 1; });
    });
    started.wait();
    fx.group.stop();  // the hour-long sleep is dropped by the target's close()
    BOOST_REQUIRE(settle(fx.caller, waiting));
    BOOST_CHECK_THROW(waiting.result(), futures::LoopClosedError);
    CHECK_EMPTY(fx.caller);
}

// The caller's loop is closed first: its future is cancelled at once, the
// late outcome is dropped, nothing waits on a loop that is gone.
BOOST_AUTO_TEST_CASE(a_caller_loop_closed_first_cancels_the_future) {
    LoopGroup group(loops(1));
    group.start();
    std::latch release(1);
    std::latch started(1);
    std::atomic<bool> finished{false};
    {
        Scheduler caller(on(backend_under_test()));
        Future<int> f = futures::submit_to(caller, group.loop(0), [&] {
            started.count_down();
            release.wait();
            finished = true;
            return 1;
        });
        started.wait();
        BOOST_TEST(!caller.empty());  // the outcome on its way is work
        caller.set_exception_handler([](const reactor::ErrorContext&) {});  // close() names what is alive
        caller.close();
        BOOST_TEST(f.cancelled());
        release.count_down();
        // The outcome may come back before or after the caller is destroyed:
        // either way it is dropped.
    }
    group.stop();
    BOOST_TEST(finished);
}

// And destroyed while fn runs, with no close(): the target must not post to
// it. The outcome finds the mailbox empty and is dropped where it was made:
// fn ran to its end, its value died there, on the target's thread, leaving
// no copy alive, and the target's loop reported nothing.
BOOST_AUTO_TEST_CASE(a_caller_loop_destroyed_first_is_never_touched) {
    // fn's value: counts its live copies, and says where the last one died.
    struct Outcome {
        std::atomic<int>* alive;
        std::atomic<std::thread::id>* died_on;
        Outcome(std::atomic<int>& a, std::atomic<std::thread::id>& d) : alive(&a), died_on(&d) { ++*alive; }
        Outcome(const Outcome& o) : alive(o.alive), died_on(o.died_on) { ++*alive; }
        Outcome& operator=(const Outcome&) = delete;
        ~Outcome() {
            died_on->store(std::this_thread::get_id());
            --*alive;
        }
    };
    std::atomic<int> alive{0};
    std::atomic<std::thread::id> died_on{};
    std::atomic<int> reports{0};
    std::thread::id target_thread{};
    LoopGroup group(loops(1));
    group.loop(0).set_exception_handler([&](const reactor::ErrorContext&) { ++reports; });
    group.start();
    std::latch release(1);
    std::latch started(1);
    std::atomic<bool> finished{false};
    {
        Scheduler caller(on(backend_under_test()));
        Future<Outcome> f = futures::submit_to(caller, group.loop(0), [&] {
            target_thread = std::this_thread::get_id();
            started.count_down();
            release.wait();
            finished = true;
            return Outcome(alive, died_on);
        });
        started.wait();
    }
    release.count_down();
    group.stop();  // the outcome found the mailbox empty
    BOOST_TEST(finished.load());
    BOOST_TEST(alive.load() == 0);  // made, and dropped: not kept, not leaked
    BOOST_TEST((died_on.load() == target_thread));
    BOOST_TEST((died_on.load() != std::this_thread::get_id()));
    BOOST_TEST(reports.load() == 0);
}

// Many submissions across both loops and back, in flight at once.
BOOST_AUTO_TEST_CASE(a_thousand_round_trips_in_flight) {
    Fixture fx;
    constexpr int kCalls = 1000;
    std::vector<Future<int>> fs;
    for (int i = 0; i < kCalls; ++i)
        fs.push_back(futures::submit_to(fx.caller, fx.group.loop(static_cast<std::size_t>(i % 2)), [i] { return i * 2; }));
    long sum = 0;
    for (auto& f : fs) {
        BOOST_REQUIRE(settle(fx.caller, f));
        sum += f.result();
    }
    BOOST_TEST(sum == static_cast<long>(kCalls) * (kCalls - 1));
    fx.group.stop();
    CHECK_EMPTY(fx.caller);
}

// ---- as a child of a futures::Scope (issue 47) ----

// Runs f on `s`'s loop `turns` loop iterations from now (each turn queues the
// next, so the loop never blocks meanwhile): a point in loop time that does
// not depend on the clock.
static void after_turns(Scheduler& s, int turns, std::function<void()> f) {
    if (turns == 0) {
        f();
        return;
    }
    s.call_soon([&s, turns, f = std::move(f)]() mutable { after_turns(s, turns - 1, std::move(f)); });
}

// fn returned a future that is pending on the target: cancelling the scope
// cancels it there, on the target's own loop thread, and close() settles only
// once it has settled there (its done-callback on the target waits on a latch
// that the caller's loop opens some turns after the cancel: before, the
// remote future ran on, uncancelled, and close() had settled by then).
BOOST_AUTO_TEST_CASE(a_cancelled_scope_cancels_the_submitted_work_on_its_loop_and_close_waits) {
    Fixture fx;
    Scheduler& target = fx.group.loop(1);
    std::latch started(1);
    std::latch release(1);
    std::atomic<bool> cancelled_there{false};
    std::atomic<bool> remote_settled{false};
    futures::Scope scope(fx.caller);
    Future<void> f = scope.spawn(futures::submit_to(fx.caller, target, [&] {
        // Only a cancellation ends it before the guard (the timer holds it, not this handle).
        Future<void> remote = futures::sleep(target, kGuard);
        remote.add_done_callback([&](Future<void>& r) {
            cancelled_there = r.cancelled() && Scheduler::running() == &target;
            release.wait();
            remote_settled = true;
        });
        started.count_down();
        return remote;
    }));
    Future<void> closed = scope.close();
    bool settled_when_closed = false;
    closed.add_done_callback([&](Future<void>&) { settled_when_closed = remote_settled.load(); });
    started.wait();
    scope.cancel();
    BOOST_TEST(f.cancelled());
    after_turns(fx.caller, 8, [&] { release.count_down(); });
    BOOST_TEST(settle(fx.caller, closed));
    fx.caller.run();  // the turns to the latch, if close() settled first (it must not)
    BOOST_TEST((closed.status() == futures::Status::done));
    BOOST_TEST(cancelled_there.load());
    BOOST_TEST(settled_when_closed);
    fx.group.stop();
    CHECK_EMPTY(fx.caller);
}

// Cancelled before fn started (the target is busy): fn is skipped, and
// close() waits until the target has dropped it.
BOOST_AUTO_TEST_CASE(a_cancelled_scope_skips_a_submitted_fn_not_started_yet) {
    Fixture fx;
    Scheduler& target = fx.group.loop(1);
    std::latch blocked(1);
    std::latch release(1);
    target.call_soon_threadsafe([&] {
        blocked.count_down();
        release.wait();
    });
    blocked.wait();
    std::atomic<bool> ran{false};
    futures::Scope scope(fx.caller);
    Future<int> f = scope.spawn(futures::submit_to(fx.caller, target, [&] {
        ran = true;
        return 1;
    }));
    Future<void> closed = scope.close();
    bool released = false;
    bool released_when_closed = false;
    closed.add_done_callback([&](Future<void>&) { released_when_closed = released; });
    scope.cancel();
    BOOST_TEST(f.cancelled());
    after_turns(fx.caller, 8, [&] {
        released = true;
        release.count_down();
    });
    BOOST_TEST(settle(fx.caller, closed));
    fx.caller.run();  // the turns to the latch, if close() settled first (it must not)
    BOOST_TEST((closed.status() == futures::Status::done));
    BOOST_TEST(released_when_closed);
    BOOST_TEST(!ran.load());
    fx.group.stop();
    fx.caller.run();
    CHECK_EMPTY(fx.caller);
}

BOOST_AUTO_TEST_SUITE_END()
