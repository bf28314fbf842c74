// SPDX-License-Identifier: MIT
// docs/futures.md, "Scopes": futures::Scope beside asyncio's TaskGroup,
// fail-fast and supervise, cancel and deadlines, nesting. On virtual time
// (reactor::testing::VirtualLoop): each case checks what the text says.
#include <chrono>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/submit_to.hpp>
#include <reactor/loop_group.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/thread_pool.hpp>
#include <reactor/testing/virtual_loop.hpp>

using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(scopes_task_group) {
    reactor::testing::VirtualLoop loop;
    reactor::Scheduler& sched = loop.sched;
    auto fetch = [&](std::string what) { return futures::sleep(sched, 10ms).then([what] { return what; }); };
    // [snippet:scopes_basic]
    futures::Scope scope(sched);
    futures::Future<std::string> a = scope.spawn(fetch("a"));
    futures::Future<std::string> b = scope.spawn([&] { return fetch("b"); });
    futures::Future<std::string> both = scope.close().then([a, b] { return a.result() + b.result(); });
    // [end-snippet:scopes_basic]
    BOOST_TEST(futures::run_until_complete(sched, both) == "ab");
}

BOOST_AUTO_TEST_CASE(scopes_fail_fast) {
    reactor::testing::VirtualLoop loop;
    reactor::Scheduler& sched = loop.sched;
    auto fetch = [&](std::string what) { return futures::sleep(sched, 10ms).then([what] { return what; }); };
    // [snippet:scopes_fail_fast]
    futures::Scope scope(sched);  // fail-fast: the default
    scope.spawn(futures::sleep(sched, 10ms).then([]() -> std::string { throw std::runtime_error("a failed"); }));
    futures::Future<std::string> b = scope.spawn(futures::sleep(sched, 1h).then([&] { return fetch("b"); }));
    futures::Future<void> closed = scope.close();  // fails with "a failed" after 10 ms; b is cancelled
    // [end-snippet:scopes_fail_fast]
    BOOST_CHECK_THROW(futures::run_until_complete(sched, closed), std::runtime_error);
    BOOST_TEST(b.cancelled());
    BOOST_TEST(loop.clock.elapsed() == 10ms);
    BOOST_TEST(scope.errors().size() == 1u);
}

BOOST_AUTO_TEST_CASE(scopes_supervise) {
    reactor::testing::VirtualLoop loop;
    reactor::Scheduler& sched = loop.sched;
    std::vector<std::string> log;
    auto handle = [&](int n) {
        return futures::sleep(sched, n * 10ms).then([n] {
            if (n == 2) throw std::runtime_error("connection reset");
        });
    };
    // [snippet:scopes_supervise]
    futures::Scope handlers(sched, {.policy = futures::ScopePolicy::supervise,
                                    .on_error = [&](const futures::ScopeError& e) {
                                        log.push_back(fmt::format("handler spawned at line {} failed: {}",
                                                                  e.spawned_at.line(), e.message()));
                                    }});
    for (int n = 1; n <= 3; ++n) handlers.spawn(handle(n));  // 2 fails alone: 1 and 3 finish
    futures::Future<void> all_done = handlers.close();       // succeeds, after the three
    // [end-snippet:scopes_supervise]
    futures::run_until_complete(sched, all_done);
    BOOST_TEST(log.size() == 1u);
    BOOST_TEST(log.at(0).find("connection reset") != std::string::npos);
    BOOST_TEST(loop.clock.elapsed() == 30ms);
}

BOOST_AUTO_TEST_CASE(scopes_cancel_and_deadline) {
    reactor::testing::VirtualLoop loop;
    reactor::Scheduler& sched = loop.sched;
    // [snippet:scopes_deadline]
    futures::Scope scope(sched, {.deadline = sched.now() + 2s});  // or futures::with_deadline(scope, t)
    futures::Future<void> slow = scope.spawn(futures::when_all(futures::sleep(sched, 1h), futures::sleep(sched, 5s))
                                                 .then([](auto) {}));
    futures::Future<void> closed = scope.close();  // at 2 s: slow (and both sleeps) cancelled, TimeoutError
    // [end-snippet:scopes_deadline]
    BOOST_CHECK_THROW(futures::run_until_complete(sched, closed), futures::TimeoutError);
    BOOST_TEST(slow.cancelled());
    BOOST_TEST(loop.clock.elapsed() == 2s);

    // [snippet:scopes_nested]
    futures::Scope outer(sched);
    futures::Scope inner(outer);  // a child of outer: outer.close() waits for it
    futures::Future<void> leaf = inner.spawn(futures::sleep(sched, 1h));
    outer.cancel();               // reaches leaf at once; inner.close() will end cancelled
    futures::Future<void> inner_closed = inner.close();
    futures::Future<void> outer_closed = outer.close();  // succeeds: its own cancel is no error
    // [end-snippet:scopes_nested]
    BOOST_TEST(leaf.cancelled());
    futures::run_until_complete(sched, outer_closed);
    BOOST_TEST(inner_closed.cancelled());
    BOOST_TEST(loop.clock.elapsed() == 2s);
}

// Real threads (a pool, a loop group): what the scope waits for is the work
// itself, ended by the scope's cancellation.
BOOST_AUTO_TEST_CASE(scopes_threads) {
    reactor::Scheduler sched;
    reactor::ThreadPool pool(1);
    reactor::LoopGroupOptions two;
    two.loops = 2;
    reactor::LoopGroup group(two);
    group.start();
    std::vector<int> data(64, 1);
    auto crunch_a_little = [&](std::vector<int>& d) { d[0] = d[0] * 3 % 7; };
    // fn's Future, made on loop 1: what only a cancellation ends early.
    auto serve_shard = [](reactor::Scheduler& there) { return futures::sleep(there, 1h); };
    {
        // [snippet:scopes_threads]
        futures::Scope scope(sched);
        scope.spawn(futures::run_in_executor(sched, pool, [&](std::stop_token stop) {
            while (!stop.stop_requested()) crunch_a_little(data);  // `data` outlives close()
        }));
        scope.spawn(futures::submit_to(sched, group.loop(1), [&] { return serve_shard(group.loop(1)); }));
        scope.cancel();                                // the job sees the stop; the shard's future is cancelled there
        futures::Future<void> closed = scope.close();  // settles once the job returned and loop 1 is done
        // [end-snippet:scopes_threads]
        BOOST_TEST(futures::run_until(sched, closed, 60s));
        BOOST_TEST((closed.status() == futures::Status::done));
        // The job was either taken out of the queue unrun, or it returned before close() settled.
        BOOST_TEST(scope.live_children() == 0u);
    }
    group.stop();
    pool.shutdown();
}
