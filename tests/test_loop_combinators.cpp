// SPDX-License-Identifier: MIT
// Loop combinators (futures/loops.hpp): repeat, keep_doing, do_until,
// do_for_each, parallel_for_each, map_reduce. Order of steps, the first call
// from the loop, errors (thrown and failed futures), cancellation at every
// step (the awaited step is cancelled, nothing further runs), a million steps
// on a flat stack, no allocation per step (counting operator new), the
// concurrency limit never exceeded, map_reduce's result. On virtual time.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <forward_list>
#include <memory>
#include <numeric>
#include <ranges>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/futures.hpp>

#include "support/counting_new.hpp"
#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::CancelledError;
using futures::Future;
using futures::StopIteration;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::mentions;
using reactor_test::Tracked;
using Log = std::vector<int>;

std::uintptr_t stack_address() {
    int marker = 0;
    // The address only, as a number (how deep the stack is here): never used
    // as a pointer. __builtin_frame_address would do, but not on every compiler.
    volatile std::uintptr_t address = reinterpret_cast<std::uintptr_t>(&marker);
    return address;
}

// Runs the loop until `pred()` holds (a bounded number of iterations).
template <class P>
void run_until_true(reactor::Scheduler& sched, P pred) {
    for (int i = 0; i < 10000 && !pred(); ++i) sched.run_once();
    BOOST_REQUIRE(pred());
}

