// SPDX-License-Identifier: MIT
// docs/futures.md, "Loops, retry and signals": repeat, do_until, do_for_each,
// parallel_for_each, map_reduce, retry and next_signal, beside the asyncio
// code each replaces; over real loopback connections and a real signal.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <fmt/format.h>
#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>

using namespace std::chrono_literals;

namespace {

// The echo server the side-by-side starts with, as a function of the
// Scheduler and the address, so that the other cases can talk to it.
futures::StreamServer start_echo_server(reactor::Scheduler& sched, const reactor::Address& address) {
    // [snippet:loops_echo]
    futures::StreamServer server = futures::start_server(sched, address, [&sched](futures::Stream s) {
        return futures::repeat(sched, [&sched, s]() mutable {
                   return s.read(4096).then([&sched, s](std::string data) mutable {
                       if (data.empty()) return futures::make_ready_future(sched, futures::StopIteration::yes);
                       s.write(data);
                       return s.drain().then([] { return futures::StopIteration::no; });
                   });
               })
            .finally([s]() mutable { s.close(); });
    });
    // [end-snippet:loops_echo]
    return server;
}

// One round trip to the echo server: the length of what came back.
futures::Future<std::size_t> echo_length(reactor::Scheduler& sched, const reactor::Address& address,
                                         std::string message) {
    return futures::open_connection(sched, address).then([message](futures::Stream s) mutable {
        s.write(message);
        return s.read_until("\n").then([s](std::string line) mutable {
            s.close();
            return line.size();
        });
    });
}

}  // namespace

BOOST_AUTO_TEST_CASE(loops_echo_server) {
    reactor::Scheduler sched;
    futures::StreamServer server = start_echo_server(sched, reactor::Address::parse("127.0.0.1", 0));
    BOOST_TEST(futures::run_until_complete(sched, echo_length(sched, server.address(), "hello\n")) == 6u);
    server.close();
    sched.run();  // the handler's read sees EOF: repeat stops, finally closes the stream
    BOOST_TEST(server.active() == 0u);
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(loops_retry) {
    reactor::Scheduler sched;
    int attempts = 0;
    // Fails twice with a connection error, then answers.
    auto fetch = [&]() -> futures::Future<std::string> {
        if (++attempts < 3) {
            return futures::make_exception_future<std::string>(sched, std::runtime_error("connection refused"));
        }
        return futures::make_ready_future(sched, std::string("payload"));
    };
    // [snippet:loops_retry]
    futures::RetryPolicy policy;
    policy.max_attempts = 5;
    policy.initial_delay = 10ms;  // then 20 ms, 40 ms, 80 ms, each scaled by 1 - 0.5 * random
    policy.jitter = 0.5;
    futures::Future<std::string> body =
        futures::retry(sched, policy, [&] { return futures::with_timeout(fetch(), 1s); });
    // [end-snippet:loops_retry]
    const reactor::TimePoint start = sched.now();
    BOOST_TEST(futures::run_until_complete(sched, body) == "payload");
    BOOST_TEST(attempts == 3);
    BOOST_TEST((sched.now() - start >= 15ms));  // at least half of 10 ms + 20 ms of backoff
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(loops_on_retry) {
    reactor::Scheduler sched;
    int attempts = 0;
    auto fetch = [&]() -> futures::Future<std::string> {
        if (++attempts < 3) {
            return futures::make_exception_future<std::string>(sched, std::runtime_error("connection refused"));
        }
        return futures::make_ready_future(sched, std::string("payload"));
    };
    std::vector<std::string> log;
    // [snippet:loops_on_retry]
    futures::RetryPolicy policy;
    policy.initial_delay = 10ms;
    policy.on_retry = [&](unsigned attempt, const futures::ErrorView& error, reactor::Duration delay) {
        log.push_back(fmt::format("attempt {} failed ({}), again in {} ms", attempt, error.what(),
                                  std::chrono::duration_cast<std::chrono::milliseconds>(delay).count()));
    };
    futures::Future<std::string> body = futures::retry(sched, policy, fetch);
    // log[0] == "attempt 1 failed (connection refused), again in 7 ms" (10 ms, less up to half: jitter)
    // [end-snippet:loops_on_retry]
    BOOST_TEST(futures::run_until_complete(sched, body) == "payload");
    BOOST_REQUIRE(log.size() == 2u);
    BOOST_TEST(log[0].starts_with("attempt 1 failed (connection refused), again in "));
    BOOST_TEST(log[1].starts_with("attempt 2 failed (connection refused), again in "));
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(loops_fan_out) {
    reactor::Scheduler sched;
    futures::StreamServer server = start_echo_server(sched, reactor::Address::parse("127.0.0.1", 0));
    const reactor::Address address = server.address();
    // [snippet:loops_fan_out]
    std::vector<std::string> messages{"a\n", "bb\n", "ccc\n", "dddd\n", "eeeee\n", "ffffff\n"};
    futures::Future<std::size_t> total = futures::map_reduce(
        sched, messages, [&](const std::string& m) { return echo_length(sched, address, m); },
        std::size_t{0}, std::plus<>{}, /*max_concurrency=*/4);
    // [end-snippet:loops_fan_out]
    BOOST_TEST(futures::run_until_complete(sched, total) == 27u);

    std::vector<std::size_t> lengths;
    // [snippet:loops_sequential]
    futures::Future<void> one_by_one = futures::do_for_each(sched, messages, [&](const std::string& m) {
        return echo_length(sched, address, m).then([&](std::size_t n) { lengths.push_back(n); });
    });
    // [end-snippet:loops_sequential]
    futures::run_until_complete(sched, one_by_one);
    BOOST_TEST((lengths == std::vector<std::size_t>{2, 3, 4, 5, 6, 7}));  // in order: one at a time

    int pings = 0;
    // [snippet:loops_parallel]
    futures::Future<void> all = futures::parallel_for_each(
        sched, messages,
        [&](const std::string& m) { return echo_length(sched, address, m).then([&](std::size_t) { ++pings; }); },
        /*max_concurrency=*/2);
    // [end-snippet:loops_parallel]
    futures::run_until_complete(sched, all);
    BOOST_TEST(pings == 6);
    server.close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(loops_do_until) {
    reactor::Scheduler sched;
    // [snippet:loops_do_until]
    int polls = 0;
    bool ready = false;
    futures::Future<void> waited = futures::do_until(
        sched, [&] { return ready; },
        [&] {
            ready = ++polls == 3;  // a status check, say
            return futures::sleep(sched, 5ms);
        });
    // [end-snippet:loops_do_until]
    futures::run_until_complete(sched, waited);
    BOOST_TEST(polls == 3);
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(loops_next_signal) {
    reactor::Scheduler sched;
    // [snippet:loops_next_signal]
    futures::Future<int> stop = futures::next_signal(sched, {SIGINT, SIGTERM});
    // ... serve until then; `kill -TERM <pid>` completes it with SIGTERM
    // [end-snippet:loops_next_signal]
    ::kill(::getpid(), SIGTERM);
    BOOST_TEST(futures::run_until_complete(sched, stop) == SIGTERM);
    BOOST_TEST(sched.signal_handler_count() == 0u);  // the handler went with the wait
    BOOST_TEST(sched.empty());
}
