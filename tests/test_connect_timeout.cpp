// SPDX-License-Identifier: MIT
// futures::open_connection's connect_timeout on every backend, on a virtual
// clock: the error is a ConnectTimeoutError (a TimeoutError) that says which
// step was under way (the lookup, or the connect to which address), the
// address-list form tries each address in turn, and a timeout that does not
// fire leaves nothing behind. "The peer never answers" is made on loopback:
// a listener whose accept queue is full makes the kernel drop new SYNs.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/stream.hpp>
#include <reactor/thread_pool.hpp>

#include "support/fds.hpp"
#include "support/name_resolution.hpp"
#include "support/net_util.hpp"
#include "support/virtual_time.hpp"

using namespace std::chrono_literals;
using futures::ConnectTimeoutError;
using futures::Future;
using futures::Stream;
using reactor_test::backend_under_test;
using reactor_test::Fd;

namespace {

Fd tcp_socket() { return Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)); }

std::uint16_t bound_port(int fd) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    BOOST_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    return ntohs(addr.sin_port);
}

Fd bind_loopback(int backlog_or_none) {
    Fd fd = tcp_socket();
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    if (backlog_or_none >= 0) BOOST_REQUIRE(::listen(fd.get(), backlog_or_none) == 0);
    return fd;
}

// A bound port nobody listens on: connecting is refused at once.
struct RefusedPort {
    Fd holder = bind_loopback(-1);
    std::uint16_t port = bound_port(holder.get());
};

futures::StreamOptions with_connect_timeout(std::chrono::milliseconds t) {
    futures::StreamOptions o;
    o.connect_timeout = t;
    return o;
}

template <class T>
void run_until_done(reactor::testing::VirtualLoop& loop, Future<T>& f) {
    for (int i = 0; i < 100000 && !f.done(); ++i) loop.sched.run_once();
    BOOST_REQUIRE(f.done());
}

// The ConnectTimeoutError `f` failed with.
template <class T>
ConnectTimeoutError timeout_of(Future<T>& f) {
    BOOST_REQUIRE(f.failed());
    try {
        f.result();
    } catch (const ConnectTimeoutError& e) {
        return e;
    } catch (const std::exception& e) {
        BOOST_FAIL(std::string("not a ConnectTimeoutError: ") + e.what());
    }
    throw std::logic_error("unreachable");
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_connect_that_hangs_fails_at_the_timeout_naming_the_address) {
    reactor_test::FullAcceptQueue full;
    reactor::testing::VirtualLoop loop(backend_under_test());
    const auto start = loop.clock.now();
    Future<Stream> f = futures::open_connection(loop.sched, reactor::Address::loopback_v4(full.port),
                                                with_connect_timeout(500ms));
    run_until_done(loop, f);
    BOOST_TEST((loop.clock.now() - start == 500ms));
    const ConnectTimeoutError e = timeout_of(f);
    BOOST_TEST((e.step == ConnectTimeoutError::Step::connect));
    const std::string expected = "open_connection to 127.0.0.1:" + std::to_string(full.port) +
                                 ": timed out after 500 ms connecting to 127.0.0.1:" + std::to_string(full.port);
    BOOST_TEST(std::string(e.what()) == expected);
    // A TimeoutError, for code that catches any timeout.
    BOOST_CHECK_THROW(f.result(), futures::TimeoutError);
    loop.sched.run();  // nothing is left behind: the connect was abandoned
    BOOST_TEST(loop.sched.empty());
}

