// SPDX-License-Identifier: MIT
// reactor::tls::listen over a LoopGroup: HTTPS-style serving on every loop
// with one server context. Real TLS clients (the library's, on the test's
// own loop) on 127.0.0.1; the server's loops run on their threads. Each
// connection's handshake and callbacks run on the loop it was handed to,
// and a session got from one loop resumes on another (the context, and so
// OpenSSL's ticket keys, are shared). One client context also serves the
// clients of two loops at once (its session cache is locked: CI runs this
// suite under TSan). Every wait is bounded.
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <reactor/loop_group.hpp>
#include <reactor/net/group_listener.hpp>
#include <reactor/tls/connection.hpp>
#include <reactor/tls/listen.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/net_util.hpp"
#include "support/tls_fixtures.hpp"

#if defined(__SANITIZE_THREAD__)
// TSan's default (io_sync=1) makes every send(2) on any socket happen before
// every later recv(2) on any other: the two client loops would be ordered
// through the server's sockets, and an unlocked access to the shared
// session cache would go unseen. This suite's threads share memory only
// through locks, atomics and the group's own posts, never through a socket.
extern "C" const char* __tsan_default_options() { return "io_sync=0"; }
// Then TSan also reports what it half-sees inside libcrypto, and libssl's
// SSL_SESSION_free (a session freed on one loop while another reads it: its
// reference count is atomic), which are not
// built for TSan: its atomics are invisible, only its calls to memcmp,
// memcpy and pthread locks are seen (ASN1_STRING_set under a lock on one
// loop, ASN1_STRING_cmp on another, when both serve with one context). Ours
// (reactor's code, and libssl calling back into it) stays checked.
extern "C" const char* __tsan_default_suppressions() { return "race:libcrypto.so\nrace:SSL_SESSION_free\n"; }
#endif

namespace tls = reactor::tls;
using reactor::LoopGroup;
using reactor::LoopGroupOptions;
using reactor::Spreading;
using reactor_test::backend_under_test;
using reactor_test::on;

namespace {

LoopGroupOptions loops(std::size_t n) {
    LoopGroupOptions o;
    o.loops = n;
    o.loop_options = [](std::size_t) { return on(backend_under_test()); };
    return o;
}

// What the server's loops saw, one record per finished handshake.
struct Handshake {
    std::size_t loop;
    bool on_its_loop;  // the handshake callback ran on the thread of `loop`
    bool resumed;
    std::string alpn;
};

struct Served {
    std::mutex mutex;
    std::vector<Handshake> handshakes;
    std::atomic<int> open{0};
};

// A TLS echo on every loop of `group`.
std::unique_ptr<reactor::GroupListener> echo_on(LoopGroup& group, tls::ContextPtr context, Served& served,
                                                Spreading spreading) {
    reactor::GroupListener::Options options;
    options.spreading = spreading;
    return tls::listen(
        group, reactor_test::any_loopback(), std::move(context),
        [&group, &served](const tls::ConnectionPtr& c, std::size_t loop) {
            ++served.open;
            c->set_handshake_callback([&group, &served, loop](tls::Connection& c) {
                std::lock_guard lock(served.mutex);
                served.handshakes.push_back(
                    Handshake{loop, group.current_index() == loop, c.session_reused(), std::string(c.alpn_protocol())});
            });
            c->set_data_callback([](tls::Connection& c, std::string_view d) { c.write(d); });
            c->set_close_callback([&served](tls::Connection&, const reactor::End&) { --served.open; });
        },
        options);
}

// One client connection on the test's loop: handshake, "ping" echoed, close.
struct Exchange {
    bool resumed = false;
    std::string received;
    std::optional<reactor::End> reason;
};

Exchange exchange(reactor::Scheduler& sched, const reactor::Address& to, const tls::ContextPtr& context) {
    Exchange out;
    tls::ConnectionPtr conn;
    std::error_code connect_error;
    tls::connect(sched, to, context, "localhost", [&](tls::ConnectionPtr c, std::error_code ec) {
        connect_error = ec;
        if (ec) return;
        conn = c;
        c->set_handshake_callback([](tls::Connection& c) { c.write("ping"); });
        c->set_data_callback([&out](tls::Connection& c, std::string_view d) {
            out.received += d;
            if (out.received == "ping") c.close();
        });
        c->set_close_callback([&out](tls::Connection&, const reactor::End& r) { out.reason = r; });
    });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return connect_error || out.reason.has_value(); }));
    BOOST_REQUIRE(!connect_error);
    out.resumed = conn->session_reused();
    return out;
}

// What one loop's clients saw, counted on that loop's thread only: the
// loops share nothing of the test's (a shared counter would order their
// accesses to the session cache for TSan, hiding a race there).
struct Clients {
    int done = 0;
    int failed = 0;
    int resumed = 0;
    std::atomic<bool> finished{false};  // read by the test's thread only
};

