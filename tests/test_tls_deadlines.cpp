// SPDX-License-Identifier: MIT
// reactor::tls timeouts on virtual time, on every backend: the handshake
// timeout (60 s by default) frees a connection whose peer never completes a
// handshake, the shutdown timeout (30 s) one whose peer never answers
// close_notify or never reads the rest; the transport's own deadlines still
// work under TLS; max_handshakes ends the oldest handshake in progress
// rather than letting silent clients hold the server. Both ends are real sockets (a socketpair) on the same
// virtual-time loop, so every instant is checked exactly, without waiting.
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/testing/virtual_loop.hpp>
#include <reactor/tls/connection.hpp>
#include <reactor/tls/handshake_limit.hpp>
#include <reactor/tls/listen.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/fds.hpp"
#include "support/net_util.hpp"
#include "support/tls_fixtures.hpp"

using namespace std::chrono_literals;
namespace tls = reactor::tls;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::SocketPair;
using reactor::EndKind;

namespace {

// One end of a TLS connection on a virtual-time loop: when and why it closed.
struct End {
    tls::ConnectionPtr conn;
    std::optional<reactor::End> reason;
    reactor::TimePoint closed_at{};
    reactor::TimePoint handshake_at{};

    End(VirtualLoop& loop, tls::ConnectionPtr c) : conn(std::move(c)) {
        conn->set_handshake_callback([this, &loop](tls::Connection&) { handshake_at = loop.clock.now(); });
        conn->set_close_callback([this, &loop](tls::Connection&, const reactor::End& r) {
            reason = r;
            closed_at = loop.clock.now();
        });
    }
};

reactor::ConnectionPtr adopt(VirtualLoop& loop, reactor_test::Fd& fd, reactor::ConnectionOptions options = {}) {
    auto conn = reactor::Connection::adopt(loop.sched, ::dup(fd.get()), options);
    fd = reactor_test::Fd();  // the connection's copy is the only one
    return conn;
}

template <class Pred>
void run_until(VirtualLoop& loop, Pred done) {
    for (int i = 0; i < 100000 && !done(); ++i) loop.sched.run_once();
    BOOST_REQUIRE(done());
}

// A client and a server over a socketpair, handshake done.
struct Pair {
    VirtualLoop loop{backend_under_test()};
    SocketPair sockets;
    std::optional<End> server, client;

