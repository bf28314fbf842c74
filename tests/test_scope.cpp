// SPDX-License-Identifier: MIT
// futures::Scope (issue 47, first landing), on virtual time: close() settles
// only after every child and the continuations their completion queued (the
// key-value server's handlers whose catch_error/finally were still queued);
// fail-fast cancels the siblings and close() fails with the first error, the
// second kept and never reported as never retrieved; supervise; cancel() reaches
// what children wait on through when_all, with_timeout, retry, keep_doing and
// tasks (the shape of folly#1237: interrupts through collect); nested scopes;
// shield; deadlines; a closed scope refuses children. The end of a scope's
// lifetime is test_scope_lifetime.cpp.
#include <boost/test/unit_test.hpp>

#include <chrono>
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
using futures::ScopePolicy;
using reactor::testing::VirtualLoop;
using reactor_test::any_report_mentions;
using reactor_test::at;
using reactor_test::backend_under_test;
using reactor_test::error_of;
using reactor_test::mentions;
using reactor_test::Reports;
using reactor_test::Sleeper;

}  // namespace

// The key-value server: the handler's catch_error and finally were
// still queued when the old serve_until's future completed. With the handler
// in a scope, close() settles after both have run, and the idle-timeout error
// is handled, not reported as never retrieved.
BOOST_AUTO_TEST_CASE(close_waits_for_the_continuations_the_children_queued) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    bool caught = false, finished = false;
    {
        Future<void> connection_closed(loop.sched);
        Scope server(loop.sched);
        // The handler: its first step fails when the connection closes; the
        // catch_error and finally are attached to the spawned child, after spawn.
        Future<void> handler = server.spawn(connection_closed.then([] {
            throw std::runtime_error("stream: idle_timeout passed");
        }));
        Future<void> handled = handler.catch_error([&](const std::runtime_error&) { caught = true; })
                                   .finally([&] { finished = true; });
        connection_closed.set_result();
        Future<void> done = server.close();
        bool finally_before_close_waiters = false;
        Future<void> after = done.catch_error([&](std::exception_ptr) { finally_before_close_waiters = finished; });
        // Settling close() on the spot would let run_until_complete return
        // before `finally` ran (it is one loop turn behind catch_error). The
        // child failed (its own catch_error handled the error for the
        // program): a fail-fast scope fails with it too.
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, done), std::runtime_error);
        BOOST_TEST(caught);
        BOOST_TEST(finished);
        futures::run_until_complete(loop.sched, after);
        BOOST_TEST(finally_before_close_waiters);
    }
    loop.sched.run();
    BOOST_TEST(!any_report_mentions(reports, "never retrieved"));
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}

// The same with the whole chain spawned (the usual way): close() waits for
// its end, and a continuation two hops after a child also ran first.
BOOST_AUTO_TEST_CASE(close_waits_for_a_whole_chain_and_queued_second_hops) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    std::vector<std::string> order;
    {
        Scope scope(loop.sched);
        Future<void> child = scope.spawn(futures::sleep(loop.sched, 1s));
        Future<void> two_hops =
            child.then([&] { order.push_back("hop 1"); }).then([&] { order.push_back("hop 2"); });
        Future<void> chain = scope.spawn(futures::sleep(loop.sched, 2s)
                                             .then([&] { throw std::logic_error("handler failed"); })
                                             .catch_error([&](const std::logic_error&) { order.push_back("caught"); })
                                             .finally([&] { order.push_back("finally"); }));
        Future<void> closed = scope.close().then([&] { order.push_back("closed"); });
        futures::run_until_complete(loop.sched, closed);
        BOOST_TEST(loop.clock.elapsed() == 2s);
    }
    const std::vector<std::string> expected{"hop 1", "hop 2", "caught", "finally", "closed"};
    BOOST_TEST(order == expected, boost::test_tools::per_element());
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}

