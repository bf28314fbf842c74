// SPDX-License-Identifier: MIT
// The README's three snippets, one per layer, each run and checked.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <futures/futures.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/scheduler.hpp>

using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(readme)

BOOST_AUTO_TEST_CASE(scheduler) {
    int fds[2];
    BOOST_REQUIRE(::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
    BOOST_REQUIRE(::write(fds[1], "x", 1) == 1);
    int fd = fds[0];  // readable

    // [snippet:scheduler]
    reactor::Scheduler sched;  // select(2) by default; Options::backend picks poll or epoll
    std::vector<std::string> log;

    sched.call_soon([&] { log.push_back("soon"); });  // on the next iteration, never inside call_soon
    reactor::Handle h = sched.call_later(250ms, [&] { log.push_back("never"); });
    h.cancel();                                        // true: it was pending; its captures are freed now
    sched.call_later(10ms, [&] { log.push_back("10 ms later"); });
    sched.read_wait(fd, [&] { log.push_back("fd readable"); });  // one-shot: removed before it runs
    sched.run();  // until nothing is ready, sleeping or waiting
    // log == {"soon", "fd readable", "10 ms later"}
    // [end-snippet:scheduler]

    BOOST_TEST(log == (std::vector<std::string>{"soon", "fd readable", "10 ms later"}), boost::test_tools::per_element());
    BOOST_TEST(!h.is_pending());
    BOOST_TEST(sched.empty());
    ::close(fds[0]);
    ::close(fds[1]);
}

BOOST_AUTO_TEST_CASE(futures_and_tasks) {
    // [snippet:futures]
    // A task is a state machine: resume() returns the future it waits on, or its result.
    class Fetch {
    public:
        enum class State { start, sleeping };
        explicit Fetch(reactor::Scheduler& sched) : sched_(sched) {}

        futures::Step<int> resume() {
            switch (state_) {
            case State::start:
                state_ = State::sleeping;
                return sleep_ = futures::sleep(sched_, 10ms);  // wait for this future
            case State::sleeping:
                sleep_.result();  // rethrows the sleep's error, if any
                return 21;        // the task's result
            }
            throw std::logic_error("Fetch: unknown state");
        }

    private:
        reactor::Scheduler& sched_;
        State state_ = State::start;
        futures::Future<void> sleep_;
    };

    reactor::Scheduler sched;
    futures::Future<int> answer = futures::spawn(sched, Fetch(sched))
                                      .then([](int n) { return n * 2; })  // runs once the task is done
                                      .catch_error([](const std::exception&) { return -1; });
    int n = futures::run_until_complete(sched, answer);  // 42, 10 ms later
    // [end-snippet:futures]

    BOOST_TEST(n == 42);
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(echo_server) {
    // [snippet:echo_server]
    reactor::Scheduler sched;
    // The server: every connection echoes what it receives.
    auto echo = [](const reactor::ConnectionPtr& c) {
        c->set_data_callback([](reactor::Connection& c, std::string_view data) { c.write(data); });
    };
    auto listener = reactor::Listener::listen(sched, reactor::Address::parse("127.0.0.1", 0), echo);
    // A client (port 0 above: listener->address() has the port the kernel picked).
    std::string reply;
    reactor::connect(sched, listener->address(), [&](reactor::ConnectionPtr c, std::error_code error) {
        if (error) return listener->close();
        c->set_data_callback([&](reactor::Connection& c, std::string_view data) {
            reply += data;
            if (reply == "hello") {
                c.close();           // the server sees EOF and closes its side
                listener->close();   // and nothing is left to wait for
            }
        });
        c->write("hello");
    });
    sched.run();  // reply == "hello"
    // [end-snippet:echo_server]

    BOOST_TEST(reply == "hello");
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_SUITE_END()
