// SPDX-License-Identifier: MIT
// connect() (the Connector) on 127.0.0.1, on every selector backend: refused,
// timed out, reset at once, and cancelled connects. Ordering comes from
// callbacks, never from sleeps.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <reactor/net/connector.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/listener.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/tcp_echo.hpp"

using namespace std::chrono_literals;
using reactor::ConnectionPtr;
using reactor_test::EchoServer;
using reactor_test::on;

BOOST_AUTO_TEST_CASE(connect_refused_reaches_the_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // A port that is bound but not listening refuses, and nobody else can take it meanwhile.
    int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto addr = reactor::Address::loopback_v4(0);
    BOOST_REQUIRE(::bind(holder, addr.data(), addr.size()) == 0);
    auto port = reactor::Address::local_of(holder).port();

    reactor::Scheduler sched(on(backend));
    std::optional<std::error_code> result;
    bool got_connection = false;
    auto connector = reactor::connect(sched, reactor::Address::loopback_v4(port), [&](ConnectionPtr c, std::error_code ec) {
        got_connection = c != nullptr;
        result = ec;
    });
    BOOST_TEST(!result.has_value());  // never synchronous
    BOOST_TEST(connector->is_pending());
    sched.run();
    BOOST_REQUIRE(result.has_value());
    BOOST_TEST(result->value() == ECONNREFUSED);
    BOOST_TEST(!got_connection);
    BOOST_TEST(!connector->is_pending());
    BOOST_TEST(sched.empty());
    ::close(holder);
}

// Tests send traffic to loopback only, so "the peer never answers" is made
// locally: a listener whose accept queue is full makes the kernel drop new
// SYNs, and our connect timeout has to fire (ETIMEDOUT).
BOOST_AUTO_TEST_CASE(connect_timeout_reaches_the_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor_test::FullAcceptQueue full;
    reactor::Scheduler sched(on(backend));
    std::optional<std::error_code> result;
    ConnectionPtr unexpected;
    reactor::Connector::Options opt;
    opt.timeout = 200ms;
    reactor::connect(sched, reactor::Address::loopback_v4(full.port),
                     [&](ConnectionPtr c, std::error_code ec) {
                         result = ec;
                         unexpected = c;
                     },
                     opt);
    sched.run();
    BOOST_REQUIRE(result.has_value());
    BOOST_TEST(!unexpected);
    BOOST_TEST(result->value() == ETIMEDOUT, result->message());
    BOOST_TEST(sched.empty());
}

// A server that accepts and at once aborts (SO_LINGER {1, 0}, then close)
// resets a connection the client has not yet seen complete: connect reports
// ECONNRESET, not a connection. Deterministic on loopback: the kernel does
// the whole handshake while our loop is not running, and the test waits for
// the reset to land on the client socket before the loop first polls it.
BOOST_AUTO_TEST_CASE(connect_reset_by_the_server_at_once_reaches_the_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto any = reactor::Address::loopback_v4(0);
    BOOST_REQUIRE(::bind(lfd, any.data(), any.size()) == 0);
    BOOST_REQUIRE(::listen(lfd, 1) == 0);
    const auto server_address = reactor::Address::local_of(lfd);

    // The connector's socket is the lowest free fd (POSIX allocates the
    // lowest), so the test can watch it without reaching into the Connector.
    const int client_fd = ::dup(0);
    BOOST_REQUIRE(client_fd >= 0);
    ::close(client_fd);
    std::optional<std::error_code> result;
    ConnectionPtr unexpected;
    auto connector = reactor::connect(sched, server_address, [&](ConnectionPtr c, std::error_code ec) {
        result = ec;
        unexpected = c;
    });
    BOOST_REQUIRE(connector->is_pending());

    pollfd listening{lfd, POLLIN, 0};
    BOOST_REQUIRE(::poll(&listening, 1, 5000) == 1);  // handshake done in the kernel
    int accepted = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    BOOST_REQUIRE(accepted >= 0);
    BOOST_REQUIRE((reactor::Address::peer_of(accepted) == reactor::Address::local_of(client_fd)));
    linger lg{1, 0};
    ::setsockopt(accepted, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    ::close(accepted);  // sends RST
    // poll() always reports POLLERR and POLLHUP, asked for or not: waiting
    // with no events asked returns once the reset has reached the client
    // socket (it does not consume the pending error, SO_ERROR does).
    pollfd client{client_fd, 0, 0};
    BOOST_REQUIRE(::poll(&client, 1, 5000) == 1);
    BOOST_TEST((client.revents & (POLLERR | POLLHUP)) != 0);

    sched.run();
    BOOST_REQUIRE(result.has_value());
    BOOST_TEST(result->value() == ECONNRESET, result->message());
    BOOST_TEST(!unexpected);
    BOOST_TEST(!connector->is_pending());
    BOOST_TEST(sched.empty());
    ::close(lfd);
}

BOOST_AUTO_TEST_CASE(cancelled_connect_never_calls_back) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    EchoServer server(sched);
    bool called = false;
    auto c = reactor::connect(sched, server.listener->address(), [&](ConnectionPtr, std::error_code) { called = true; });
    BOOST_TEST(c->cancel());
    BOOST_TEST(!c->cancel());
    server.listener->close();
    sched.run();
    BOOST_TEST(!called);
    BOOST_TEST(sched.empty());
}