// On `sched`'s own thread: `left` exchanges with `to` one after the other
// (handshake, "ping" echoed, close), each started once the one before closed.
void exchanges(reactor::Scheduler& sched, const reactor::Address& to, const tls::ContextPtr& context, int left,
               Clients& clients) {
    if (left == 0) return clients.finished.store(true);
    tls::connect(sched, to, context, "localhost",
                 [&sched, to, context, left, &clients](tls::ConnectionPtr c, std::error_code ec) {
                     if (ec) {
                         ++clients.failed;
                         ++clients.done;
                         return exchanges(sched, to, context, left - 1, clients);
                     }
                     auto got = std::make_shared<std::string>();
                     c->set_handshake_callback([](tls::Connection& c) { c.write("ping"); });
                     c->set_data_callback([got](tls::Connection& c, std::string_view d) {
                         *got += d;
                         if (*got == "ping") c.close();
                     });
                     c->set_close_callback([&sched, to, context, left, &clients, got](tls::Connection& c,
                                                                                      const reactor::End& r) {
                         if (*got != "ping" || r.kind != reactor::EndKind::local) ++clients.failed;
                         if (c.session_reused()) ++clients.resumed;
                         ++clients.done;
                         exchanges(sched, to, context, left - 1, clients);
                     });
                 });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tls_group)

// One client context shared by two loops of a group, whose clients connect,
// resume and store sessions at the same time on their own threads: the
// session cache (taken from as each connection starts, added to as tickets
// arrive) is locked, so nothing races (TSan reported a data race on its
// std::map before). Every exchange succeeds; some resume (each loop's next
// connection starts after its last one stored a session); one session per
// server stays. TLS 1.3 (a ticket is taken out when offered) and TLS 1.2 (a
// session stays, offered by both loops).
BOOST_AUTO_TEST_CASE(one_client_context_serves_two_loops_resuming_at_once) {
    for (tls::Version version : {tls::Version::tls1_3, tls::Version::tls1_2}) {
        BOOST_TEST_CONTEXT((version == tls::Version::tls1_3 ? "TLS 1.3" : "TLS 1.2")) {
            LoopGroup servers(loops(1));
            auto server_options = reactor_test::server_options();
            server_options.max_version = version;
            Served served;
            auto listener = echo_on(servers, tls::Context::server(server_options), served, Spreading::round_robin);
            servers.start();

            // One session cache for both loops. Not verifying: a full handshake
            // would lock the context's X509_STORE, an order between the loops
            // that would hide an unlocked access to the cache from TSan.
            auto client_options = reactor_test::client_options();
            client_options.verify_peer = false;
            auto context = tls::Context::client(client_options);
            constexpr int kEach = 60;
            LoopGroup group(loops(2));
            std::vector<std::unique_ptr<Clients>> clients;
            for (std::size_t i = 0; i < group.size(); ++i) {
                clients.push_back(std::make_unique<Clients>());
                reactor::Scheduler& sched = group.loop(i);
                sched.call_soon([&sched, to = listener->address(), context, mine = clients.back().get()] {
                    exchanges(sched, to, context, kEach, *mine);
                });
            }
            group.start();
            const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
            auto all_finished = [&] {
                for (const auto& c : clients)
                    if (!c->finished.load()) return false;
                return true;
            };
            while (!all_finished() && std::chrono::steady_clock::now() < give_up)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            group.stop();  // joined: their counts are ours to read
            listener->close();
            servers.stop();

            int resumed = 0;
            for (std::size_t i = 0; i < clients.size(); ++i) {
                BOOST_TEST_CONTEXT("loop " << i) {
                    BOOST_TEST(clients[i]->done == kEach);
                    BOOST_TEST(clients[i]->failed == 0);
                }
                resumed += clients[i]->resumed;
            }
            BOOST_TEST(resumed >= 1);
            BOOST_TEST(context->cached_sessions() == 1u);
            BOOST_TEST(served.open.load() == 0);
        }
    }
}