    explicit Pair(reactor::ConnectionOptions server_transport = {}) {
        server.emplace(loop, tls::Connection::start_server(adopt(loop, sockets.a, server_transport),
                                                           reactor_test::server_context()));
        client.emplace(loop, tls::Connection::start_client(adopt(loop, sockets.b), reactor_test::client_context(),
                                                           "localhost"));
        run_until(loop, [&] { return server->conn->handshake_done() && client->conn->handshake_done(); });
        BOOST_TEST(loop.clock.elapsed() == 0s);  // the handshake took no virtual time
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_silent_client_meets_the_default_handshake_timeout) {
    VirtualLoop loop(backend_under_test());
    SocketPair sockets;  // `b` is a client that connects and says nothing
    End server(loop, tls::Connection::start_server(adopt(loop, sockets.a), reactor_test::server_context()));
    run_until(loop, [&] { return server.reason.has_value(); });
    BOOST_TEST(server.reason->kind == EndKind::handshake_timeout);
    BOOST_TEST(server.reason->to_string() == "handshake timeout");
    BOOST_TEST(loop.clock.elapsed() == 60s);
    char c;
    BOOST_TEST(::recv(sockets.b.get(), &c, 1, 0) == 0);  // its socket was closed
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_silent_server_meets_the_client_handshake_timeout_as_set) {
    VirtualLoop loop(backend_under_test());
    SocketPair sockets;  // `b` accepted and never answers the hello
    End client(loop, tls::Connection::start_client(adopt(loop, sockets.a), reactor_test::client_context(), "localhost",
                                                   tls::Options{.handshake_timeout = 5s}));
    run_until(loop, [&] { return client.reason.has_value(); });
    BOOST_TEST(client.reason->kind == EndKind::handshake_timeout);
    BOOST_TEST(loop.clock.elapsed() == 5s);
    char hello[5];
    BOOST_TEST(::recv(sockets.b.get(), hello, sizeof hello, 0) == 5);
    BOOST_TEST(hello[0] == '\x16');  // a TLS handshake record: the ClientHello went out
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(after_the_handshake_its_timeout_is_gone_and_the_transport_deadlines_work) {
    reactor::ConnectionOptions transport;
    transport.read_timeout = 90s;  // the plain connection's deadline, under TLS
    Pair pair(transport);
    run_until(pair.loop, [&] { return pair.server->reason.has_value(); });
    // Not the handshake timeout at 60 s: the read timeout at 90 s.
    BOOST_TEST(pair.server->reason->kind == EndKind::read_timeout);  // spelled as the transport spelled it
    BOOST_TEST(pair.server->reason->to_string() == "read timeout");
    BOOST_TEST(pair.loop.clock.elapsed() == 90s);
    // The transport closed gracefully, without close_notify: the client sees a truncation.
    run_until(pair.loop, [&] { return pair.client->reason.has_value(); });
    BOOST_TEST(pair.client->reason->kind == EndKind::truncated, pair.client->reason->to_string());
    pair.loop.sched.run();
    CHECK_EMPTY(pair.loop.sched);
}

BOOST_AUTO_TEST_CASE(a_peer_that_never_answers_close_notify_meets_the_shutdown_timeout) {
    Pair pair;
    pair.client->conn->pause_reading();  // it will not read our close_notify
    pair.loop.sched.call_later(10s, [&] { pair.server->conn->write_eof(); });
    run_until(pair.loop, [&] { return pair.server->reason.has_value(); });
    BOOST_TEST(pair.server->reason->kind == EndKind::shutdown_timeout);
    BOOST_TEST(pair.server->reason->to_string() == "shutdown timeout");
    BOOST_TEST(pair.loop.clock.elapsed() == 10s + 30s);
    pair.client->conn->close();
    run_until(pair.loop, [&] { return pair.client->reason.has_value(); });
    pair.loop.sched.run();
    CHECK_EMPTY(pair.loop.sched);
}

BOOST_AUTO_TEST_CASE(the_peer_answering_close_notify_ends_it_before_the_timeout) {
    Pair pair;
    pair.loop.sched.call_later(10s, [&] { pair.server->conn->write_eof(); });
    run_until(pair.loop, [&] { return pair.server->reason.has_value() && pair.client->reason.has_value(); });
    BOOST_TEST(pair.server->reason->to_string() == "eof");  // the client answered with its own
    BOOST_TEST(pair.client->reason->to_string() == "eof");
    BOOST_TEST(pair.loop.clock.elapsed() == 10s);
    pair.loop.sched.run();
    CHECK_EMPTY(pair.loop.sched);
}

BOOST_AUTO_TEST_CASE(close_with_output_a_peer_never_reads_is_bounded_by_the_shutdown_timeout) {
    Pair pair;
    pair.client->conn->pause_reading();
    int small = 4096;
    ::setsockopt(pair.server->conn->transport().fd(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    BOOST_TEST(pair.server->conn->write(std::string(4 << 20, 'x')));
    BOOST_TEST(pair.server->conn->buffered() > 0u);  // ciphertext the kernel did not take
    pair.server->conn->close();
    BOOST_TEST(pair.server->conn->state() == tls::Connection::State::shutting_down);
    run_until(pair.loop, [&] { return pair.server->reason.has_value(); });
    BOOST_TEST(pair.server->reason->kind == EndKind::shutdown_timeout);
    BOOST_TEST(pair.loop.clock.elapsed() == 30s);
    pair.client->conn->abort();
    run_until(pair.loop, [&] { return pair.client->reason.has_value(); });
    pair.loop.sched.run();
    CHECK_EMPTY(pair.loop.sched);
}

BOOST_AUTO_TEST_CASE(slowloris_silent_clients_are_freed_by_the_handshake_timeout_and_a_real_one_is_served) {
    constexpr int kSilent = 100;
    VirtualLoop loop(backend_under_test());
    std::vector<reactor::End> reasons;
    std::vector<reactor::TimePoint> closed_at;
    std::vector<tls::ConnectionPtr> handshaken;
    auto listener = tls::listen(loop.sched, reactor::Address::loopback_v4(0), reactor_test::server_context(),
                                [&](const tls::ConnectionPtr& c) {
                                    c->set_handshake_callback([&](tls::Connection& c) {
                                        handshaken.push_back(c.shared_from_this());
                                        c.write("welcome");
                                    });
                                    c->set_close_callback([&](tls::Connection&, const reactor::End& r) {
                                        reasons.push_back(r);
                                        closed_at.push_back(loop.clock.now());
                                    });
                                });
    // Clients that connect and never send a byte; the kernel completes their
    // TCP handshakes. Real I/O: virtual time stands still until all are accepted.
    std::vector<int> silent;
    for (int i = 0; i < kSilent; ++i) {
        silent.push_back(reactor_test::connect_blocking(listener->address().port()));
        BOOST_REQUIRE(silent.back() >= 0);
    }
    {
        reactor::testing::TimeHold hold = loop.hold_time();
        run_until(loop, [&] { return listener->accepted() == kSilent; });
    }
    const reactor::TimePoint accepted_at = loop.clock.now();
    run_until(loop, [&] { return reasons.size() == kSilent; });
    for (int i = 0; i < kSilent; ++i) {
        BOOST_TEST(reasons[i].kind == EndKind::handshake_timeout);
        BOOST_TEST((closed_at[i] - accepted_at == 60s));
    }
    for (int fd : silent) {
        char c;
        BOOST_TEST(::recv(fd, &c, 1, 0) <= 0);  // freed: their connections are gone
        ::close(fd);
    }
    // The server still serves a client that does speak TLS.
    std::string received;
    std::optional<reactor::End> client_reason;
    reactor::testing::TimeHold hold = loop.hold_time();
    tls::connect(loop.sched, listener->address(), reactor_test::client_context(), "localhost",
                 [&](tls::ConnectionPtr c, std::error_code ec) {
                     BOOST_REQUIRE(!ec);
                     c->set_data_callback([&](tls::Connection& c, std::string_view d) {
                         received += d;
                         c.close();
                     });
                     c->set_close_callback([&](tls::Connection&, const reactor::End& r) { client_reason = r; });
                 });
    run_until(loop, [&] { return client_reason.has_value() && reasons.size() == kSilent + 1; });
    BOOST_TEST(received == "welcome");
    BOOST_TEST(client_reason->to_string() == "local");
    BOOST_TEST(reasons.back().to_string() == "eof");
    hold = {};
    listener->close();
    handshaken.clear();
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

// Issue 49, item 8: with max_handshakes, clients that start a handshake and
// never finish it cannot hold more than that many fds, nor keep a real
// client out until their handshake timeout: each new client ends the oldest
// handshake in progress. On virtual time held still, so no timeout passes.
BOOST_AUTO_TEST_CASE(beyond_max_handshakes_the_oldest_is_ended_and_a_real_client_is_not_locked_out) {
    constexpr std::size_t kMax = 8;
    constexpr std::size_t kSilent = 30;
    VirtualLoop loop(backend_under_test());
    std::vector<reactor::End> reasons;
    std::vector<tls::ConnectionPtr> handshaken;
    tls::Options options;
    options.max_handshakes = kMax;
    BOOST_TEST(tls::Options{}.max_handshakes == 0u);  // no limit unless asked
    std::size_t most_in_handshake = 0;
    std::vector<tls::ConnectionPtr> all;
    auto in_handshake = [&] {
        std::size_t n = 0;
        for (const auto& c : all) n += c->state() == tls::Connection::State::handshaking;
        return n;
    };
    auto listener = tls::listen(
        loop.sched, reactor::Address::loopback_v4(0), reactor_test::server_context(),
        [&](const tls::ConnectionPtr& c) {
            all.push_back(c);
            most_in_handshake = std::max(most_in_handshake, in_handshake());
            c->set_handshake_callback([&](tls::Connection& c) {
                handshaken.push_back(c.shared_from_this());
                c.write("welcome");
            });
            c->set_close_callback([&](tls::Connection&, const reactor::End& r) { reasons.push_back(r); });
        },
        reactor::Listener::Options{}, options);
    reactor::testing::TimeHold hold = loop.hold_time();
    std::vector<int> silent;  // connect, then never send a byte
    for (std::size_t i = 0; i < kSilent; ++i) {
        silent.push_back(reactor_test::connect_blocking(listener->address().port()));
        BOOST_REQUIRE(silent.back() >= 0);
    }
    run_until(loop, [&] { return listener->accepted() == kSilent && reasons.size() == kSilent - kMax; });
    BOOST_TEST(loop.clock.elapsed() == 0s);  // no timeout did it
    BOOST_TEST(most_in_handshake <= kMax);
    BOOST_TEST(in_handshake() == kMax);
    for (const reactor::End& r : reasons) {
        BOOST_TEST(r.kind == EndKind::handshake_failed);
        BOOST_TEST(r.detail.find("max_handshakes") != std::string::npos, r.detail);
    }
    // The oldest were ended, in order; the newest kMax wait on.
    for (std::size_t i = 0; i < kSilent; ++i) {
        char c;
        const ssize_t n = ::recv(silent[i], &c, 1, MSG_DONTWAIT);
        if (i < kSilent - kMax) {
            BOOST_TEST(n <= 0, "client " << i << " was ended");
            BOOST_TEST((n == 0 || errno != EAGAIN), "client " << i << " was ended");
        } else {
            BOOST_TEST((n < 0 && errno == EAGAIN), "client " << i << " waits on");
        }
    }
    // A client that speaks TLS is served at once (no virtual time passes),
    // ending one more silent one.
    std::string received;
    std::optional<reactor::End> client_reason;
    tls::connect(loop.sched, listener->address(), reactor_test::client_context(), "localhost",
                 [&](tls::ConnectionPtr c, std::error_code ec) {
                     BOOST_REQUIRE(!ec);
                     c->set_data_callback([&](tls::Connection& c, std::string_view d) {
                         received += d;
                         c.close();
                     });
                     c->set_close_callback([&](tls::Connection&, const reactor::End& r) { client_reason = r; });
                 });
    run_until(loop, [&] { return client_reason.has_value(); });
    BOOST_TEST(received == "welcome");
    BOOST_TEST(loop.clock.elapsed() == 0s);
    BOOST_TEST(reasons.size() == kSilent - kMax + 1);
    BOOST_TEST(most_in_handshake <= kMax);
    hold = {};
    for (int fd : silent) ::close(fd);
    listener->close();
    listener->connections().abort_all();
    handshaken.clear();
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

// The limit on its own: the count is of handshakes in progress, those that
// finished or failed leave it.
BOOST_AUTO_TEST_CASE(a_handshake_limit_counts_only_handshakes_in_progress) {
    VirtualLoop loop(backend_under_test());
    tls::HandshakeLimit limit(2);
    SocketPair one, two;
    auto a = tls::Connection::start_server(adopt(loop, one.a), reactor_test::server_context());
    auto b = tls::Connection::start_client(adopt(loop, one.b), reactor_test::client_context(), "localhost");
    limit.started(a);
    BOOST_TEST(limit.in_progress() == 1u);
    run_until(loop, [&] { return a->handshake_done() && b->handshake_done(); });
    BOOST_TEST(limit.in_progress() == 0u);  // finished: it left the count
    auto c = tls::Connection::start_server(adopt(loop, two.a), reactor_test::server_context());
    auto d = tls::Connection::start_server(adopt(loop, two.b), reactor_test::server_context());
    limit.started(c);
    limit.started(d);
    BOOST_TEST(limit.in_progress() == 2u);
    BOOST_TEST(limit.evicted() == 0u);
    a->abort();
    b->abort();
    c->abort();
    d->abort();
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}
