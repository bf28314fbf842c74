// SPDX-License-Identifier: MIT
// futures::Scope against the anchors' reported bugs (issue 47, "Proof"): each
// test ports one bug of asyncio's TaskGroup/timeout, Trio's nursery or folly's
// futures to Scope, with_timeout, when_all and cancel, and names its source.
// On virtual time; every report of the loop's exception handler is counted.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/futures.hpp>
#include <reactor/testing/virtual_loop.hpp>

#include "support/check_empty.hpp"
#include "support/futures_util.hpp"
#include "support/scope_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::Future;
using futures::Scope;
using futures::ScopeOptions;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::error_of;
using reactor_test::mentions;
using reactor_test::Reports;

// A task that sleeps 100 s; asked to stop, it replaces the CancelledError with
// an error of its own (asyncio's parent task that "replaces the cancelled error").
struct Replacer {
    reactor::Scheduler& sched;
    Future<void> nap{};
    int step = 0;
    futures::Step<void> resume() {
        if (step++ == 0) return nap = futures::sleep(sched, 100s);
        try {
            nap.result();
        } catch (const futures::CancelledError&) {
            throw std::logic_error("cleanup failed");
        }
        return futures::finished;
    }
};

}  // namespace

// cpython #116720 ("Nested TaskGroup can silently swallow cancellation request
// from parent TaskGroup"): an outer group's child fails while a nested group's
// child fails too; the nested group ate the parent's cancellation and the code
// after it ran on ("should not get here"). Here: the code after the nested
// scope is a continuation of its close(), spawned into the outer scope. It
// must not run, whichever of the two errors comes first in the turn, or when
// the outer scope is cancelled (outer.cancel()) instead of failing; and no
// error is lost: the outer scope keeps both.
BOOST_AUTO_TEST_CASE(cpython_116720_nested_scope_does_not_swallow_the_parents_cancel) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    for (int variant = 0; variant < 3; ++variant) {
        const auto t0 = loop.clock.elapsed();
        bool after_inner = false;
        Scope outer(loop.sched);
        Future<void> inner_fails(loop.sched), sibling_fails(loop.sched);
        outer.spawn(sibling_fails);
        Future<void> inner_leaf, inner_closed;
        {
            Scope inner(outer);
            inner.spawn(inner_fails);
            inner_leaf = inner.spawn(futures::sleep(loop.sched, 100s));
            inner_closed = inner.close();
        }
        Future<void> body = outer.spawn(inner_closed.catch_error([](const std::runtime_error&) {}).then([&] {
            after_inner = true;  // "should not get here"
            return futures::sleep(loop.sched, 50s);
        }));
        // Both in one callback, so in one loop turn: the nested child's error
        // and the outer scope's failure (either order) or its cancel().
        (void)loop.sched.call_later(1s, [&] {
            const auto inner_error = std::make_exception_ptr(std::runtime_error("inner child failed"));
            const auto sibling_error = std::make_exception_ptr(std::runtime_error("outer sibling failed"));
            if (variant == 0) {
                inner_fails.set_exception(inner_error);
                sibling_fails.set_exception(sibling_error);
            } else if (variant == 1) {
                sibling_fails.set_exception(sibling_error);
                inner_fails.set_exception(inner_error);
            } else {
                inner_fails.set_exception(inner_error);
                sibling_fails.set_result();
                outer.cancel();
            }
        });
        Future<void> closed = outer.close();
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, closed), std::runtime_error);
        BOOST_TEST(!after_inner, "variant " << variant);
        BOOST_TEST(body.cancelled());
        BOOST_TEST(inner_leaf.cancelled());
        BOOST_TEST((loop.clock.elapsed() - t0 == 1s));  // nobody waited for the 50 s or 100 s sleeps
        std::vector<std::string> seen;
        for (const auto& e : outer.errors()) seen.push_back(e.message());
        if (variant == 2) {
            // cancel() is not an error, the nested scope's child's error is.
            BOOST_TEST(seen == std::vector<std::string>{"inner child failed"}, boost::test_tools::per_element());
        } else {
            BOOST_TEST(seen.size() == 2u);
            BOOST_TEST(std::count(seen.begin(), seen.end(), "inner child failed") == 1);
            BOOST_TEST(std::count(seen.begin(), seen.end(), "outer sibling failed") == 1);
        }
        BOOST_REQUIRE(!seen.empty());
        BOOST_TEST(mentions(error_of(closed), seen.front()));
        loop.sched.run();
    }
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}

