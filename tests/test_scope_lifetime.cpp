// SPDX-License-Identifier: MIT
// futures::Scope (issue 47), the end of its lifetime: a scope destroyed open
// with live children (cancelled and reported; in debug mode an abort, tested
// in a forked child; an exception unwinding through it is not a bug), a
// closed scope's handle dropped or moved, Scheduler::live() showing scopes as
// a tree, Scheduler::close() ending open scopes.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <source_location>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

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
using reactor::testing::VirtualLoop;
using reactor_test::any_report_mentions;
using reactor_test::at;
using reactor_test::backend_under_test;
using reactor_test::mentions;
using reactor_test::Reports;
using reactor_test::Sleeper;

}  // namespace
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

// live() names what each plain child waits on, from what its state keeps: a
// leaf its timer (due in virtual time), fd or stream read; a continuation its
// upstream (and what that leaf waits on); a when_all its pending inputs.
BOOST_AUTO_TEST_CASE(live_names_what_each_plain_child_waits_on) {
    VirtualLoop loop(backend_under_test());
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    {
        futures::Stream input = futures::Stream::adopt(loop.sched, fds[0]);  // owns fds[0]
        Scope scope(loop.sched);
        const std::string file = std::source_location::current().file_name();
        auto at_line = [&file](unsigned line) { return file + ":" + std::to_string(line); };
        scope.spawn(futures::sleep(loop.sched, 250ms));
        const unsigned sleep_line = __LINE__ - 1;
        Future<void> upstream = futures::sleep(loop.sched, 2s);
        const unsigned upstream_line = __LINE__ - 1;
        scope.spawn(upstream.then([] {}));
        Future<void> first = futures::sleep(loop.sched, 1s);
        const unsigned first_line = __LINE__ - 1;
        Future<void> second = futures::sleep(loop.sched, 3s);
        const unsigned second_line = __LINE__ - 1;
        scope.spawn(futures::when_all(first, second));
        scope.spawn(futures::writable(loop.sched, fds[1]));
        scope.spawn(input.read_until("\n"));
        const unsigned read_line = __LINE__ - 1;

        std::vector<std::string> children;
        for (const reactor::LiveItem& item : loop.sched.live())
            if (item.kind == reactor::LiveItem::Kind::scope && item.detail.starts_with("child of"))
                children.push_back(item.detail);
        BOOST_REQUIRE_EQUAL(children.size(), 5u);
        BOOST_TEST(children[0].ends_with("a Future created at " + at_line(sleep_line) +
                                         ", waiting on a timer due in 0.250 s"),
                   children[0]);
        BOOST_TEST(children[1].ends_with(", waiting on the Future created at " + at_line(upstream_line) +
                                         " (a timer due in 2.000 s)"),
                   children[1]);
        BOOST_TEST(children[2].ends_with(", waiting on 2 inputs: the Future created at " + at_line(first_line) +
                                         " (a timer due in 1.000 s), the Future created at " + at_line(second_line) +
                                         " (a timer due in 3.000 s)"),
                   children[2]);
        BOOST_TEST(children[3].ends_with(", waiting on fd " + std::to_string(fds[1]) + " to become writable"),
                   children[3]);
        BOOST_TEST(children[4].ends_with("a Future created at " + at_line(read_line) + ", waiting on a stream read"),
                   children[4]);
        scope.cancel();
        futures::run_until_complete(loop.sched, scope.close());
    }
    ::close(fds[1]);
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
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

// Scheduler::close() with children that outlast the cancel (a task that
// catches CancelledError and waits on a long sleep, a shielded sleep):
// close()'s bounded run never reaches their end, so the scope, ended with its
// loop, takes its records back out of the pending children's waiters; they
// end cancelled when their timers are dropped, and nothing touches the
// scope's records after that.
BOOST_AUTO_TEST_CASE(scheduler_close_with_a_child_that_outlasts_the_cancel) {
    struct Stubborn {
        reactor::Scheduler& sched;
        Future<void> wait{};
        int step = 0;
        futures::Step<void> resume() {
            ++step;
            if (step == 1) return wait = futures::sleep(sched, 1s);
            if (step == 2) {
                try {
                    wait.result();
                } catch (const futures::CancelledError&) {
                    return wait = futures::sleep(sched, 1h);  // not yet
                }
            }
            wait.result();
            return futures::finished;
        }
    };
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    Scope scope(loop.sched);
    Future<void> child = scope.spawn(Stubborn{loop.sched});
    Future<void> other = scope.spawn(futures::sleep(loop.sched, 100s));
    // No cancellation reaches it: pending until close() drops its timer.
    Future<void> shielded = scope.spawn_shielded(futures::sleep(loop.sched, 100s));
    loop.sched.run_once();  // Stubborn waits on its first sleep
    loop.sched.close();
    BOOST_TEST(child.cancelled());
    BOOST_TEST(other.cancelled());
    BOOST_TEST(shielded.cancelled());
    BOOST_TEST(scope.settled());
    BOOST_TEST(scope.live_children() == 0u);
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}