// 0, 1, ..., n - 1 (std::views::iota where every compiler here can make one).
std::vector<int> counting_up(int n) {
    std::vector<int> all(static_cast<std::size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    return all;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(repeat_loop)

BOOST_AUTO_TEST_CASE(steps_in_order_from_the_loop_until_yes) {
    VirtualLoop loop(backend_under_test());
    Log log;
    Future<void> done = futures::repeat(loop.sched, [&] {
        log.push_back(static_cast<int>(log.size()));
        const bool last = log.size() == 5;
        // Pending steps (sleeps) and ready ones alternate.
        if (log.size() % 2 == 0) {
            return futures::make_ready_future(loop.sched, last ? StopIteration::yes : StopIteration::no);
        }
        return futures::sleep(loop.sched, 10ms).then([last] { return last ? StopIteration::yes : StopIteration::no; });
    });
    BOOST_TEST(log.empty());  // never inside repeat()
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(log == (Log{0, 1, 2, 3, 4}));
    BOOST_TEST((loop.clock.elapsed() == 30ms));  // three sleeping steps, one after the other
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(plain_values_are_steps_done_at_once) {
    VirtualLoop loop(backend_under_test());
    int calls = 0;
    Future<void> done =
        futures::repeat(loop.sched, [&] { return ++calls == 3 ? StopIteration::yes : StopIteration::no; });
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(calls == 3);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_million_ready_steps_on_a_flat_stack) {
    constexpr int kSteps = 1'000'000;
    VirtualLoop loop(backend_under_test());
    int calls = 0;
    std::uintptr_t lowest = UINTPTR_MAX, highest = 0;
    Future<void> done = futures::repeat(loop.sched, [&] {
        const std::uintptr_t here = stack_address();
        lowest = std::min(lowest, here);
        highest = std::max(highest, here);
        return futures::make_ready_future(loop.sched, ++calls == kSteps ? StopIteration::yes : StopIteration::no);
    });
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(calls == kSteps);
    BOOST_TEST(highest - lowest < 4096u, "steps ran at stack depths " << (highest - lowest) << " bytes apart");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(ready_steps_allocate_nothing) {
    constexpr int kWarmUp = 1000;
    constexpr int kMeasured = 100'000;
    VirtualLoop loop(backend_under_test());
    int calls = 0;
    std::size_t at_start = 0, at_end = 0;
    Future<void> done = futures::repeat(loop.sched, [&] {
        ++calls;
        if (calls == kWarmUp) at_start = reactor_test::allocation_count;
        if (calls == kWarmUp + kMeasured) at_end = reactor_test::allocation_count;
        return futures::make_ready_future(loop.sched,
                                          calls == kWarmUp + kMeasured ? StopIteration::yes : StopIteration::no);
    });
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(at_end - at_start == 0u, (at_end - at_start) << " allocations in " << kMeasured << " steps");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(pending_steps_allocate_nothing_either) {
    // A step that waits a loop iteration (a zero sleep): the link, the timer's
    // slot and the wake-up are all reused.
    constexpr int kWarmUp = 100;
    constexpr int kMeasured = 2000;
    VirtualLoop loop(backend_under_test());
    int calls = 0;
    std::size_t at_start = 0, at_end = 0;
    Future<void> done = futures::repeat(loop.sched, [&] {
        ++calls;
        if (calls == kWarmUp) at_start = reactor_test::allocation_count;
        if (calls == kWarmUp + kMeasured) {
            at_end = reactor_test::allocation_count;
            return futures::make_ready_future(loop.sched, StopIteration::yes);
        }
        return futures::sleep(loop.sched, 0ms).then([] { return StopIteration::no; });
    });
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(at_end - at_start == 0u, (at_end - at_start) << " allocations in " << kMeasured << " steps");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(an_exception_from_f_ends_it_and_f_is_released) {
    VirtualLoop loop(backend_under_test());
    const long live_before = Tracked::live;
    int calls = 0;
    Future<void> done = futures::repeat(loop.sched, [&, t = Tracked()]() -> Future<StopIteration> {
        if (++calls == 3) throw std::runtime_error("third");
        return futures::make_ready_future(loop.sched, StopIteration::no);
    });
    loop.sched.run();
    BOOST_TEST(done.failed());
    BOOST_TEST(mentions(done.exception(), "third"));
    BOOST_TEST(calls == 3);
    BOOST_TEST(Tracked::live == live_before);  // f went with the loop's end, before the handle
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_failed_step_ends_it_with_that_error) {
    VirtualLoop loop(backend_under_test());
    int calls = 0;
    Future<void> done = futures::repeat(loop.sched, [&] {
        if (++calls == 2) {
            return futures::sleep(loop.sched, 5ms).then([]() -> StopIteration { throw std::logic_error("step"); });
        }
        return futures::make_ready_future(loop.sched, StopIteration::no);
    });
    loop.sched.run();
    BOOST_TEST(done.failed());
    BOOST_TEST(mentions(done.exception(), "step"));
    BOOST_TEST(calls == 2);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_cancelled_step_cancels_the_loop) {
    VirtualLoop loop(backend_under_test());
    Future<StopIteration> step(loop.sched);
    Future<void> done = futures::repeat(loop.sched, [&] { return step; });
    loop.sched.run_once();
    step.cancel();
    loop.sched.run();
    BOOST_TEST(done.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_at_every_step_stops_there_and_cancels_the_awaited_step) {
    for (int k = 0; k <= 4; ++k) {
        VirtualLoop loop(backend_under_test());
        int calls = 0;
        std::vector<Future<void>> sleeps;
        Future<void> done = futures::repeat(loop.sched, [&] {
            ++calls;
            sleeps.push_back(futures::sleep(loop.sched, 10ms));
            return sleeps.back().then([] { return StopIteration::no; });
        });
        if (k > 0) run_until_true(loop.sched, [&] { return calls == k; });
        BOOST_TEST(done.cancel());
        loop.sched.run();
        BOOST_TEST(done.cancelled());
        BOOST_TEST(calls == k, "k=" << k);  // f was not called again
        if (k > 0) BOOST_TEST(sleeps.back().cancelled());  // the step it waited on went with it
        BOOST_TEST((loop.clock.elapsed() == (k > 0 ? (k - 1) * 10ms : 0ms)), "k=" << k);
        CHECK_EMPTY(loop.sched);
    }
}

BOOST_AUTO_TEST_CASE(cancelling_between_turns_stops_a_busy_loop) {
    VirtualLoop loop(backend_under_test());
    int calls = 0;
    Future<void> done = futures::repeat(loop.sched, [&] { return (++calls, StopIteration::no); });
    loop.sched.run_once();
    loop.sched.run_once();
    const int seen = calls;
    BOOST_TEST(seen > 0);
    BOOST_TEST(seen < 1000);  // turns are bounded: other callbacks get their turn
    done.cancel();
    loop.sched.run();
    BOOST_TEST(calls == seen);
    BOOST_TEST(done.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(f_cancelling_its_own_loop_cancels_the_step_it_returned) {
    VirtualLoop loop(backend_under_test());
    Future<void> done;
    Future<void> step;
    done = futures::repeat(loop.sched, [&] {
        done.cancel();
        step = futures::sleep(loop.sched, 1s);
        return step.then([] { return StopIteration::no; });
    });
    loop.sched.run();
    BOOST_TEST(done.cancelled());
    BOOST_TEST(step.cancelled());
    BOOST_TEST((loop.clock.elapsed() == 0s));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(an_empty_future_from_f_fails_the_loop) {
    VirtualLoop loop(backend_under_test());
    Future<void> done = futures::repeat(loop.sched, [] { return Future<StopIteration>(); });
    loop.sched.run();
    BOOST_TEST(done.failed());
    BOOST_TEST(mentions(done.exception(), "empty Future"));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(close_cancels_a_loop_whose_turn_is_queued) {
    VirtualLoop loop(backend_under_test());
    const long live_before = Tracked::live;
    reactor_test::Reports reports(loop.sched);
    Future<void> done = futures::repeat(loop.sched, [t = Tracked()] { return StopIteration::no; });
    BOOST_TEST(loop.sched.close().size() == 1u);  // the queued turn, reported
    BOOST_TEST(done.cancelled());
    BOOST_TEST(Tracked::live == live_before);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(keep_doing_and_do_until)

BOOST_AUTO_TEST_CASE(keep_doing_runs_until_a_step_fails) {
    VirtualLoop loop(backend_under_test());
    int calls = 0;
    Future<void> done = futures::keep_doing(loop.sched, [&] {
        if (++calls == 4) return futures::make_exception_future<int>(loop.sched, std::runtime_error("four"));
        return futures::sleep(loop.sched, 1ms).then([&] { return calls; });
    });
    loop.sched.run();
    BOOST_TEST(done.failed());
    BOOST_TEST(mentions(done.exception(), "four"));
    BOOST_TEST(calls == 4);
    BOOST_TEST((loop.clock.elapsed() == 3ms));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(keep_doing_stops_when_cancelled) {
    VirtualLoop loop(backend_under_test());
    int calls = 0;
    Future<void> done = futures::keep_doing(loop.sched, [&] {
        ++calls;
        return futures::sleep(loop.sched, 1s);
    });
    loop.sched.call_later(10500ms, [&] { done.cancel(); });
    loop.sched.run();
    BOOST_TEST(done.cancelled());
    BOOST_TEST(calls == 11);  // the eleventh sleep was cancelled half way
    BOOST_TEST((loop.clock.elapsed() == 10500ms));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(do_until_asks_before_each_step) {
    VirtualLoop loop(backend_under_test());
    std::vector<std::string> log;
    int n = 0;
    Future<void> done = futures::do_until(
        loop.sched,
        [&] {
            log.push_back("cond " + std::to_string(n));
            return n == 2;
        },
        [&] {
            log.push_back("step " + std::to_string(n++));
            return futures::sleep(loop.sched, 1ms);
        });
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(log == (std::vector<std::string>{"cond 0", "step 0", "cond 1", "step 1", "cond 2"}));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(do_until_true_at_once_never_steps) {
    VirtualLoop loop(backend_under_test());
    int steps = 0;
    Future<void> done = futures::do_until(loop.sched, [] { return true; }, [&] { ++steps; });
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(steps == 0);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(do_until_a_throwing_condition_ends_it) {
    VirtualLoop loop(backend_under_test());
    int steps = 0;
    Future<void> done = futures::do_until(
        loop.sched, [&]() -> bool { if (steps == 2) throw std::runtime_error("cond"); return false; },
        [&] { ++steps; });
    loop.sched.run();
    BOOST_TEST(done.failed());
    BOOST_TEST(mentions(done.exception(), "cond"));
    BOOST_TEST(steps == 2);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(do_for_each_loop)

BOOST_AUTO_TEST_CASE(one_element_after_the_other_in_order) {
    VirtualLoop loop(backend_under_test());
    std::vector<int> items{3, 1, 2};
    Log log;
    Future<void> done = futures::do_for_each(loop.sched, items, [&](int& x) {
        log.push_back(x);
        return futures::sleep(loop.sched, std::chrono::milliseconds(x)).then([&log, x] { log.push_back(-x); });
    });
    BOOST_TEST(log.empty());
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(log == (Log{3, -3, 1, -1, 2, -2}));  // each waited for before the next
    BOOST_TEST((loop.clock.elapsed() == 6ms));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(an_rvalue_range_is_moved_in) {
    VirtualLoop loop(backend_under_test());
    Log log;
    Future<void> done;
    {
        std::vector<int> gone{1, 2, 3};
        done = futures::do_for_each(loop.sched, std::move(gone), [&](int x) { log.push_back(x); });
    }
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(log == (Log{1, 2, 3}));
    CHECK_EMPTY(loop.sched);
}

// clang 15 cannot compile libstdc++ 12's views at all (it rejects their
// constraints), so a view can only be given where the compiler can make one.
#if !defined(__clang__) || __clang_major__ >= 16
BOOST_AUTO_TEST_CASE(a_million_elements_of_a_view) {
    VirtualLoop loop(backend_under_test());
    long long sum = 0;
    Future<void> done = futures::do_for_each(loop.sched, std::views::iota(0, 1'000'000), [&](int x) {
        sum += x;
        return futures::make_ready_future(loop.sched);
    });
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(sum == 499999500000LL);
    CHECK_EMPTY(loop.sched);
}
#endif

BOOST_AUTO_TEST_CASE(an_empty_range_is_done_at_once) {
    VirtualLoop loop(backend_under_test());
    std::vector<int> none;
    Future<void> done = futures::do_for_each(loop.sched, none, [](int) { BOOST_ERROR("called"); });
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(the_first_error_stops_the_walk) {
    VirtualLoop loop(backend_under_test());
    Log log;
    Future<void> done = futures::do_for_each(loop.sched, std::vector<int>{1, 2, 3, 4}, [&](int x) {
        log.push_back(x);
        if (x == 2) return futures::make_exception_future<void>(loop.sched, std::runtime_error("two"));
        return futures::sleep(loop.sched, 1ms);
    });
    loop.sched.run();
    BOOST_TEST(done.failed());
    BOOST_TEST(mentions(done.exception(), "two"));
    BOOST_TEST(log == (Log{1, 2}));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_at_every_element) {
    for (int k = 0; k <= 3; ++k) {
        VirtualLoop loop(backend_under_test());
        Log log;
        std::vector<Future<void>> sleeps;
        Future<void> done = futures::do_for_each(loop.sched, std::vector<int>{0, 1, 2}, [&](int x) {
            log.push_back(x);
            sleeps.push_back(futures::sleep(loop.sched, 5ms));
            return sleeps.back();
        });
        if (k > 0) run_until_true(loop.sched, [&] { return static_cast<int>(log.size()) == std::min(k, 3); });
        done.cancel();
        loop.sched.run();
        BOOST_TEST(done.cancelled() == (k <= 3));
        BOOST_TEST(static_cast<int>(log.size()) == std::min(k, 3), "k=" << k);
        for (std::size_t i = 0; i + 1 < sleeps.size(); ++i) BOOST_TEST((sleeps[i].status() == futures::Status::done));
        if (!sleeps.empty()) BOOST_TEST(sleeps.back().cancelled());
        CHECK_EMPTY(loop.sched);
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(parallel)

// Steps that take (element) ms, counting how many are in flight.
struct Flight {
    explicit Flight(reactor::Scheduler& s) : sched(s) {}
    reactor::Scheduler& sched;
    int now = 0;
    int most = 0;
    Log started;
    Future<void> operator()(int ms) {
        started.push_back(ms);
        most = std::max(most, ++now);
        return futures::sleep(sched, std::chrono::milliseconds(ms)).then([this] { --now; });
    }
};

BOOST_AUTO_TEST_CASE(never_more_in_flight_than_the_limit) {
    VirtualLoop loop(backend_under_test());
    Flight flight(loop.sched);
    const std::vector<int> items{5, 1, 4, 1, 5, 9, 2, 6, 5, 3};
    Future<void> done = futures::parallel_for_each(loop.sched, items, std::ref(flight), 3);
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(flight.most == 3);  // the limit, reached and never passed
    BOOST_TEST(flight.now == 0);
    BOOST_TEST(flight.started == items);  // started in range order
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(unlimited_starts_everything_at_once) {
    VirtualLoop loop(backend_under_test());
    Flight flight(loop.sched);
    const std::vector<int> items{5, 1, 4, 1, 5};
    Future<void> done = futures::parallel_for_each(loop.sched, items, std::ref(flight));
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(flight.most == 5);
    BOOST_TEST((loop.clock.elapsed() == 5ms));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(the_first_error_cancels_the_steps_in_flight) {
    VirtualLoop loop(backend_under_test());
    std::vector<Future<void>> steps;
    Log started;
    Future<void> done = futures::parallel_for_each(
        loop.sched, counting_up(10),
        [&](int x) {
            started.push_back(x);
            if (x == 3) {
                steps.push_back(futures::sleep(loop.sched, 2ms).then([] { throw std::runtime_error("three"); }));
            } else {
                steps.push_back(futures::sleep(loop.sched, 10ms));
            }
            return steps.back();
        },
        4);
    loop.sched.run();
    BOOST_TEST(done.failed());
    BOOST_TEST(mentions(done.exception(), "three"));
    BOOST_TEST(started == (Log{0, 1, 2, 3}));  // nothing started after the error
    BOOST_TEST(steps[0].cancelled());
    BOOST_TEST(steps[1].cancelled());
    BOOST_TEST(steps[2].cancelled());
    BOOST_TEST((loop.clock.elapsed() == 2ms));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_cancels_every_step_in_flight) {
    VirtualLoop loop(backend_under_test());
    std::vector<Future<void>> steps;
    Future<void> done = futures::parallel_for_each(
        loop.sched, std::vector<int>{1, 2, 3, 4, 5},
        [&](int x) { return steps.emplace_back(futures::sleep(loop.sched, std::chrono::milliseconds(x))); }, 2);
    run_until_true(loop.sched, [&] { return steps.size() == 3; });  // the first is done, the third started
    done.cancel();
    loop.sched.run();
    BOOST_TEST(done.cancelled());
    BOOST_TEST(steps.size() == 3u);
    BOOST_TEST((steps[0].status() == futures::Status::done));
    BOOST_TEST(steps[1].cancelled());
    BOOST_TEST(steps[2].cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(an_exception_from_f_cancels_the_rest) {
    VirtualLoop loop(backend_under_test());
    std::vector<Future<void>> steps;
    Future<void> done = futures::parallel_for_each(
        loop.sched, std::vector<int>{1, 2, 3},
        [&](int x) {
            if (x == 3) throw std::invalid_argument("bad element");
            return steps.emplace_back(futures::sleep(loop.sched, 1s));
        },
        5);
    loop.sched.run();
    BOOST_TEST(done.failed());
    BOOST_TEST(mentions(done.exception(), "bad element"));
    BOOST_TEST(steps.size() == 2u);
    BOOST_TEST(steps[0].cancelled());
    BOOST_TEST(steps[1].cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_million_ready_steps_allocate_nothing_per_step) {
    constexpr int kElements = 1'000'000;
    VirtualLoop loop(backend_under_test());
    int calls = 0;
    std::size_t at_start = 0, at_end = 0;
    Future<void> done = futures::parallel_for_each(
        loop.sched, counting_up(kElements),
        [&](int) {
            ++calls;
            if (calls == 1000) at_start = reactor_test::allocation_count;
            if (calls == kElements) at_end = reactor_test::allocation_count;
            return futures::make_ready_future(loop.sched);
        },
        8);
    loop.sched.run();
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_TEST(calls == kElements);
    BOOST_TEST(at_end - at_start == 0u);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(bad_limits_are_refused) {
    VirtualLoop loop(backend_under_test());
    std::vector<int> items{1};
    auto f = [](int) {};
    BOOST_CHECK_THROW((void)futures::parallel_for_each(loop.sched, items, f, 0), std::invalid_argument);
    std::forward_list<int> unsized{1, 2};  // a range without size()
    BOOST_CHECK_THROW((void)futures::parallel_for_each(loop.sched, unsized, f), std::invalid_argument);
    Future<void> bounded = futures::parallel_for_each(loop.sched, unsized, f, 2);
    loop.sched.run();
    BOOST_TEST((bounded.status() == futures::Status::done));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(map_reduce_folds_every_value) {
    VirtualLoop loop(backend_under_test());
    Flight flight(loop.sched);
    Log reduced;
    Future<long> total = futures::map_reduce(
        loop.sched, std::vector<int>{4, 1, 3, 2},
        [&](int x) { return futures::sleep(loop.sched, std::chrono::milliseconds(x)).then([x] { return x * x; }); },
        0L,
        [&](long acc, int square) {
            reduced.push_back(square);
            return acc + square;
        },
        2);
    loop.sched.run();
    BOOST_TEST(total.result() == 30L);
    BOOST_TEST(reduced == (Log{1, 16, 9, 4}));  // in the order the mapped futures completed
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(map_reduce_of_nothing_is_init) {
    VirtualLoop loop(backend_under_test());
    Future<std::string> out = futures::map_reduce(
        loop.sched, std::vector<int>{}, [](int x) { return std::to_string(x); }, std::string("init"),
        [](std::string acc, std::string s) { return acc + s; });
    loop.sched.run();
    BOOST_TEST(out.result() == "init");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(map_reduce_an_exception_from_reduce_decides) {
    VirtualLoop loop(backend_under_test());
    std::vector<Future<int>> mapped;
    Future<int> out = futures::map_reduce(
        loop.sched, std::vector<int>{1, 5},
        [&](int x) {
            return mapped.emplace_back(
                futures::sleep(loop.sched, std::chrono::milliseconds(x)).then([x] { return x; }));
        },
        0, [](int, int) -> int { throw std::overflow_error("reduce"); });
    loop.sched.run();
    BOOST_TEST(out.failed());
    BOOST_TEST(mentions(out.exception(), "reduce"));
    BOOST_TEST(mapped[1].cancelled());
    BOOST_TEST((loop.clock.elapsed() == 1ms));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()
