// SPDX-License-Identifier: MIT
// futures::Scope (issue 47, first landing), on virtual time: close() settles
// only after every child and the continuations their completion queued (the
// key-value server's handlers whose catch_error/finally were still queued);
// fail-fast cancels the siblings and close() fails with the first error, the
// second kept and never reported as never retrieved; supervise; cancel() reaches
// what children wait on through when_all, with_timeout, retry and tasks; nested
// scopes; shield; deadlines; a closed scope refuses children; a scope destroyed
// open with live children (reported and cancelled; debug mode: an abort, in a
// forked child); Scheduler::live() shows scopes as a tree.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <source_location>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <futures/futures.hpp>
#include <reactor/testing/virtual_loop.hpp>

#include "support/check_empty.hpp"
#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::Future;
using futures::Scope;
using futures::ScopeOptions;
using futures::ScopePolicy;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::error_of;
using reactor_test::mentions;
using reactor_test::Reports;

std::string at(unsigned line) { return "test_scope.cpp:" + std::to_string(line); }

bool any_report_mentions(const Reports& reports, const std::string& text) {
    for (const auto& r : reports.list)
        if (reactor::describe(r).find(text) != std::string::npos) return true;
    return false;
}

// A task that waits on a long sleep and records how it ended.
struct Sleeper {
    reactor::Scheduler& sched;
    std::string* ended;
    Future<void> nap{};
    int step = 0;
    futures::Step<void> resume() {
        if (step++ == 0) return nap = futures::sleep(sched, 100s);
        try {
            nap.result();
            *ended = "slept";
        } catch (const futures::CancelledError&) {
            *ended = "cancelled";
            throw;
        }
        return futures::finished;
    }
};

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

// Destroyed open with live children (not debug mode): they are cancelled, and
// the loop's exception handler hears of it, naming the scope's line and each
// child's spawn line.
BOOST_AUTO_TEST_CASE(destroyed_with_live_children_cancels_and_reports) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    std::string task_end;
    Future<void> leaf;
    Future<void> task;
    unsigned made = 0, leaf_line = 0, task_line = 0;
    {
        Scope scope(loop.sched);
        made = __LINE__ - 1;
        leaf = scope.spawn(futures::sleep(loop.sched, 100s));
        leaf_line = __LINE__ - 1;
        task = scope.spawn(Sleeper{loop.sched, &task_end});
        task_line = __LINE__ - 1;
        loop.sched.run_once();  // the task starts
    }
    BOOST_TEST(leaf.cancelled());
    BOOST_REQUIRE(reports.size() == 1u);
    const std::string line = reactor::describe(reports[0]);
    BOOST_TEST(line.find(at(made)) != std::string::npos, line);
    BOOST_TEST(line.find(at(leaf_line)) != std::string::npos, line);
    BOOST_TEST(line.find(at(task_line)) != std::string::npos, line);
    BOOST_TEST(line.find("cancelled") != std::string::npos, line);
    loop.sched.run();
    BOOST_TEST(task.cancelled());
    BOOST_TEST(task_end == "cancelled");
    BOOST_TEST(reports.size() == 1u);
    leaf = {};
    task = {};
    CHECK_EMPTY(loop.sched);
}

// Debug mode: the same is an abort naming the lines (in a forked child).
BOOST_AUTO_TEST_CASE(destroyed_with_live_children_aborts_in_debug_mode) {
    int out[2];
    BOOST_REQUIRE(::pipe(out) == 0);
    const std::source_location made = std::source_location::current();
    const std::source_location spawned = std::source_location::current();
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
        std::signal(SIGABRT, SIG_DFL);  // Boost.Test's handler would carry on with the next case
        ::dup2(out[1], 2);
        ::close(out[0]);
        reactor::Scheduler::Options options;
        options.debug = true;
        reactor::Scheduler sched(std::move(options));
        {
            Scope scope(sched, {}, made);
            Future<void> pending(sched);
            scope.spawn(pending, spawned);
        }
        ::_exit(0);  // not reached
    }
    ::close(out[1]);
    std::string err;
    char buf[512];
    for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<std::size_t>(n));
    ::close(out[0]);
    int status = 0;
    BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
    BOOST_TEST(WIFSIGNALED(status));
    BOOST_TEST((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT));
    BOOST_TEST(err.find(at(made.line())) != std::string::npos, err);
    BOOST_TEST(err.find(at(spawned.line())) != std::string::npos, err);
}