// Fail-fast: the first error cancels the siblings (a then-chain and a task)
// at once; close() fails with it; the second error, from the same turn, is kept
// in errors() and never reported as never retrieved.
BOOST_AUTO_TEST_CASE(fail_fast_cancels_siblings_and_keeps_every_error) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    bool long_sibling_ran = false;
    std::string task_end;
    {
        Scope scope(loop.sched);
        scope.spawn(futures::sleep(loop.sched, 1s).then([] { throw std::runtime_error("first"); }));
        const unsigned second_line = __LINE__ + 1;
        scope.spawn(futures::sleep(loop.sched, 1s).then([] { throw std::runtime_error("second"); }));
        Future<void> sibling = scope.spawn(futures::sleep(loop.sched, 10s).then([&] { long_sibling_ran = true; }));
        Future<void> task = scope.spawn(Sleeper{loop.sched, &task_end});
        Future<void> closed = scope.close();
        BOOST_CHECK_EXCEPTION(futures::run_until_complete(loop.sched, closed), std::runtime_error,
                              [](const std::runtime_error& e) { return std::string(e.what()) == "first"; });
        BOOST_TEST(loop.clock.elapsed() == 1s);  // not 10 s nor 100 s: the siblings were cancelled
        BOOST_TEST(sibling.cancelled());
        BOOST_TEST(task.cancelled());
        BOOST_TEST(task_end == "cancelled");
        BOOST_TEST(!long_sibling_ran);
        BOOST_REQUIRE(scope.errors().size() == 2u);
        BOOST_TEST(scope.errors()[0].message() == "first");
        BOOST_TEST(scope.errors()[1].message() == "second");
        BOOST_TEST(scope.errors()[1].spawned_at.line() == second_line);
        // The same list, attached to close()'s future (for when the handle is gone).
        BOOST_TEST(&Scope::errors_of(closed) == &scope.errors());
        BOOST_CHECK_THROW(Scope::errors_of(sibling), std::invalid_argument);
    }
    loop.sched.run();
    BOOST_TEST(reports.size() == 0u);  // neither error reported, "never retrieved" or otherwise
    CHECK_EMPTY(loop.sched);
}

// A callable that throws, or a spawned error nobody closes over: never lost.
BOOST_AUTO_TEST_CASE(fail_fast_error_of_an_unread_scope_is_reported_once) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    unsigned made = 0;
    {
        Scope scope(loop.sched);
        made = __LINE__ - 1;
        scope.spawn([]() -> Future<int> { throw std::invalid_argument("bad request"); });
        loop.sched.run();
        (void)scope.close();  // nobody reads it
    }
    loop.sched.run();
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(reports[0].message.find("never retrieved") != std::string::npos);
    BOOST_TEST(reports[0].origin.line() == made);
    BOOST_TEST(mentions(reports[0].exception, "bad request"));
    CHECK_EMPTY(loop.sched);
}

// Supervise: children fail alone, each error goes to the scope's handler with
// its spawn line, siblings run to the end, close() succeeds.
BOOST_AUTO_TEST_CASE(supervise_children_fail_alone) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    std::vector<futures::ScopeError> seen;
    bool sibling_done = false;
    {
        Scope scope(loop.sched, ScopeOptions{.policy = ScopePolicy::supervise,
                                             .on_error = [&](const futures::ScopeError& e) { seen.push_back(e); }});
        const unsigned failing_line = __LINE__ + 1;
        scope.spawn(futures::sleep(loop.sched, 1s).then([] { throw std::runtime_error("handler 1 failed"); }));
        scope.spawn(futures::sleep(loop.sched, 5s).then([&] { sibling_done = true; }));
        futures::run_until_complete(loop.sched, scope.close());
        BOOST_REQUIRE(seen.size() == 1u);
        BOOST_TEST(seen[0].message() == "handler 1 failed");
        BOOST_TEST(seen[0].spawned_at.line() == failing_line);
        BOOST_TEST(sibling_done);
        BOOST_TEST(loop.clock.elapsed() == 5s);
        BOOST_TEST(scope.errors().empty());
    }
    // Without a handler, the loop's exception handler hears of it, naming the spawn line.
    {
        Scope scope(loop.sched, ScopeOptions{.policy = ScopePolicy::supervise});
        const unsigned failing_line = __LINE__ + 1;
        scope.spawn(futures::sleep(loop.sched, 1s).then([] { throw std::runtime_error("handler 2 failed"); }));
        futures::run_until_complete(loop.sched, scope.close());
        BOOST_REQUIRE(reports.size() == 1u);
        BOOST_TEST(reports[0].origin.line() == failing_line);
        BOOST_TEST(mentions(reports[0].exception, "handler 2 failed"));
    }
    loop.sched.run();
    BOOST_TEST(reports.size() == 1u);
    CHECK_EMPTY(loop.sched);
}

