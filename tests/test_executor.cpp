// SPDX-License-Identifier: MIT
// futures::run_in_executor: a function on a thread pool, its result a Future
// completed on the loop thread. Values, exceptions, cancellation before, while
// and after the function runs, a full queue, shutdown, a Scheduler destroyed
// with jobs in flight, and thousands of jobs from several tasks. Jobs caught
// mid-run wait on a Gate the test opens: nothing depends on timing. CTest runs
// the suite once per selector backend (and CI under TSan).
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <futures/executor.hpp>
#include <futures/futures.hpp>

#include "support/backends.hpp"
#include "support/gate.hpp"
#include "support/futures_util.hpp"

namespace {

using namespace std::chrono_literals;
using futures::CancelledError;
using futures::Future;
using futures::run_in_executor;
using futures::Status;
using reactor::Scheduler;
using reactor::ThreadPool;
using reactor_test::backend_under_test;
using reactor_test::on;

using reactor_test::Gate;

template <class T>
void run_until_done(Scheduler& s, const Future<T>& f) {
    BOOST_REQUIRE(futures::run_until(s, f, 60s));
}

// A task that runs `jobs` jobs on `pool`, one after the other, and returns
// the sum of their results.
class Summer {
public:
    Summer(Scheduler& s, ThreadPool& pool, int base, int jobs) : s_(&s), pool_(&pool), base_(base), jobs_(jobs) {}