// Debug mode, but an exception unwinds through the scope's owner: leaving
// early on purpose, so the children are cancelled and reported, no abort.
BOOST_AUTO_TEST_CASE(unwinding_through_an_open_scope_cancels_even_in_debug_mode) {
    reactor::Scheduler::Options options;
    options.debug = true;
    options.backend = backend_under_test();
    reactor::Scheduler sched(std::move(options));
    Reports reports(sched);
    Future<void> child;
    try {
        Scope scope(sched);
        child = scope.spawn(futures::sleep(sched, 100s));
        throw std::runtime_error("the caller gives up");
    } catch (const std::runtime_error&) {
    }
    BOOST_TEST(child.cancelled());
    BOOST_TEST(reports.size() == 1u);
    sched.run();
    child = {};
    CHECK_EMPTY(sched);
}

// Destroying a closed scope's handle is fine: the close() future carries on.
BOOST_AUTO_TEST_CASE(a_closed_scope_may_be_dropped) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    bool ran = false;
    Future<void> closed;
    {
        Scope scope(loop.sched);
        scope.spawn(futures::sleep(loop.sched, 1s).then([&] { ran = true; }));
        closed = scope.close();
    }
    futures::run_until_complete(loop.sched, closed);
    BOOST_TEST(ran);
    BOOST_TEST(reports.size() == 0u);
    // A moved scope: the handle moves, the children stay.
    Scope a(loop.sched);
    Future<void> child = a.spawn(futures::sleep(loop.sched, 1s));
    Scope b(std::move(a));
    BOOST_TEST(!a.valid());
    BOOST_TEST(b.live_children() == 1u);
    futures::run_until_complete(loop.sched, b.close());
    BOOST_TEST(child.done());
}

// Scheduler::live() shows the scopes as a tree: the outer scope, its nested
// scope (naming its parent), then the nested scope's child with its spawn line.
BOOST_AUTO_TEST_CASE(live_shows_scopes_as_a_tree) {
    VirtualLoop loop(backend_under_test());
    std::string task_end;
    {
        Scope outer(loop.sched);
        const unsigned outer_line = __LINE__ - 1;
        Scope inner(outer);
        const unsigned inner_line = __LINE__ - 1;
        inner.spawn(Sleeper{loop.sched, &task_end});
        const unsigned task_line = __LINE__ - 1;
        loop.sched.run_once();
        std::vector<reactor::LiveItem> scopes;
        for (const reactor::LiveItem& item : loop.sched.live())
            if (item.kind == reactor::LiveItem::Kind::scope) scopes.push_back(item);
        BOOST_REQUIRE(scopes.size() == 3u);
        BOOST_TEST(scopes[0].where.line() == outer_line);
        BOOST_TEST(scopes[0].detail.find("1 live child") != std::string::npos, scopes[0].detail);
        BOOST_TEST(scopes[1].where.line() == inner_line);
        BOOST_TEST(scopes[1].detail.find("nested in the scope created at " + std::string(scopes[0].where.file_name()) +
                                         ":" + std::to_string(outer_line)) != std::string::npos,
                   scopes[1].detail);
        BOOST_TEST(scopes[2].where.line() == task_line);
        BOOST_TEST(scopes[2].detail.find("a Task") != std::string::npos, scopes[2].detail);
        BOOST_TEST(scopes[2].detail.find("waiting on the Future") != std::string::npos, scopes[2].detail);
        outer.cancel();
        (void)inner.close();
        futures::run_until_complete(loop.sched, outer.close());
    }
    loop.sched.run();
    CHECK_EMPTY(loop.sched);  // no scope left listed
}

// Scheduler::close() with an open scope: the children are cancelled, the
// scope ends, and dropping its handle afterwards reports nothing.
BOOST_AUTO_TEST_CASE(scheduler_close_ends_open_scopes) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    Scope scope(loop.sched);
    Future<void> child = scope.spawn(futures::sleep(loop.sched, 100s));
    loop.sched.close();
    BOOST_TEST(child.cancelled());
    BOOST_TEST(scope.settled());
    BOOST_TEST(scope.live_children() == 0u);
}