// cpython #95289 ("asyncio.TaskGroup corrupts uncancel() stack when the parent
// task replaces the cancelled error"): after a cancellation was replaced by
// another error, later timeouts were misattributed (CancelledError where a
// TimeoutError was due). Here a child replaces the cancellation that a
// with_timeout around close() caused; then, on the same loop, each way a
// scope can end is attributed to its cause: its own deadline (TimeoutError
// naming the scope), an outer with_timeout (its TimeoutError; the scope
// cancelled from outside), its own cancel() (success).
BOOST_AUTO_TEST_CASE(cpython_95289_timeouts_are_attributed_after_a_replaced_cancellation) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    {
        Scope scope(loop.sched);
        Future<void> task = scope.spawn(Replacer{loop.sched});
        Future<void> closed = scope.close();
        Future<void> bounded = futures::with_timeout(closed, 1s);
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, bounded), futures::TimeoutError);
        loop.sched.run();
        BOOST_TEST(loop.clock.elapsed() == 1s);
        // The replacing error is the scope's, kept and read here (not lost, not reported).
        BOOST_TEST(task.failed());
        BOOST_TEST(mentions(error_of(closed), "cleanup failed"));
        BOOST_REQUIRE(scope.errors().size() == 1u);
    }
    const auto t0 = loop.clock.elapsed();
    {
        Scope scope(loop.sched, ScopeOptions{.deadline = loop.sched.now() + 1s});
        scope.spawn(futures::sleep(loop.sched, 100s));
        Future<void> bounded = futures::with_timeout(scope.close(), 5s);
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, bounded), futures::TimeoutError);
        BOOST_TEST(mentions(error_of(bounded), "deadline"));  // the scope's own, not with_timeout's
        BOOST_TEST(loop.clock.elapsed() - t0 == 1s);
    }
    {
        Scope scope(loop.sched, ScopeOptions{.deadline = loop.sched.now() + 5s});
        scope.spawn(futures::sleep(loop.sched, 100s));
        Future<void> closed = scope.close();
        Future<void> bounded = futures::with_timeout(closed, 1s);
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, bounded), futures::TimeoutError);
        BOOST_TEST(!mentions(error_of(bounded), "deadline"));
        loop.sched.run();
        BOOST_TEST(closed.cancelled());  // cancelled from outside, not timed out itself
        BOOST_TEST(loop.clock.elapsed() - t0 == 2s);
    }
    {
        Scope scope(loop.sched);
        scope.spawn(futures::sleep(loop.sched, 100s));
        scope.cancel();
        Future<void> bounded = futures::with_timeout(scope.close(), 1s);
        futures::run_until_complete(loop.sched, bounded);  // the scope's own cancel: success
        BOOST_TEST(loop.clock.elapsed() - t0 == 2s);
    }
    loop.sched.run();
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}

// cpython #133747 ("asyncio.TaskGroup's uncancelation behavior in 3.12 is
// inconsistent"): wait_for(delay(group), 0.1) where the group's child fails at
// once and delay() sleeps 1 s before re-raising: 3.12 let a CancelledError out
// instead of the TimeoutError. Here: the same chain in a with_timeout, and in a
// deadline scope: TimeoutError at 100 ms, the delay cancelled, the group's
// error kept in its errors() and read by the handler, nothing reported.
BOOST_AUTO_TEST_CASE(cpython_133747_timeout_around_a_failed_scope_is_a_timeout) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    auto delayed_group = [&](Scope& group) {
        group.spawn([]() -> Future<void> { throw std::runtime_error("child failed"); });
        return group.close().catch_error([&](std::exception_ptr e) {
            return futures::sleep(loop.sched, 1s).then([e] { std::rethrow_exception(e); });
        });
    };
    {
        Scope group(loop.sched);
        Future<void> delayed = delayed_group(group);
        Future<void> bounded = futures::with_timeout(delayed, 100ms);
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, bounded), futures::TimeoutError);
        BOOST_TEST(loop.clock.elapsed() == 100ms);
        BOOST_TEST(delayed.cancelled());
        BOOST_REQUIRE(group.errors().size() == 1u);
        BOOST_TEST(group.errors()[0].message() == "child failed");
    }
    {
        Scope outer(loop.sched, ScopeOptions{.deadline = loop.sched.now() + 100ms});
        Scope group(loop.sched);  // not nested: its error is the delay's to handle, as in the report
        Future<void> delayed = outer.spawn(delayed_group(group));
        Future<void> closed = outer.close();
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, closed), futures::TimeoutError);
        BOOST_TEST(loop.clock.elapsed() == 200ms);
        BOOST_TEST(delayed.cancelled());
        BOOST_TEST(outer.errors().empty());
        BOOST_TEST(group.errors().size() == 1u);
    }
    loop.sched.run();
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}