// cancel() reaches what each child waits on: inside when_all, with_timeout,
// retry (its attempt), keep_doing (its step), a task; the timers go with them.
BOOST_AUTO_TEST_CASE(cancel_reaches_what_children_wait_on) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    std::string task_end;
    std::vector<Future<void>> leaves;
    auto leaf = [&](reactor::Duration d) {
        leaves.push_back(futures::sleep(loop.sched, d));
        return leaves.back();
    };
    int attempts = 0;
    {
        Scope scope(loop.sched);
        auto all = scope.spawn(futures::when_all(leaf(10s), leaf(20s)));
        Future<void> bounded = scope.spawn(futures::with_timeout(leaf(30s), 1h));
        futures::RetryPolicy policy;
        policy.max_attempts = 5;
        Future<void> retried = scope.spawn(futures::retry(loop.sched, policy, [&] {
            ++attempts;
            return leaf(40s);
        }));
        Future<void> task = scope.spawn(Sleeper{loop.sched, &task_end});
        Future<void> looping = scope.spawn(futures::keep_doing(loop.sched, [&] { return leaf(50s); }));
        (void)loop.sched.call_later(1s, [&] { scope.cancel(); });
        futures::run_until_complete(loop.sched, scope.close());  // the scope's own cancel: not an error
        BOOST_TEST(loop.clock.elapsed() == 1s);
        BOOST_TEST(all.cancelled());
        BOOST_TEST(bounded.cancelled());
        BOOST_TEST(retried.cancelled());
        BOOST_TEST(task.cancelled());
        BOOST_TEST(task_end == "cancelled");
        BOOST_TEST(looping.cancelled());
        BOOST_TEST(attempts == 1);
        BOOST_TEST(leaves.size() == 5u);  // when_all 2, with_timeout 1, retry 1 attempt, keep_doing 1 step
        for (const Future<void>& l : leaves) BOOST_TEST(l.cancelled());
    }
    leaves.clear();
    loop.sched.run();
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}

// Nesting: cancelling the outer scope reaches the leaves of a scope two levels
// down at once; the outer close() waits for its nested scopes.
BOOST_AUTO_TEST_CASE(nested_scopes) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    {
        Scope outer(loop.sched);
        Scope middle(outer);
        Scope inner(middle);
        Future<void> deep = inner.spawn(futures::sleep(loop.sched, 100s));
        Future<void> shallow = middle.spawn(futures::sleep(loop.sched, 100s));
        outer.cancel();
        BOOST_TEST(deep.cancelled());  // at once, not an iteration later
        BOOST_TEST(shallow.cancelled());
        Future<void> inner_closed = inner.close();
        Future<void> middle_closed = middle.close();
        futures::run_until_complete(loop.sched, outer.close());
        BOOST_TEST(inner_closed.cancelled());  // cancelled from outside
        BOOST_TEST(middle_closed.cancelled());
        BOOST_TEST(loop.clock.elapsed() == 0s);
    }
    {
        Scope outer(loop.sched);
        Future<void> outer_closed = outer.close();  // no children: settles one loop turn later
        BOOST_TEST(!outer.settled());
        loop.sched.run_once();
        BOOST_TEST(outer.settled());
    }
    {
        Scope outer(loop.sched);
        Scope inner(outer);
        inner.spawn(futures::sleep(loop.sched, 5s));
        Future<void> outer_closed = outer.close();
        Future<void> inner_closed = inner.close();
        futures::run_until_complete(loop.sched, outer_closed);
        BOOST_TEST(loop.clock.elapsed() == 5s);  // the outer waited for the inner's child
        BOOST_TEST((inner_closed.status() == futures::Status::done));
    }
    // An error deep down fails every level with the same error.
    {
        Scope outer(loop.sched);
        Scope inner(outer);
        Future<void> sibling = outer.spawn(futures::sleep(loop.sched, 100s));
        inner.spawn(futures::sleep(loop.sched, 1s).then([] { throw std::runtime_error("leaf failed"); }));
        Future<void> inner_closed = inner.close();
        Future<void> outer_closed = outer.close();
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, outer_closed), std::runtime_error);
        BOOST_TEST(mentions(error_of(outer_closed), "leaf failed"));
        BOOST_TEST(sibling.cancelled());
    }
    loop.sched.run();
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}

