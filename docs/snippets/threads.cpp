// SPDX-License-Identifier: MIT
// docs/threads.md: thread pools returning futures, and name resolution off
// the loop thread. Every lookup here is numeric or of a service name from
// /etc/services: nothing reaches a name server.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <stop_token>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <futures/executor.hpp>
#include <futures/futures.hpp>
#include <futures/resolve.hpp>
#include <reactor/net/resolve_error.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/thread_pool.hpp>

using namespace std::chrono_literals;

namespace {

// Stands for blocking or CPU-heavy work.
long count_primes(long below) {
    long count = 0;
    for (long n = 2; n < below; ++n) {
        bool prime = true;
        for (long d = 2; d * d <= n && prime; ++d) prime = n % d != 0;
        count += prime;
    }
    return count;
}

}  // namespace

BOOST_AUTO_TEST_CASE(threads_run_in_executor) {
    // [snippet:run_in_executor]
    reactor::Scheduler sched;
    // On the process's default pool; the future completes on this thread.
    futures::Future<long> primes = futures::run_in_executor(sched, [] { return count_primes(100000); });
    futures::Future<long> bad = futures::run_in_executor(sched, []() -> long { throw std::domain_error("no"); });
    futures::run_until(sched, primes);
    futures::run_until(sched, bad);
    long n = primes.result();  // 9592
    // bad.result() rethrows the std::domain_error
    // [end-snippet:run_in_executor]
    BOOST_TEST(n == 9592);
    BOOST_CHECK_THROW(bad.result(), std::domain_error);
}

BOOST_AUTO_TEST_CASE(threads_cancel) {
    reactor::Scheduler sched;
    std::promise<void> gate, started;
    auto opened = gate.get_future().share();
    std::atomic<bool> ran{false};
    // [snippet:cancel]
    reactor::ThreadPool pool(1);  // one worker, kept busy below
    auto busy = futures::run_in_executor(sched, pool, [&] { started.set_value(); opened.wait(); });
    auto queued = futures::run_in_executor(sched, pool, [&] { ran = true; });
    started.get_future().wait();
    queued.cancel();  // still queued: taken out, the function never runs
    busy.cancel();    // running: it runs to the end, its result is dropped
    // both futures are cancelled now, not when the worker gets to them
    // [end-snippet:cancel]
    BOOST_TEST(queued.cancelled());
    BOOST_TEST(busy.cancelled());
    gate.set_value();
    pool.shutdown();
    BOOST_TEST(!ran);
}

BOOST_AUTO_TEST_CASE(threads_stop_token) {
    reactor::Scheduler sched;
    std::promise<void> started;
    // [snippet:stop_token]
    reactor::ThreadPool pool(1);
    // A function that takes a std::stop_token is asked to stop through it.
    auto search = futures::run_in_executor(sched, pool, [&](std::stop_token stop) {
        started.set_value();
        long n = 0;
        while (!stop.stop_requested()) ++n;  // a long search, checking now and then
        return n;
    });
    started.get_future().wait();
    search.cancel();  // the future is cancelled at once, and the search stops early
    pool.shutdown();  // so this join does not wait for a search that would never end
    // [end-snippet:stop_token]
    BOOST_TEST(search.cancelled());  // and we got here: the join did not wait forever
}

BOOST_AUTO_TEST_CASE(threads_callback_api) {
    // [snippet:submit]
    reactor::Scheduler sched;
    reactor::ThreadPool pool(2, /*queue_capacity=*/100);
    std::vector<long> results;
    for (long below : {10, 100, 1000}) {
        reactor::Job job = pool.submit(
            sched, [below] { return count_primes(below); },  // on a worker
            [&results](reactor::JobResult<long>&& r) {       // then on the loop thread
                if (r.status == reactor::JobStatus::done) results.push_back(*r.value);
            });
        (void)job;  // job.cancel() would drop it
    }
    sched.run();  // returns once the three results are back: jobs in flight are work
    // [end-snippet:submit]
    std::sort(results.begin(), results.end());
    BOOST_TEST(results == (std::vector<long>{4, 25, 168}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(threads_full_queue) {
    reactor::Scheduler sched;
    reactor::ThreadPool pool(1, 1);
    std::promise<void> gate, started;
    auto opened = gate.get_future().share();
    auto busy = futures::run_in_executor(sched, pool, [&] { started.set_value(); opened.wait(); });
    started.get_future().wait();
    auto queued = futures::run_in_executor(sched, pool, [] {});
    // [snippet:full]
    auto job = futures::run_in_executor(sched, pool, [] { return count_primes(1000); });
    if (job.failed()) {  // at once: the pool's queue is full
        try {
            job.result();
        } catch (const reactor::ThreadPoolFull& e) {
            // "reactor: ThreadPool queue is full (1 jobs waiting for 1 threads)":
            // shed the request, retry later, or do it inline
        }
    }
    // [end-snippet:full]
    BOOST_TEST(job.failed());
    gate.set_value();
    futures::run_until(sched, queued);
}

BOOST_AUTO_TEST_CASE(threads_resolve) {
    // [snippet:resolve]
    reactor::Scheduler sched;
    auto web = futures::resolve(sched, "::1", "80");  // getaddrinfo on the default pool
    reactor::ResolveOptions numeric;
    numeric.numeric_host = true;                      // parse only, never look up
    auto bad = futures::resolve(sched, "localhost", "80", numeric);
    futures::run_until(sched, web);
    futures::run_until(sched, bad);
    std::string first = web.result().front().to_string();  // "[::1]:80"
    try {
        bad.result();
    } catch (const std::system_error& e) {
        // e.code() == reactor::resolve_errc::no_name, and e.what() is
        // "resolve host 'localhost' service '80': Name or service not known"
    }
    // [end-snippet:resolve]
    BOOST_TEST(first == "[::1]:80");
    try {
        bad.result();
        BOOST_FAIL("resolved");
    } catch (const std::system_error& e) {
        BOOST_TEST((e.code() == reactor::resolve_errc::no_name));
        BOOST_TEST(std::string(e.what()).starts_with("resolve host 'localhost' service '80': "));
    }
}