// trio#1457 ("A nursery might inject a Cancelled even when none of the tasks
// received a Cancelled"): with the enclosing scope cancelled while the body
// raised RuntimeError, the nursery raised MultiError(RuntimeError, Cancelled).
// Here: a nested scope whose one child (then two) failed at once, its parent
// cancelled in the same turn: it fails with exactly those errors, no
// CancelledError among them; and a scope cancelled while no child raised ends
// quietly (done), its completed children untouched.
BOOST_AUTO_TEST_CASE(trio_1457_no_cancellation_is_injected_among_the_errors) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    auto has_cancel = [](const std::vector<futures::ScopeError>& errors) {
        for (const auto& e : errors) {
            try {
                std::rethrow_exception(e.error);
            } catch (const futures::CancelledError&) {
                return true;
            } catch (...) {
            }
        }
        return false;
    };
    for (int failing = 1; failing <= 2; ++failing) {
        Scope outer(loop.sched);
        Scope inner(outer);
        for (int i = 0; i < failing; ++i)
            inner.spawn([]() -> Future<void> { throw std::runtime_error("body raised"); });
        outer.cancel();
        Future<void> inner_closed = inner.close();
        Future<void> closed = outer.close();
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, closed), std::runtime_error);
        BOOST_TEST(inner_closed.failed());
        BOOST_TEST(inner.errors().size() == static_cast<std::size_t>(failing));
        BOOST_TEST(!has_cancel(inner.errors()));
        BOOST_TEST(outer.errors().size() == 1u);  // the nested scope's failure
        BOOST_TEST(!has_cancel(outer.errors()));
    }
    {
        Scope outer(loop.sched);
        Scope inner(outer);
        Future<void> quick = inner.spawn(futures::sleep(loop.sched, 1s));
        Future<void> slow = inner.spawn(futures::sleep(loop.sched, 100s));
        Future<void> inner_closed = inner.close();
        (void)loop.sched.call_later(2s, [&] { outer.cancel(); });
        futures::run_until_complete(loop.sched, outer.close());  // no child raised: no error
        BOOST_TEST((quick.status() == futures::Status::done));
        BOOST_TEST(slow.cancelled());
        BOOST_TEST(inner_closed.cancelled());  // cancelled from outside (its parent), not failed
        BOOST_TEST(outer.errors().empty());
        BOOST_TEST(inner.errors().empty());
    }
    loop.sched.run();
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}

// folly#1237 ("Future interruption (raise, cancel) doesn't propagate through
// collect"): cancelling collect(f1, f2) reached neither promise's interrupt
// handler (it printed 0, not 2). Here: cancelling when_all(f1, f2) reaches
// both hand-made futures; and a scope's cancel reaches, at once (no loop
// turn), futures behind when_all, when_any, with_timeout and a then chain.
BOOST_AUTO_TEST_CASE(folly_1237_cancel_passes_through_collect) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    int interrupted = 0;
    auto interruptible = [&] {
        Future<void> f(loop.sched);
        f.add_done_callback([&](Future<void>& self) { interrupted += self.cancelled() ? 1 : 0; });
        return f;
    };
    {
        Future<void> f1 = interruptible(), f2 = interruptible();
        auto all = futures::when_all(f1, f2);
        all.cancel();
        BOOST_TEST(f1.cancelled());
        BOOST_TEST(f2.cancelled());
        loop.sched.run();
        BOOST_TEST(interrupted == 2);
    }
    interrupted = 0;
    {
        std::vector<Future<void>> inputs;
        for (int i = 0; i < 6; ++i) inputs.push_back(interruptible());
        Scope scope(loop.sched);
        scope.spawn(futures::when_all(futures::when_any(std::vector<Future<void>>{inputs[0], inputs[1]}), futures::with_timeout(inputs[2], 1h)));
        scope.spawn(futures::when_all(inputs[3], inputs[4]).then([](auto&&) {}));
        scope.spawn(inputs[5].then([] { return 1; }).then([](int) {}));
        scope.cancel();
        for (const auto& f : inputs) BOOST_TEST(f.cancelled());
        futures::run_until_complete(loop.sched, scope.close());
        BOOST_TEST(interrupted == 6);
    }
    loop.sched.run();
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}