// A shielded child is out of the scope's cancellation, not out of close().
BOOST_AUTO_TEST_CASE(a_shielded_child_outlives_cancel_but_not_close) {
    VirtualLoop loop(backend_under_test());
    Scope scope(loop.sched);
    Future<void> kept = scope.spawn_shielded(futures::sleep(loop.sched, 2s));
    Future<void> plain = scope.spawn(futures::sleep(loop.sched, 2s));
    scope.cancel();
    BOOST_TEST(plain.cancelled());
    BOOST_TEST(!kept.done());
    futures::run_until_complete(loop.sched, scope.close());
    BOOST_TEST(kept.done());
    BOOST_TEST(!kept.cancelled());
    BOOST_TEST(loop.clock.elapsed() == 2s);
}

// spawn(shield(f)) is the other choice: the scope cancels the shield, so
// close() does not wait for f, which runs on to its end (docs/futures.md).
BOOST_AUTO_TEST_CASE(a_spawned_shield_lets_close_go_on_while_its_work_runs) {
    VirtualLoop loop(backend_under_test());
    Scope scope(loop.sched);
    Future<void> work = futures::sleep(loop.sched, 2s);
    Future<void> child = scope.spawn(futures::shield(work));
    scope.cancel();
    futures::run_until_complete(loop.sched, scope.close());
    BOOST_TEST(child.cancelled());
    BOOST_TEST(!work.done());
    BOOST_TEST(loop.clock.elapsed() < 2s);
    futures::run_until_complete(loop.sched, work);
    BOOST_TEST(!work.cancelled());
    BOOST_TEST(loop.clock.elapsed() == 2s);
}

// A deadline scope on virtual time: the children are cancelled when the
// deadline passes and close() fails with TimeoutError naming the scope;
// cancelling close() from outside (with_timeout) ends it cancelled.
BOOST_AUTO_TEST_CASE(deadline_scope) {
    VirtualLoop loop(backend_under_test());
    bool quick_done = false;
    {
        Scope scope(loop.sched, ScopeOptions{.deadline = loop.sched.now() + 3s});
        const unsigned made = __LINE__ - 1;
        Future<void> slow = scope.spawn(futures::sleep(loop.sched, 10s));
        scope.spawn(futures::sleep(loop.sched, 1s).then([&] { quick_done = true; }));
        Future<void> closed = scope.close();
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, closed), futures::TimeoutError);
        BOOST_TEST(mentions(error_of(closed), at(made)));
        BOOST_TEST(loop.clock.elapsed() == 3s);
        BOOST_TEST(slow.cancelled());
        BOOST_TEST(quick_done);
    }
    {
        Scope scope(loop.sched);
        futures::with_deadline(scope, loop.sched.now() + 1h);
        futures::with_deadline(scope, loop.sched.now() + 2s);  // replaces
        scope.spawn(futures::sleep(loop.sched, 10s));
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, scope.close()), futures::TimeoutError);
        BOOST_TEST(loop.clock.elapsed() == 5s);
    }
    {
        Scope scope(loop.sched);
        Future<void> slow = scope.spawn(futures::sleep(loop.sched, 10s));
        Future<void> bounded = futures::with_timeout(scope.close(), 1s);
        BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, bounded), futures::TimeoutError);
        BOOST_TEST(slow.cancelled());
        loop.sched.run();
        BOOST_TEST(scope.settled());
    }
    {
        Scope scope(loop.sched, ScopeOptions{.deadline = loop.sched.now() + 1h});  // settles first: timer gone
        futures::run_until_complete(loop.sched, scope.close());
    }
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_closed_scope_refuses_children) {
    VirtualLoop loop(backend_under_test());
    Scope scope(loop.sched);
    const unsigned made = __LINE__ - 1;
    Future<void> closed = scope.close();
    const unsigned closed_at = __LINE__ - 1;
    BOOST_TEST(scope.closed());
    auto names_lines = [&](const futures::ScopeClosedError& e) {
        const std::string what = e.what();
        return what.find(at(made)) != std::string::npos && what.find(at(closed_at)) != std::string::npos;
    };
    BOOST_CHECK_EXCEPTION(scope.spawn(futures::sleep(loop.sched, 1s)), futures::ScopeClosedError, names_lines);
    BOOST_CHECK_EXCEPTION(scope.spawn([&] { return futures::sleep(loop.sched, 1s); }), futures::ScopeClosedError,
                          names_lines);
    std::string never;
    BOOST_CHECK_EXCEPTION(scope.spawn(Sleeper{loop.sched, &never}), futures::ScopeClosedError, names_lines);
    BOOST_CHECK_EXCEPTION(Scope{scope}, futures::ScopeClosedError, names_lines);
    futures::run_until_complete(loop.sched, closed);
    loop.sched.run();
    BOOST_TEST(never.empty());  // the refused task never started
    CHECK_EMPTY(loop.sched);
}