    futures::Step<long> resume() {
        if (pending_.valid()) sum_ += pending_.result();
        if (next_ == jobs_) return sum_;
        const int n = base_ + next_++;
        return pending_ = run_in_executor(*s_, *pool_, [n] { return n; });
    }

private:
    Scheduler* s_;
    ThreadPool* pool_;
    int base_, jobs_;
    int next_ = 0;
    long sum_ = 0;
    Future<int> pending_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(the_value_comes_back_on_the_loop_thread) {
    Scheduler s(on(backend_under_test()));
    ThreadPool pool(2);
    const auto loop_id = std::this_thread::get_id();
    Future<std::thread::id> f = run_in_executor(s, pool, [] { return std::this_thread::get_id(); });
    BOOST_TEST((f.status() == Status::pending));
    std::thread::id callback_id;
    f.add_done_callback([&] { callback_id = std::this_thread::get_id(); });
    run_until_done(s, f);
    BOOST_TEST((f.result() != loop_id));
    s.run_for(60s);
    BOOST_TEST((callback_id == loop_id));

    Future<void> v = run_in_executor(s, pool, [] {});
    run_until_done(s, v);
    BOOST_TEST((v.status() == Status::done));
}

BOOST_AUTO_TEST_CASE(an_exception_is_rethrown_by_result) {
    Scheduler s(on(backend_under_test()));
    ThreadPool pool(1);
    Future<int> f = run_in_executor(s, pool, []() -> int { throw std::out_of_range("no such item"); });
    run_until_done(s, f);
    BOOST_TEST(f.failed());
    BOOST_CHECK_EXCEPTION(f.result(), std::out_of_range,
                          [](const std::out_of_range& e) { return std::string(e.what()) == "no such item"; });
}

BOOST_AUTO_TEST_CASE(thousands_of_jobs_from_several_tasks) {
    Scheduler s(on(backend_under_test()));
    ThreadPool pool(3);
    constexpr int kTasks = 4, kJobs = 1000;
    std::vector<Future<long>> tasks;
    for (int t = 0; t < kTasks; ++t) tasks.push_back(futures::spawn(s, Summer(s, pool, t * kJobs, kJobs)));
    auto all = futures::when_all(tasks);
    run_until_done(s, all);
    for (int t = 0; t < kTasks; ++t) {
        const long first = long(t) * kJobs, last = first + kJobs - 1;
        BOOST_TEST(tasks[t].result() == (first + last) * kJobs / 2);
    }
}

BOOST_AUTO_TEST_CASE(cancelled_while_queued_the_function_never_runs) {
    Scheduler s(on(backend_under_test()));
    ThreadPool pool(1);
    Gate gate;
    std::promise<void> started;
    Future<void> blocker = run_in_executor(s, pool, [&] { started.set_value(); gate.wait(); });
    std::atomic<bool> ran{false};
    reactor_test::Tracked::live = 0;
    Future<int> f = run_in_executor(s, pool, [&ran, t = reactor_test::Tracked()] { ran = true; return 1; });
    started.get_future().wait();
    BOOST_TEST(pool.queued() == 1u);
    BOOST_TEST(f.cancel());
    BOOST_TEST(f.cancelled());
    BOOST_TEST(pool.queued() == 0u);
    BOOST_TEST(reactor_test::Tracked::live == 0);  // the function is destroyed at once, unrun
    gate.open();
    run_until_done(s, blocker);
    s.run_for(60s);
    BOOST_TEST(!ran);
    BOOST_CHECK_THROW(f.result(), CancelledError);
}

BOOST_AUTO_TEST_CASE(cancelled_while_running_the_result_is_discarded) {
    Scheduler s(on(backend_under_test()));
    ThreadPool pool(1);
    Gate gate;
    std::promise<void> started;
    std::atomic<bool> finished{false};
    Future<int> f = run_in_executor(s, pool, [&] {
        started.set_value();
        gate.wait();
        finished = true;
        return 7;
    });
    started.get_future().wait();
    BOOST_TEST(f.cancel());
    BOOST_TEST(f.cancelled());  // at once, not when the function returns
    gate.open();
    // The loop has nothing left to wait for: the result is not wanted.
    BOOST_TEST((s.run_for(60s) == reactor::RunStatus::idle));
    pool.shutdown();  // waits for the function
    BOOST_TEST(finished);
    BOOST_TEST(f.cancelled());
    BOOST_CHECK_THROW(f.result(), CancelledError);
}

BOOST_AUTO_TEST_CASE(cancelled_when_done_changes_nothing) {
    Scheduler s(on(backend_under_test()));
    ThreadPool pool(1);
    Future<int> f = run_in_executor(s, pool, [] { return 3; });
    run_until_done(s, f);
    BOOST_TEST(!f.cancel());
    BOOST_TEST(f.result() == 3);
}

// Cancelling what waits on it (a continuation, with_timeout) reaches the job.
BOOST_AUTO_TEST_CASE(cancelling_a_continuation_cancels_the_queued_job) {
    Scheduler s(on(backend_under_test()));
    ThreadPool pool(1);
    Gate gate;
    std::promise<void> started;
    Future<void> blocker = run_in_executor(s, pool, [&] { started.set_value(); gate.wait(); });
    std::atomic<bool> ran{false};
    Future<int> job = run_in_executor(s, pool, [&ran] { ran = true; return 1; });
    Future<int> doubled = job.then([](int v) { return 2 * v; });
    started.get_future().wait();
    BOOST_TEST(doubled.cancel());
    BOOST_TEST(job.cancelled());
    gate.open();
    run_until_done(s, blocker);
    BOOST_TEST(!ran);
}

BOOST_AUTO_TEST_CASE(a_full_queue_fails_the_future_at_once) {
    Scheduler s(on(backend_under_test()));
    ThreadPool pool(1, 1);
    Gate gate;
    std::promise<void> started;
    Future<void> blocker = run_in_executor(s, pool, [&] { started.set_value(); gate.wait(); });
    started.get_future().wait();
    Future<int> queued = run_in_executor(s, pool, [] { return 1; });
    std::atomic<bool> ran{false};
    Future<int> refused = run_in_executor(s, pool, [&ran] { ran = true; return 2; });
    BOOST_TEST(refused.failed());
    BOOST_CHECK_THROW(refused.result(), reactor::ThreadPoolFull);
    gate.open();
    run_until_done(s, queued);
    BOOST_TEST(queued.result() == 1);
    BOOST_TEST(!ran);
}

BOOST_AUTO_TEST_CASE(shutdown_cancels_the_queued_jobs_futures) {
    Scheduler s(on(backend_under_test()));
    ThreadPool pool(1);
    Gate gate;
    std::promise<void> started;
    Future<int> running = run_in_executor(s, pool, [&] { started.set_value(); gate.wait(); return 1; });
    std::atomic<int> ran{0};
    std::vector<Future<int>> queued;
    for (int i = 0; i < 3; ++i) queued.push_back(run_in_executor(s, pool, [&ran] { ++ran; return 2; }));
    started.get_future().wait();
    std::thread opener([&] {
        while (!pool.is_shut_down()) std::this_thread::yield();
        gate.open();
    });
    pool.shutdown();
    opener.join();
    for (auto& f : queued) {
        run_until_done(s, f);
        BOOST_TEST(f.cancelled());
        BOOST_CHECK_EXCEPTION(f.result(), CancelledError, [](const CancelledError& e) {
            return std::string(e.what()).find("the thread pool was shut down before this job started") !=
                   std::string::npos;
        });
    }
    run_until_done(s, running);
    BOOST_TEST(running.result() == 1);  // a running job finishes and is delivered
    BOOST_TEST(ran == 0);
    Future<int> late = run_in_executor(s, pool, [] { return 3; });
    BOOST_TEST(late.failed());
    BOOST_CHECK_THROW(late.result(), reactor::ThreadPoolClosed);
}

// The futures go with their Scheduler: nothing leaks (ASan), no worker
// touches the dead loop (TSan), and queued functions never run.
BOOST_AUTO_TEST_CASE(a_scheduler_destroyed_with_jobs_in_flight) {
    ThreadPool pool(1);
    Gate gate;
    std::promise<void> started;
    std::atomic<int> ran{0};
    reactor_test::Tracked::live = 0;
    {
        Scheduler s(on(backend_under_test()));
        Future<int> running = run_in_executor(s, pool, [&, t = reactor_test::Tracked()] {
            started.set_value();
            gate.wait();
            ++ran;
            return 1;
        });
        std::vector<Future<int>> queued;
        for (int i = 0; i < 3; ++i)
            queued.push_back(run_in_executor(s, pool, [&ran, t = reactor_test::Tracked()] { ++ran; return 2; }));
        // A task waiting on one of them is freed too.
        auto waiter = futures::spawn(s, Summer(s, pool, 0, 5));
        s.run_for(0s);
        started.get_future().wait();
    }
    gate.open();
    pool.shutdown();
    BOOST_TEST(ran == 1);
    BOOST_TEST(reactor_test::Tracked::live == 0);
}

// Scheduler::live() names a job by the run_in_executor line; close() ends
// it: the future is cancelled, one queued never runs, and the loop may run
// again (the job's keep-alive timer is gone with it).
BOOST_AUTO_TEST_CASE(close_cancels_the_jobs_in_flight) {
    ThreadPool pool(1);
    Gate gate;
    std::promise<void> started;
    std::atomic<int> ran{0};
    Scheduler s(on(backend_under_test()));
    std::vector<std::string> reports;
    s.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    Future<int> running = run_in_executor(s, pool, [&] {
        started.set_value();
        gate.wait();
        return ++ran;
    });
    const int line = __LINE__ + 1;
    Future<int> queued = run_in_executor(s, pool, [&] { return ++ran; });
    started.get_future().wait();
    const std::vector<reactor::LiveItem> live = s.live();
    BOOST_REQUIRE(live.size() == 2u);
    BOOST_TEST(live[1].to_string().find("thread-pool job") == 0u, live[1].to_string());
    BOOST_TEST(live[1].where.line() == static_cast<unsigned>(line));
    BOOST_TEST(s.close().size() == 2u);
    BOOST_TEST(running.cancelled());
    BOOST_TEST(queued.cancelled());
    BOOST_TEST(pool.queued() == 0u);
    BOOST_TEST(reports.size() == 3u);  // each job, then the summary
    gate.open();
    pool.shutdown();
    BOOST_TEST(ran == 1);  // the running one finished on its worker; its result was dropped
    BOOST_TEST((s.run_for(60s) == reactor::RunStatus::idle));
    BOOST_TEST(s.live().empty());
}

BOOST_AUTO_TEST_CASE(the_default_executor_is_one_per_process) {
    Scheduler s(on(backend_under_test()));
    ThreadPool& pool = futures::default_executor();
    BOOST_TEST(&pool == &futures::default_executor());
    BOOST_TEST(pool.thread_count() == ThreadPool::default_thread_count());
    Future<int> f = run_in_executor(s, [] { return 11; });
    run_until_done(s, f);
    BOOST_TEST(f.result() == 11);
}

// An fn taking a std::stop_token is asked to stop when its future is
// cancelled while it runs, and can end early.
BOOST_AUTO_TEST_CASE(cancelling_the_future_asks_a_running_fn_to_stop) {
    ThreadPool pool(1);
    Scheduler sched(on(backend_under_test()));
    auto started = std::make_shared<std::promise<void>>();
    auto stopped_early = std::make_shared<std::atomic<bool>>(false);
    Future<int> f = run_in_executor(sched, pool, [started, stopped_early](std::stop_token token) {
        started->set_value();
        const auto give_up = std::chrono::steady_clock::now() + 60s;
        while (!token.stop_requested() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
        stopped_early->store(token.stop_requested());
        return 1;
    });
    started->get_future().wait();
    BOOST_TEST(f.cancel());
    BOOST_TEST(f.cancelled());
    pool.shutdown();
    BOOST_TEST(stopped_early->load());
    sched.run();
}

// ---- as children of a futures::Scope (issue 47) ----

namespace {

// Runs f on `s`'s loop `turns` loop iterations from now (each turn queues the
// next, so the loop never blocks meanwhile): a point in loop time that does
// not depend on the clock.
void after_turns(Scheduler& s, int turns, std::function<void()> f) {
    if (turns == 0) {
        f();
        return;
    }
    s.call_soon([&s, turns, f = std::move(f)]() mutable { after_turns(s, turns - 1, std::move(f)); });
}

}  // namespace

// Cancelling the scope cancels the job's future, which asks the running fn to
// stop through its std::stop_token; close() settles only once fn has
// returned (it waits, here, on a gate that the loop opens some turns after
// the cancel: before the scope waited for the worker, close() had settled by
// then, with fn still running).
BOOST_AUTO_TEST_CASE(a_cancelled_scope_stops_its_running_job_and_close_waits_for_it) {
    ThreadPool pool(1);
    Scheduler sched(on(backend_under_test()));
    auto started = std::make_shared<Gate>();
    auto release = std::make_shared<Gate>();
    auto saw_stop = std::make_shared<std::atomic<bool>>(false);
    auto returned = std::make_shared<std::atomic<bool>>(false);
    futures::Scope scope(sched);
    Future<int> job = scope.spawn(run_in_executor(sched, pool, [=](std::stop_token token) {
        started->open();
        const auto give_up = std::chrono::steady_clock::now() + 60s;  // a bound, not a timing
        while (!token.stop_requested() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
        saw_stop->store(token.stop_requested());
        release->wait();
        returned->store(true);
        return 1;
    }));
    Future<void> closed = scope.close();
    bool returned_when_closed = false;
    closed.add_done_callback([&](Future<void>&) { returned_when_closed = returned->load(); });
    started->wait();
    scope.cancel();
    BOOST_TEST(job.cancelled());
    after_turns(sched, 8, [release] { release->open(); });
    BOOST_TEST(futures::run_until(sched, closed, 60s));
    sched.run();  // the turns to the gate, if close() settled first (it must not)
    BOOST_TEST((closed.status() == Status::done));  // the scope's own cancel is not an error
    BOOST_TEST(saw_stop->load());
    BOOST_TEST(returned_when_closed);
    BOOST_TEST(scope.live_children() == 0u);
    pool.shutdown();
    sched.run();
}

// A job queued behind a busy single-thread pool is taken out of the queue
// when its scope is cancelled: it never runs, and close() does not wait for
// the job that keeps the worker busy.
BOOST_AUTO_TEST_CASE(a_job_queued_in_a_cancelled_scope_never_runs) {
    ThreadPool pool(1);
    Scheduler sched(on(backend_under_test()));
    auto busy_started = std::make_shared<Gate>();
    auto busy_release = std::make_shared<Gate>();
    Future<void> busy = run_in_executor(sched, pool, [=] {
        busy_started->open();
        busy_release->wait();
    });
    busy_started->wait();
    auto ran = std::make_shared<std::atomic<bool>>(false);
    futures::Scope scope(sched);
    Future<void> queued = scope.spawn(run_in_executor(sched, pool, [ran] { ran->store(true); }));
    BOOST_TEST(pool.queued() == 1u);
    Future<void> closed = scope.close();
    scope.cancel();
    BOOST_TEST(pool.queued() == 0u);
    BOOST_TEST(futures::run_until(sched, closed, 60s));
    BOOST_TEST((closed.status() == Status::done));
    BOOST_TEST(queued.cancelled());
    BOOST_TEST(!busy.done());
    busy_release->open();
    BOOST_TEST(futures::run_until(sched, busy, 60s));
    pool.shutdown();
    BOOST_TEST(!ran->load());
    sched.run();
}