// Round-robin over two loops: connections 1..4 land on loops 0, 1, 0, 1.
// The first is a full handshake; the second, on the other loop, resumes the
// session the first loop issued, and so do the rest: one context, one set
// of ticket keys, whatever the loop. TLS 1.3 and 1.2 (tickets both).
BOOST_AUTO_TEST_CASE(every_loop_serves_and_a_session_from_one_loop_resumes_on_the_other) {
    for (tls::Version version : {tls::Version::tls1_3, tls::Version::tls1_2}) {
        BOOST_TEST_CONTEXT((version == tls::Version::tls1_3 ? "TLS 1.3" : "TLS 1.2")) {
            LoopGroup group(loops(2));
            auto server_options = reactor_test::server_options();
            server_options.max_version = version;
            server_options.alpn = {"http/1.1"};
            Served served;
            auto listener = echo_on(group, tls::Context::server(server_options), served, Spreading::round_robin);
            group.start();

            reactor::Scheduler sched(on(backend_under_test()));
            auto client_options = reactor_test::client_options();
            client_options.alpn = {"http/1.1"};
            auto context = tls::Context::client(client_options);  // one session cache for all four
            std::vector<bool> resumed;
            for (int i = 0; i < 4; ++i) {
                Exchange e = exchange(sched, listener->address(), context);
                BOOST_TEST(e.received == "ping");
                BOOST_REQUIRE(e.reason.has_value());
                BOOST_TEST(e.reason->to_string() == "local");
                resumed.push_back(e.resumed);
            }
            BOOST_TEST((resumed == std::vector<bool>{false, true, true, true}));

            listener->close();
            group.stop();
            BOOST_TEST(served.open.load() == 0);
            BOOST_REQUIRE(served.handshakes.size() == 4u);
            for (std::size_t i = 0; i < 4; ++i) {
                BOOST_TEST_CONTEXT("connection " << i) {
                    const Handshake& h = served.handshakes[i];
                    BOOST_TEST(h.loop == i % 2);
                    BOOST_TEST(h.on_its_loop);
                    BOOST_TEST(h.resumed == (i != 0));
                    BOOST_TEST(h.alpn == "http/1.1");
                }
            }
            sched.run();
            CHECK_EMPTY(sched);
        }
    }
}

// A client that fails its handshake on one loop (garbage) is closed there;
// the same loop and the other go on serving.
BOOST_AUTO_TEST_CASE(a_garbage_client_is_closed_and_every_loop_goes_on_serving) {
    LoopGroup group(loops(2));
    Served served;
    auto listener = echo_on(group, reactor_test::server_context(), served, Spreading::round_robin);
    group.start();
    {
        const int fd = reactor_test::connect_blocking(listener->address().port());
        BOOST_REQUIRE(fd >= 0);
        const std::string garbage = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";  // plaintext to a TLS port
        BOOST_REQUIRE(::send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(garbage.size()));
        char c;
        while (::recv(fd, &c, 1, 0) > 0) {
        }  // the server closes: recv ends (an alert, then EOF or a reset)
        ::close(fd);
    }
    reactor::Scheduler sched(on(backend_under_test()));
    auto context = reactor_test::client_context();
    for (int i = 0; i < 2; ++i) {
        Exchange e = exchange(sched, listener->address(), context);
        BOOST_TEST(e.received == "ping");
    }
    listener->close();
    group.stop();
    BOOST_TEST(served.open.load() == 0);
    BOOST_REQUIRE(served.handshakes.size() == 2u);
    BOOST_TEST(served.handshakes[0].loop == 1u);  // the garbage took loop 0's turn
    BOOST_TEST(served.handshakes[1].loop == 0u);
    sched.run();
    CHECK_EMPTY(sched);
}

// max_handshakes over a group: each loop keeps its own HandshakeLimit in
// the listener's accept callback, which goes with whichever thread lets go
// of the listener last, while the other loop still runs handshakes. A limit
// sees its connections only by tokens they drop themselves, so that thread
// touches no connection of another loop (TSan runs this suite; ASan would
// see a connection reach into a freed limit).
BOOST_AUTO_TEST_CASE(a_listener_with_max_handshakes_goes_while_its_loops_hold_handshakes) {
    LoopGroup group(loops(2));
    std::atomic<int> accepted{0};
    tls::Options tls_options;
    tls_options.max_handshakes = 2;  // one per loop: the third of a loop ends its oldest
    reactor::GroupListener::Options options;
    options.spreading = Spreading::round_robin;
    auto listener = tls::listen(
        group, reactor_test::any_loopback(), reactor_test::server_context(),
        [&accepted](const tls::ConnectionPtr&, std::size_t) { ++accepted; }, options, tls_options);
    group.start();
    constexpr int kSilent = 6;  // connect, never say hello: each stays in its handshake
    std::vector<int> silent;
    for (int i = 0; i < kSilent; ++i) {
        silent.push_back(reactor_test::connect_blocking(listener->address().port()));
        BOOST_REQUIRE(silent.back() >= 0);
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (accepted.load() < kSilent && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    BOOST_REQUIRE(accepted.load() == kSilent);
    listener.reset();  // from this thread, both loops running their handshakes
    group.stop();      // each loop ends its own
    for (int fd : silent) ::close(fd);
}

BOOST_AUTO_TEST_CASE(a_client_context_is_refused) {
    LoopGroup group(loops(2));
    BOOST_CHECK_THROW(static_cast<void>(tls::listen(group, reactor_test::any_loopback(), reactor_test::client_context(),
                                                    [](const tls::ConnectionPtr&, std::size_t) {})),
                      std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