// A scope's record of a child is a waiter of the child's that runs inside
// its completion (no loop turn of its own): the child's other waiters,
// registered before and after the spawn, keep their order and their ids, a
// child in two scopes is counted by both, and both close() futures settle
// after every waiter of the child has run.
BOOST_AUTO_TEST_CASE(a_child_in_two_scopes_keeps_its_other_waiters_in_order) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    std::vector<std::string> order;
    {
        Future<int> child(loop.sched);
        child.add_done_callback([&](Future<int>&) { order.push_back("before"); });
        Scope a(loop.sched), b(loop.sched);
        a.spawn(child);
        const futures::CallbackId removed = child.add_done_callback([&](Future<int>&) { order.push_back("removed"); });
        b.spawn(child);
        child.add_done_callback([&](Future<int>&) { order.push_back("after"); });
        BOOST_TEST(child.remove_done_callback(removed));
        BOOST_TEST(a.live_children() == 1u);
        BOOST_TEST(b.live_children() == 1u);
        Future<void> a_closed = a.close().then([&] { order.push_back("a closed"); });
        Future<void> b_closed = b.close().then([&] { order.push_back("b closed"); });
        child.set_result(7);
        loop.sched.run_once();  // the child's waiters, then each scope's reaping of it
        BOOST_TEST(a.live_children() == 0u);
        BOOST_TEST(b.live_children() == 0u);
        BOOST_TEST(!a.settled());
        futures::run_until_complete(loop.sched, futures::when_all(a_closed, b_closed));
        BOOST_TEST(child.result() == 7);
    }
    const std::vector<std::string> expected{"before", "after", "a closed", "b closed"};
    BOOST_TEST(order == expected, boost::test_tools::per_element());
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}

// A scope keeps its children's records in blocks of its own, reused: waves
// of children, more at once than one block holds, come and go; live() and
// live_children() follow them, a child done before its spawn is counted
// until the next turn, and cancel() reaches every pending one.
BOOST_AUTO_TEST_CASE(many_children_in_waves_reuse_the_scopes_records) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    {
        Scope scope(loop.sched);
        auto listed = [&] {
            std::size_t n = 0;
            for (const reactor::LiveItem& item : loop.sched.live())
                if (item.kind == reactor::LiveItem::Kind::scope) ++n;
            return n;
        };
        for (int wave = 0; wave < 5; ++wave) {
            std::vector<Future<void>> children;
            const int count = wave == 2 ? 2500 : 300;  // 2500: several blocks of the largest size
            for (int i = 0; i < count; ++i) {
                children.emplace_back(loop.sched);
                if (i % 3 == 0) {
                    scope.spawn_shielded(children.back());
                } else {
                    scope.spawn(children.back());
                }
            }
            scope.spawn(futures::make_ready_future(loop.sched));
            BOOST_TEST(scope.live_children() == static_cast<std::size_t>(count) + 1);
            BOOST_TEST(listed() == static_cast<std::size_t>(count) + 1);  // the scope, and each pending child
            for (int i = 0; i < count; i += 2) children[static_cast<std::size_t>(i)].set_result();
            loop.sched.run();
            BOOST_TEST(scope.live_children() == static_cast<std::size_t>(count / 2));
            BOOST_TEST(listed() == static_cast<std::size_t>(count / 2) + 1);
            for (int i = 1; i < count; i += 2) children[static_cast<std::size_t>(i)].set_result();
            loop.sched.run();
            BOOST_TEST(scope.live_children() == 0u);
        }
        std::vector<Future<void>> pending;
        for (int i = 0; i < 1500; ++i) pending.push_back(scope.spawn(futures::sleep(loop.sched, 10s)));
        scope.cancel();
        futures::run_until_complete(loop.sched, scope.close());
        for (const Future<void>& f : pending) BOOST_TEST_REQUIRE(f.cancelled());
        BOOST_TEST(loop.clock.elapsed() == 0s);
    }
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}