BOOST_AUTO_TEST_CASE(an_address_list_is_tried_in_turn_and_the_error_names_the_one_under_way) {
    RefusedPort refused;
    reactor_test::FullAcceptQueue full;
    reactor::testing::VirtualLoop loop(backend_under_test());
    Future<Stream> f = futures::open_connection(
        loop.sched, {reactor::Address::loopback_v4(refused.port), reactor::Address::loopback_v4(full.port)},
        with_connect_timeout(2s));
    run_until_done(loop, f);
    const ConnectTimeoutError e = timeout_of(f);
    BOOST_TEST((e.step == ConnectTimeoutError::Step::connect));
    const std::string what = e.what();
    BOOST_TEST(what.find("open_connection to 127.0.0.1:" + std::to_string(refused.port) + " and 1 more") == 0u, what);
    BOOST_TEST(what.ends_with("connecting to 127.0.0.1:" + std::to_string(full.port)), what);
}

BOOST_AUTO_TEST_CASE(an_address_list_connects_to_the_first_that_accepts) {
    RefusedPort refused;
    Fd listener = bind_loopback(8);
    const std::uint16_t port = bound_port(listener.get());
    reactor::testing::VirtualLoop loop(backend_under_test());
    Future<Stream> f = futures::open_connection(
        loop.sched, {reactor::Address::loopback_v4(refused.port), reactor::Address::loopback_v4(port)},
        with_connect_timeout(2s));
    run_until_done(loop, f);
    Stream s = f.result();
    BOOST_TEST(s.peer_address().port() == port);
    // The bound is gone with the attempt: hours later, the stream is still open.
    bool fired = false;
    loop.sched.call_later(3h, [&] { fired = true; });
    while (!fired) loop.sched.run_once();
    BOOST_TEST(!s.is_closing());
    s.close();
}

BOOST_AUTO_TEST_CASE(a_refused_connect_fails_with_its_own_error_not_a_timeout) {
    RefusedPort refused;
    reactor::testing::VirtualLoop loop(backend_under_test());
    Future<Stream> f = futures::open_connection(loop.sched, reactor::Address::loopback_v4(refused.port),
                                                with_connect_timeout(2s));
    run_until_done(loop, f);
    BOOST_CHECK_EXCEPTION(f.result(), std::system_error,
                          [](const std::system_error& e) { return e.code().value() == ECONNREFUSED; });
}

BOOST_AUTO_TEST_CASE(bad_inputs_throw_at_once) {
    reactor::testing::VirtualLoop loop(backend_under_test());
    BOOST_CHECK_THROW(static_cast<void>(futures::open_connection(loop.sched, std::vector<reactor::Address>{})),
                      std::invalid_argument);
    BOOST_CHECK_THROW(static_cast<void>(futures::open_connection(loop.sched, reactor::Address::loopback_v4(1),
                                                                 with_connect_timeout(-1ms))),
                      std::invalid_argument);
    BOOST_TEST(loop.sched.empty());
}

// The lookup runs on the default thread pool: with every worker held busy,
// it cannot start, so the timeout fires in the lookup step, deterministically.
BOOST_AUTO_TEST_CASE(a_lookup_that_does_not_finish_in_time_says_so, *reactor_test::needs_localhost()) {
    reactor::testing::VirtualLoop loop(backend_under_test());
    reactor::ThreadPool& pool = reactor::default_thread_pool();
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::vector<std::promise<void>> started(pool.thread_count());
    std::size_t finished = 0;
    for (std::size_t i = 0; i < pool.thread_count(); ++i) {
        pool.submit(
            loop.sched,
            [&started, released, i] {
                started[i].set_value();
                released.wait();
            },
            [&finished](auto&&) { ++finished; });
    }
    for (auto& s : started) s.get_future().wait();  // every worker is busy

    Future<Stream> f = futures::open_connection(loop.sched, "localhost", 9, with_connect_timeout(300ms));
    run_until_done(loop, f);
    release.set_value();
    const ConnectTimeoutError e = timeout_of(f);
    BOOST_TEST((e.step == ConnectTimeoutError::Step::lookup));
    BOOST_TEST(std::string(e.what()) == "open_connection to localhost:9: timed out after 300 ms looking the name up");
    for (int i = 0; i < 100000 && finished < pool.thread_count(); ++i) loop.sched.run_once();
    BOOST_TEST(finished == pool.thread_count());
}
