// SPDX-License-Identifier: MIT
// then / catch_error / finally tests: values and futures (flattened), errors
// skipping continuations, recovery, cleanup that always runs, cancellation
// travelling up a chain, and the million-long chain that must not grow the stack
// and must free everything.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/futures.hpp>

#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::CancelledError;
using futures::Future;
using futures::InvalidStateError;
using reactor_test::Reports;
using reactor_test::Tracked;
using reactor_test::what;
using Bag = std::vector<std::string>;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;

std::uintptr_t stack_address() {
    int marker = 0;
    // The address only, as a number (how deep the stack is here): never used
    // as a pointer. __builtin_frame_address would do, but not on every compiler.
    volatile std::uintptr_t address = reinterpret_cast<std::uintptr_t>(&marker);
    return address;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(values)

BOOST_AUTO_TEST_CASE(chain_of_values_runs_from_the_loop) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> src(loop.sched);
    Future<std::string> out = src.then([&](int v) {
                                     bag.push_back("plus one");
                                     return v + 1;
                                 })
                                  .then([&](int v) {
                                      bag.push_back("to string");
                                      return std::to_string(v);
                                  });
    src.set_result(41);
    BOOST_TEST(bag.empty());  // never inline
    loop.sched.run_once();
    BOOST_TEST(bag == Bag{"plus one"});  // one step per iteration
    loop.sched.run();
    BOOST_TEST(bag == (Bag{"plus one", "to string"}));
    BOOST_TEST(out.result() == "42");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(void_sources_and_void_results) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<void> src(loop.sched);
    Future<void> done = src.then([&] { bag.push_back("void -> void"); });
    Future<int> num = src.then([] { return 3; });
    Future<void> back = num.then([&](int v) { bag.push_back("int -> void " + std::to_string(v)); });
    src.set_result();
    loop.sched.run();
    BOOST_TEST(bag == (Bag{"void -> void", "int -> void 3"}));
    BOOST_TEST(done.done());
    BOOST_TEST(back.done());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(returned_future_is_flattened) {
    VirtualLoop loop(backend_under_test());
    Future<int> src(loop.sched);
    auto start = loop.clock.now();
    Future<std::string> out = src.then([&](int v) {
        return futures::sleep(loop.sched, 2s).then([v] { return std::to_string(v * 2); });
    });
    static_assert(std::is_same_v<decltype(out), Future<std::string>>);
    src.set_result(21);
    loop.sched.run();
    BOOST_TEST(out.result() == "42");
    BOOST_TEST((loop.clock.now() - start == 2s));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(value_is_moved_to_the_only_reader_and_copied_for_shared_ones) {
    VirtualLoop loop(backend_under_test());
    {
        Future<std::unique_ptr<int>> src(loop.sched);
        Future<int> out = src.then([](std::unique_ptr<int> p) { return *p + 1; });
        src.set_result(std::make_unique<int>(1));
        loop.sched.run();
        BOOST_TEST(out.result() == 2);
    }
    {
        // Two readers and a handle kept by the test: everyone sees the value.
        Future<std::string> src(loop.sched);
        Future<std::size_t> a = src.then([](std::string s) { return s.size(); });
        Future<std::string> b = src.then([](std::string s) { return s + "!"; });
        src.set_result("shared");
        loop.sched.run();
        BOOST_TEST(a.result() == 6u);
        BOOST_TEST(b.result() == "shared!");
        BOOST_TEST(src.result() == "shared");
    }
    {
        // A continuation taking T& sees the stored value itself.
        Future<std::vector<int>> src(loop.sched);
        Future<void> edit = src.then([](std::vector<int>& v) { v.push_back(2); });
        src.set_result(std::vector<int>{1});
        loop.sched.run();
        BOOST_TEST(src.result().size() == 2u);
    }
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(continuation_captures_are_released_once_it_ran) {
    VirtualLoop loop(backend_under_test());
    auto token = std::make_shared<int>(0);
    Future<int> src(loop.sched);
    Future<int> out = src.then([token](int v) { return v; });
    BOOST_TEST(token.use_count() == 2);
    src.set_result(1);
    loop.sched.run();
    BOOST_TEST(token.use_count() == 1);  // out is still alive; the function is gone
    BOOST_TEST(out.result() == 1);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(error_skips_continuations_and_reaches_catch_error) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> src(loop.sched);
    Future<int> out = src.then([&](int v) {
                             bag.push_back("skipped 1");
                             return v;
                         })
                          .then([&](int v) {
                              bag.push_back("skipped 2");
                              return v;
                          })
                          .catch_error([&](const std::runtime_error& e) {
                              bag.push_back(std::string("recovered from ") + e.what());
                              return -1;
                          })
                          .then([&](int v) {
                              bag.push_back("after recovery " + std::to_string(v));
                              return v;
                          });
    src.set_exception(std::runtime_error("boom"));
    loop.sched.run();
    BOOST_TEST(bag == (Bag{"recovered from boom", "after recovery -1"}));
    BOOST_TEST(out.result() == -1);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(exception_thrown_by_a_continuation_fails_the_result) {
    VirtualLoop loop(backend_under_test());
    Future<int> src(loop.sched);
    Future<int> out = src.then([](int) -> int { throw std::logic_error("bad input"); });
    src.set_result(1);
    loop.sched.run();
    BOOST_TEST(out.failed());
    BOOST_TEST(what(out.exception()) == "bad input");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(catch_error_only_catches_the_declared_type) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> src(loop.sched);
    Future<int> out = src.catch_error([&](const std::out_of_range&) {
                             bag.push_back("wrong handler");
                             return 0;
                         })
                          .catch_error([&](const std::logic_error& e) {  // a base class matches
                              bag.push_back(std::string("logic: ") + e.what());
                              return 7;
                          });
    src.set_exception(std::invalid_argument("nope"));
    loop.sched.run();
    BOOST_TEST(bag == Bag{"logic: nope"});
    BOOST_TEST(out.result() == 7);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(catch_error_with_exception_ptr_catches_anything_and_may_return_a_future) {
    VirtualLoop loop(backend_under_test());
    Future<int> src(loop.sched);
    Future<int> out = src.catch_error([&](std::exception_ptr e) {
        BOOST_TEST(what(e) == "first");
        return futures::sleep(loop.sched, 1s).then([] { return 5; });
    });
    src.set_exception(std::runtime_error("first"));
    loop.sched.run();
    BOOST_TEST(out.result() == 5);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(catch_error_passes_values_through_and_can_rethrow) {
    VirtualLoop loop(backend_under_test());
    Future<int> ok(loop.sched);
    Future<int> a = ok.catch_error([](std::exception_ptr) { return -1; });
    Future<int> bad(loop.sched);
    Future<int> b = bad.catch_error([](const std::runtime_error& e) -> int {
        throw std::runtime_error(std::string("wrapped: ") + e.what());
    });
    Future<void> vbad(loop.sched);
    Future<void> c = vbad.catch_error([](const std::exception&) {});
    ok.set_result(3);
    bad.set_exception(std::runtime_error("inner"));
    vbad.set_exception(std::runtime_error("void"));
    loop.sched.run();
    BOOST_TEST(a.result() == 3);
    BOOST_TEST(what(b.exception()) == "wrapped: inner");
    BOOST_CHECK_NO_THROW(c.result());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(catch_error_does_not_see_cancellation) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> src(loop.sched);
    Future<int> out = src.catch_error([&](std::exception_ptr) {
        bag.push_back("handler");
        return 0;
    });
    src.cancel();
    loop.sched.run();
    BOOST_TEST(bag.empty());
    BOOST_TEST(out.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(an_error_passed_down_is_reported_once_by_the_last_holder) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    {
        Future<int> src(loop.sched);
        Future<int> out = src.then([](int v) { return v; }).then([](int v) { return v; });
        const auto line = __LINE__ - 1;
        src.set_exception(std::runtime_error("unread"));
        loop.sched.run();
        out = Future<int>();
        src = Future<int>();
        BOOST_REQUIRE(reports.size() == 1u);  // not once per link
        BOOST_TEST(what(reports[0].exception) == "unread");
        BOOST_TEST(reports[0].origin.line() == line);  // the end of the chain answers for it
    }
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(continuation_returning_an_empty_future_fails_its_result) {
    VirtualLoop loop(backend_under_test());
    Future<int> src(loop.sched);
    Future<int> out = src.then([](int) { return Future<int>(); });
    src.set_result(1);
    loop.sched.run();
    BOOST_CHECK_THROW(out.result(), InvalidStateError);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(exception_after_own_future_was_cancelled_is_reported_not_lost) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    Future<int> src(loop.sched);
    Future<int> out;
    out = src.then([&](int) -> int {
        out.cancel();
        throw std::runtime_error("after cancel");
    });
    src.set_result(1);
    loop.sched.run();
    BOOST_TEST(out.cancelled());
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(what(reports[0].exception) == "after cancel");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(finally_)

BOOST_AUTO_TEST_CASE(runs_on_success_failure_and_cancellation_and_passes_the_outcome_on) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> ok(loop.sched), bad(loop.sched), gone(loop.sched);
    Future<int> a = ok.finally([&] { bag.push_back("ok"); });
    Future<int> b = bad.finally([&] { bag.push_back("bad"); });
    Future<int> c = gone.finally([&] { bag.push_back("gone"); });
    ok.set_result(1);
    bad.set_exception(std::runtime_error("e"));
    gone.cancel();
    loop.sched.run();
    BOOST_TEST(bag == (Bag{"ok", "bad", "gone"}));
    BOOST_TEST(a.result() == 1);
    BOOST_TEST(what(b.exception()) == "e");
    BOOST_TEST(c.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(runs_even_when_its_own_future_was_cancelled) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<void> timer = futures::sleep(loop.sched, 10s);
    Future<void> out = timer.finally([&] { bag.push_back("cleanup"); });
    BOOST_TEST(out.cancel());  // cancels the timer too
    loop.sched.run();
    BOOST_TEST(bag == Bag{"cleanup"});
    BOOST_TEST(timer.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(waits_for_a_returned_future_and_its_error_wins) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> src(loop.sched);
    auto start = loop.clock.now();
    Future<int> out = src.finally([&] {
        return futures::sleep(loop.sched, 3s).then([&] { bag.push_back("async cleanup done"); });
    });
    Future<int> src2(loop.sched);
    Future<int> out2 = src2.finally([]() -> void { throw std::runtime_error("cleanup failed"); });
    src.set_result(9);
    src2.set_result(1);
    loop.sched.run();
    BOOST_TEST(bag == Bag{"async cleanup done"});
    BOOST_TEST(out.result() == 9);
    BOOST_TEST((loop.clock.now() - start == 3s));
    BOOST_TEST(what(out2.exception()) == "cleanup failed");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cancellation)

BOOST_AUTO_TEST_CASE(cancelled_source_skips_continuation_and_cancels_result) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> src(loop.sched);
    Future<int> out = src.then([&](int v) {
        bag.push_back("ran");
        return v;
    });
    src.cancel();
    loop.sched.run();
    BOOST_TEST(bag.empty());
    BOOST_TEST(out.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_a_derived_future_cancels_what_it_waits_on) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<void> timer = futures::sleep(loop.sched, 5s);
    Future<int> out = timer.then([&] {
                               bag.push_back("ran");
                               return 1;
                           })
                          .then([](int v) { return v; });
    BOOST_TEST(loop.sched.timer_count() == 1u);
    BOOST_TEST(out.cancel());
    BOOST_TEST(timer.cancelled());
    BOOST_TEST(loop.sched.timer_count() == 0u);  // the timer itself is gone
    loop.sched.run();
    BOOST_TEST(bag.empty());
    BOOST_TEST(out.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_after_flattening_cancels_the_inner_future) {
    VirtualLoop loop(backend_under_test());
    Future<void> inner;
    Future<int> src(loop.sched);
    Future<void> out = src.then([&](int) {
        inner = futures::sleep(loop.sched, 5s);
        return inner;
    });
    src.set_result(1);
    loop.sched.run_once();  // the continuation runs and returns the sleep
    BOOST_REQUIRE(inner.valid());
    BOOST_TEST(!src.cancelled());
    BOOST_TEST(out.cancel());
    BOOST_TEST(inner.cancelled());
    BOOST_TEST(src.result() == 1);  // already done: untouched
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancel_travels_up_a_long_chain_without_recursion) {
    VirtualLoop loop(backend_under_test());
    Future<void> head = futures::sleep(loop.sched, 1s);
    Future<void> tail = head;
    for (int i = 0; i < 200000; ++i) tail = tail.then([] {});
    BOOST_TEST(tail.cancel());
    BOOST_TEST(head.cancelled());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(long_chains)

// The regression test for stack growth: a million continuations, each run from
// the ready queue on a fresh stack; then everything they held is freed.
BOOST_AUTO_TEST_CASE(million_long_chain_completes_on_a_flat_stack_and_frees_everything) {
    constexpr int kLength = 1'000'000;
    VirtualLoop loop(backend_under_test());
    std::uintptr_t lowest = UINTPTR_MAX, highest = 0;
    {
        Future<long> src(loop.sched);
        Future<long> tail = src;
        for (int i = 0; i < kLength; ++i) {
            tail = tail.then([&, t = Tracked()](long v) {
                std::uintptr_t here = stack_address();
                lowest = std::min(lowest, here);
                highest = std::max(highest, here);
                return v + 1;
            });
        }
        BOOST_TEST(Tracked::live == kLength);
        src.set_result(0);
        loop.sched.run();
        BOOST_TEST(tail.result() == kLength);
        BOOST_TEST(Tracked::live == 0);  // every continuation's captures were released as it ran
    }
    BOOST_TEST(highest - lowest < 4096u, "continuations ran at stack depths " << (highest - lowest) << " bytes apart");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(million_long_error_propagation) {
    constexpr int kLength = 1'000'000;
    VirtualLoop loop(backend_under_test());
    Future<int> src(loop.sched);
    Future<int> tail = src;
    for (int i = 0; i < kLength; ++i) tail = tail.then([](int v) { return v + 1; });
    Future<int> out = tail.catch_error([](const std::runtime_error&) { return -1; });
    tail = Future<int>();
    src.set_exception(std::runtime_error("at the head"));
    loop.sched.run();
    BOOST_TEST(out.result() == -1);
    CHECK_EMPTY(loop.sched);
}

// Dropping every handle to a pending chain frees it all, without recursing
// a million states deep.
BOOST_AUTO_TEST_CASE(abandoned_pending_chain_is_freed_without_recursion) {
    constexpr int kLength = 1'000'000;
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    {
        Future<int> src(loop.sched);
        Future<int> tail = src;
        for (int i = 0; i < kLength; ++i) tail = tail.then([t = Tracked()](int v) { return v; });
        BOOST_TEST(Tracked::live == kLength);
    }
    BOOST_TEST(Tracked::live == 0);
    BOOST_TEST(reports.size() == 0u);  // pending, not failed: nothing to report
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(pending_chain_is_freed_with_the_scheduler) {
    {
        VirtualLoop loop(backend_under_test());
        Future<void> tail = futures::sleep(loop.sched, 1h);
        for (int i = 0; i < 1000; ++i) tail = tail.then([t = Tracked()] {});
        tail = Future<void>();  // only the timer holds the chain now
        BOOST_TEST(Tracked::live == 1000);
    }
    BOOST_TEST(Tracked::live == 0);
}

BOOST_AUTO_TEST_SUITE_END()
