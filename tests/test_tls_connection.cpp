// SPDX-License-Identifier: MIT
// reactor::tls::Connection over real sockets on 127.0.0.1, the library's
// client against the library's server, on every selector backend: echo of
// 1 MiB each way under water marks, verification failures with OpenSSL's
// text, mTLS, ALPN, SNI, session resumption, close_notify against
// truncation, a hostile client, a reset under the handshake or the
// shutdown (the transport's end), write_eof, STARTTLS, and debug mode's
// refusal of a member called from another thread. Ordering comes from
// callbacks, never from sleeps; every wait is bounded.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <source_location>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/tls/connection.hpp>
#include <reactor/tls/listen.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/net_util.hpp"
#include "support/source_dir.hpp"
#include "support/tcp_echo.hpp"
#include "support/tls_fixtures.hpp"

using namespace std::chrono_literals;
namespace tls = reactor::tls;
using reactor_test::on;
using reactor_test::pki;
using reactor::EndKind;

namespace {

// A TLS client that records what happened to it, in order.
struct Client {
    tls::ConnectionPtr conn;
    std::string received;
    std::optional<reactor::End> reason;
    std::vector<std::string> events;  // "handshake", "high", "low", "close"
    std::error_code connect_error;

    Client(reactor::Scheduler& sched, const reactor::Address& to, tls::ContextPtr context, std::string server_name,
           std::function<void(Client&)> on_handshake = {}) {
        tls::connect(sched, to, std::move(context), std::move(server_name),
                     [this, on_handshake](tls::ConnectionPtr c, std::error_code ec) {
                         connect_error = ec;
                         if (ec) return;
                         conn = c;
                         c->set_handshake_callback([this, on_handshake](tls::Connection&) {
                             events.push_back("handshake");
                             if (on_handshake) on_handshake(*this);
                         });
                         c->set_data_callback([this](tls::Connection&, std::string_view d) { received += d; });
                         c->set_close_callback([this](tls::Connection&, const reactor::End& r) {
                             events.push_back("close");
                             reason = r;
                         });
                     });
    }
    bool closed() const { return reason.has_value(); }
};

void finish(reactor::Scheduler& sched, reactor::Listener& listener) {
    listener.close();
    sched.run();
    CHECK_EMPTY(sched);
}

}  // namespace

BOOST_AUTO_TEST_CASE(echo_1_mib_each_way_with_water_marks_counting_plaintext_then_ciphertext) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::TlsEchoServer server(sched, reactor_test::server_context());
    const std::string payload = reactor_test::random_bytes(1 << 20, 23);
    std::vector<std::string> events;
    std::optional<reactor::End> reason;
    std::string received;
    tls::ConnectionPtr client;
    std::size_t buffered_after_write = 0;
    tls::connect(sched, server.address(), reactor_test::client_context(), "localhost",
                 [&](tls::ConnectionPtr c, std::error_code ec) {
                     BOOST_REQUIRE(!ec);
                     client = c;
                     c->set_high_water_callback([&](tls::Connection&) { events.push_back("high"); });
                     c->set_low_water_callback([&](tls::Connection&) { events.push_back("low"); });
                     c->set_handshake_callback([&](tls::Connection&) { events.push_back("handshake"); });
                     c->set_data_callback([&](tls::Connection& c, std::string_view d) {
                         received += d;
                         if (received.size() == payload.size()) c.close();
                     });
                     c->set_close_callback([&](tls::Connection&, const reactor::End& r) { reason = r; });
                     // Before the handshake: 1 MiB of plaintext waits, and counts.
                     BOOST_TEST(!c->handshake_done());
                     BOOST_TEST(c->write(payload));
                     buffered_after_write = c->buffered();
                 });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return reason.has_value() && server.open == 0; }, 60s));
    BOOST_TEST(buffered_after_write >= payload.size());
    // The high mark was crossed inside write() (plaintext waiting for the
    // handshake), the low one once the ciphertext drained.
    BOOST_REQUIRE(events.size() >= 3u);
    BOOST_TEST(events[0] == "high");
    BOOST_TEST(events[1] == "handshake");
    BOOST_TEST((std::find(events.begin(), events.end(), "low") != events.end()));
    BOOST_TEST(received.size() == payload.size());
    BOOST_TEST((received == payload));
    BOOST_TEST(reason->to_string() == "local");
    BOOST_REQUIRE(server.closes.size() == 1u);
    BOOST_TEST(server.closes[0].to_string() == "eof");  // our close() sent it
    BOOST_TEST(client->protocol_version() == "TLSv1.3");
    BOOST_TEST(client->verify_result() == 0);
    BOOST_TEST(client->verify_result_text() == "ok");
    BOOST_TEST(client->peer_subject() == "CN=localhost,O=reactor test");
    BOOST_TEST(!client->session_reused());
    BOOST_REQUIRE(server.handshaken.size() == 1u);
    BOOST_TEST(server.handshaken[0]->server_name() == "localhost");
    BOOST_TEST(server.handshaken[0]->peer_subject() == "");  // no client certificate asked for
    BOOST_TEST(client->state() == tls::Connection::State::closed);
    finish(sched, *server.listener);
}

BOOST_AUTO_TEST_CASE(tls_1_2_only_server_and_an_ip_address_as_server_name) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto options = reactor_test::server_options();
    options.max_version = tls::Version::tls1_2;
    reactor_test::TlsEchoServer server(sched, tls::Context::server(options));
    // Checked against the certificate's IP address; no SNI is sent for an IP.
    Client client(sched, server.address(), reactor_test::client_context(), "127.0.0.1",
                  [](Client& c) { c.conn->write("over TLS 1.2"); });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.received == "over TLS 1.2"; }));
    BOOST_TEST(client.conn->protocol_version() == "TLSv1.2");
    BOOST_REQUIRE(server.handshaken.size() == 1u);
    BOOST_TEST(server.handshaken[0]->server_name() == "");
    client.conn->close();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.closed() && server.open == 0; }));
    BOOST_TEST(client.reason->to_string() == "local");
    finish(sched, *server.listener);
}

BOOST_AUTO_TEST_CASE(verification_failures_close_with_openssl_text_and_the_server_goes_on) {
    struct Case {
        const tls::IssuedCertificate* cert;
        std::string server_name;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {&pki().server, "wrong.test", "certificate verify failed: hostname mismatch"},
        {&pki().stranger, "localhost", "certificate verify failed: self-signed certificate in certificate chain"},
        {&pki().expired, "localhost", "certificate verify failed: certificate has expired"},
    };
    for (const auto& c : cases) {
        BOOST_TEST_CONTEXT(c.expected) {
            reactor::Scheduler sched(on(reactor_test::backend_under_test()));
            reactor_test::TlsEchoServer server(sched, reactor_test::server_context(*c.cert));
            Client bad(sched, server.address(), reactor_test::client_context(), c.server_name);
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return bad.closed() && server.open == 0; }));
            BOOST_TEST(bad.reason->kind == EndKind::handshake_failed);
            BOOST_TEST(bad.reason->detail.find(c.expected) != std::string::npos, bad.reason->detail);
            BOOST_TEST(bad.reason->to_string().starts_with("handshake failed: error:"));
            BOOST_TEST((bad.events == std::vector<std::string>{"close"}));  // never a handshake callback
            // The server saw the client's alert: a failed handshake as well.
            BOOST_REQUIRE(server.closes.size() == 1u);
            BOOST_TEST(server.closes[0].kind == EndKind::handshake_failed);
            BOOST_TEST(server.closes[0].detail.find("alert") != std::string::npos, server.closes[0].detail);
            // The listener goes on: a client that does not verify is served.
            auto lax_options = reactor_test::client_options();
            lax_options.verify_peer = false;
            Client lax(sched, server.address(), tls::Context::client(lax_options), c.server_name,
                       [](Client& c) { c.conn->write("still here"); });
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return lax.received == "still here"; }));
            lax.conn->close();
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return lax.closed() && server.open == 0; }));
            finish(sched, *server.listener);
        }
    }
}

BOOST_AUTO_TEST_CASE(mtls_a_client_without_a_certificate_fails_one_with_it_is_named) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto options = reactor_test::server_options();
    options.client_auth = tls::ClientAuth::require;
    options.client_trust = pki().ca.trust();
    reactor_test::TlsEchoServer server(sched, tls::Context::server(options));

    Client anonymous(sched, server.address(), reactor_test::client_context(), "localhost");
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return anonymous.closed() && server.open == 0; }));
    BOOST_REQUIRE(server.closes.size() == 1u);
    BOOST_TEST(server.closes[0].kind == EndKind::handshake_failed);
    BOOST_TEST(server.closes[0].detail.find("peer did not return a certificate") != std::string::npos,
               server.closes[0].detail);
    // TLS 1.3: the client's side of the handshake is done before the server
    // reads its (missing) certificate; the server's alert then ends it.
    BOOST_TEST((anonymous.reason->kind == EndKind::tls_error || anonymous.reason->kind == EndKind::handshake_failed));
    BOOST_TEST(anonymous.reason->detail.find("certificate required") != std::string::npos, anonymous.reason->detail);

    auto with_cert = reactor_test::client_options();
    with_cert.identity = pki().client.identity();
    Client named(sched, server.address(), tls::Context::client(with_cert), "localhost",
                 [](Client& c) { c.conn->write("hello, it is me"); });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return named.received == "hello, it is me"; }));
    BOOST_REQUIRE(server.handshaken.size() == 1u);
    BOOST_TEST(server.handshaken[0]->peer_subject() == "CN=reactor test client,O=reactor test");
    BOOST_TEST(server.handshaken[0]->verify_result() == 0);
    named.conn->close();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return named.closed() && server.open == 0; }));
    BOOST_TEST(named.reason->to_string() == "local");
    finish(sched, *server.listener);
}

BOOST_AUTO_TEST_CASE(alpn_the_server_preference_wins_and_no_overlap_means_none) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto options = reactor_test::server_options();
    options.alpn = {"h2", "http/1.1"};
    reactor_test::TlsEchoServer server(sched, tls::Context::server(options));
    struct Case {
        std::vector<std::string> offered;
        std::string chosen;
    };
    for (const Case& c : std::vector<Case>{{{"http/1.1", "h2"}, "h2"}, {{"http/1.1"}, "http/1.1"}, {{"spdy/3"}, ""}}) {
        auto client_options = reactor_test::client_options();
        client_options.alpn = c.offered;
        Client client(sched, server.address(), tls::Context::client(client_options), "localhost",
                      [](Client& c) { c.conn->close(); });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.closed() && server.open == 0; }));
        BOOST_TEST(client.reason->to_string() == "local");
        BOOST_TEST(client.conn->alpn_protocol() == c.chosen);
        BOOST_TEST(server.handshaken.back()->alpn_protocol() == c.chosen);
    }
    BOOST_TEST(server.handshaken.size() == 3u);
    finish(sched, *server.listener);
}

BOOST_AUTO_TEST_CASE(sni_picks_the_second_context_by_name) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto main_context = reactor_test::server_context(pki().server);
    main_context->add_server_name("ALT.test", reactor_test::server_context(pki().alt));  // names are case-insensitive
    reactor_test::TlsEchoServer server(sched, main_context);
    for (std::string name : {"alt.test", "localhost"}) {
        Client client(sched, server.address(), reactor_test::client_context(), name,
                      [](Client& c) { c.conn->close(); });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.closed() && server.open == 0; }));
        BOOST_TEST(client.reason->to_string() == "local");  // verified against the name: the right certificate
        BOOST_TEST(client.conn->peer_subject() == "CN=" + name + ",O=reactor test");
        BOOST_TEST(server.handshaken.back()->server_name() == name);
    }
    finish(sched, *server.listener);
}

BOOST_AUTO_TEST_CASE(session_resumption_on_the_second_connection_tls_1_3_and_1_2) {
    for (tls::Version version : {tls::Version::tls1_3, tls::Version::tls1_2}) {
        BOOST_TEST_CONTEXT((version == tls::Version::tls1_3 ? "TLS 1.3" : "TLS 1.2")) {
            reactor::Scheduler sched(on(reactor_test::backend_under_test()));
            auto options = reactor_test::server_options();
            options.max_version = version;
            reactor_test::TlsEchoServer server(sched, tls::Context::server(options));
            auto context = reactor_test::client_context();  // one cache for both connections
            std::vector<bool> reused;
            for (int i = 0; i < 2; ++i) {
                // An echo before closing: a TLS 1.3 ticket arrives after the handshake.
                Client client(sched, server.address(), context, "localhost", [](Client& c) { c.conn->write("ping"); });
                BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.received == "ping"; }));
                reused.push_back(client.conn->session_reused());
                BOOST_TEST(server.handshaken.back()->session_reused() == client.conn->session_reused());
                client.conn->close();
                BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.closed() && server.open == 0; }));
                BOOST_TEST(client.reason->to_string() == "local");
            }
            BOOST_TEST((reused == std::vector<bool>{false, true}));
            BOOST_TEST(context->cached_sessions() >= 1u);
            context->clear_session_cache();
            BOOST_TEST(context->cached_sessions() == 0u);
            finish(sched, *server.listener);
        }
    }
}

BOOST_AUTO_TEST_CASE(close_notify_and_truncation_are_different_reasons) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    enum class Ending { close_notify, tcp_fin, tcp_reset };
    std::vector<tls::ConnectionPtr> accepted;
    std::vector<reactor::End> server_reasons;
    auto listener = tls::listen(sched, reactor_test::any_loopback(), reactor_test::server_context(),
                                [&](const tls::ConnectionPtr& c) {
                                    accepted.push_back(c);
                                    c->set_close_callback([&](tls::Connection&, const reactor::End& r) {
                                        server_reasons.push_back(r);
                                    });
                                });
    struct Case {
        Ending ending;
        std::string expected_reason;
    };
    for (const Case& c : std::vector<Case>{{Ending::close_notify, "eof"},
                                           {Ending::tcp_fin, "truncated"},
                                           {Ending::tcp_reset, "reset"}}) {
        BOOST_TEST_CONTEXT(c.expected_reason) {
            Client client(sched, listener->address(), reactor_test::client_context(), "localhost");
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] {
                return !accepted.empty() && accepted.back()->handshake_done() && client.conn && client.conn->handshake_done();
            }));
            tls::Connection& server_side = *accepted.back();
            server_side.write("the first half");
            switch (c.ending) {
            case Ending::close_notify: server_side.close(); break;
            // The peer just closes the TCP socket mid-stream, no close_notify.
            case Ending::tcp_fin: ::shutdown(server_side.transport().fd(), SHUT_WR); break;
            case Ending::tcp_reset: server_side.abort(); break;
            }
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.closed(); }));
            BOOST_TEST(client.received == (c.ending == Ending::tcp_reset ? client.received : "the first half"));
            BOOST_TEST(client.reason->to_string().starts_with(c.expected_reason), client.reason->to_string());
            if (c.ending == Ending::tcp_fin) {
                BOOST_TEST(client.reason->kind == EndKind::truncated);
                BOOST_TEST(client.reason->detail.find("unexpected eof while reading") != std::string::npos,
                           client.reason->detail);
                server_side.abort();
            }
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server_reasons.size() == accepted.size(); }));
        }
    }
    BOOST_TEST(server_reasons[0].to_string() == "local");
    finish(sched, *listener);
}

// Issue 49: a TLS 1.3 client that closes in its handshake callback sends its
// Finished and its close_notify together, then its FIN. The server reads both
// in one go, writes its session tickets (the client's kernel answers with a
// reset) and its own close_notify, which meets EPIPE: the close_notify that
// arrived is still the reason, not the reset its answer met.
BOOST_AUTO_TEST_CASE(a_close_notify_that_arrived_wins_over_the_reset_our_answer_meets) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    for (const tls::Version version : {tls::Version::tls1_3, tls::Version::tls1_2}) {
        BOOST_TEST_CONTEXT((version == tls::Version::tls1_3 ? "TLS 1.3" : "TLS 1.2")) {
            auto options = reactor_test::server_options();
            options.max_version = version;
            reactor_test::TlsEchoServer server(sched, tls::Context::server(options));
            Client client(sched, server.address(), reactor_test::client_context(), "localhost",
                          [](Client& c) { c.conn->close(); });
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.closed() && server.closes.size() == 1; }));
            BOOST_TEST(client.reason->to_string() == "local");
            BOOST_TEST(server.closes[0].kind == EndKind::eof, server.closes[0].to_string());
            BOOST_TEST(server.closes[0].to_string() == "eof");
            finish(sched, *server.listener);
        }
    }
    // With an EOF callback, the server answers the close_notify; its writes
    // soon meet the peer's reset, and the reason is still the close_notify,
    // or local when the callback then calls close().
    for (const bool close_after : {false, true}) {
        BOOST_TEST_CONTEXT("EOF callback, close() after it: " << close_after) {
            std::optional<reactor::End> reason;
            int writes_taken = 0;
            auto listener = tls::listen(sched, reactor_test::any_loopback(), reactor_test::server_context(),
                                        [&](const tls::ConnectionPtr& c) {
                                            c->set_eof_callback([&](tls::Connection& c) {
                                                while (writes_taken < 1000 && c.write("an answer nobody reads"))
                                                    ++writes_taken;
                                                if (close_after) c.close();
                                            });
                                            c->set_close_callback(
                                                [&](tls::Connection&, const reactor::End& r) { reason = r; });
                                        });
            Client client(sched, listener->address(), reactor_test::client_context(), "localhost",
                          [](Client& c) { c.conn->close(); });
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.closed() && reason.has_value(); }));
            BOOST_TEST(writes_taken < 1000);  // a write did meet the reset
            BOOST_TEST(reason->kind == (close_after ? EndKind::local : EndKind::eof), reason->to_string());
            finish(sched, *listener);
        }
    }
}

BOOST_AUTO_TEST_CASE(write_eof_sends_close_notify_and_the_reply_still_arrives) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    std::string server_got;
    std::vector<std::string> bag;
    auto listener = tls::listen(sched, reactor_test::any_loopback(), reactor_test::server_context(),
                                [&](const tls::ConnectionPtr& c) {
                                    c->set_data_callback([&](tls::Connection&, std::string_view d) { server_got += d; });
                                    c->set_eof_callback([&](tls::Connection& c) {
                                        bag.push_back("server eof");
                                        BOOST_TEST(c.at_eof());
                                        BOOST_TEST(c.write("reply to: " + server_got));
                                        c.write_eof();
                                    });
                                    c->set_close_callback([&](tls::Connection&, const reactor::End& r) {
                                        bag.push_back("server " + r.to_string());
                                    });
                                });
    Client client(sched, listener->address(), reactor_test::client_context(), "localhost");
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.conn != nullptr; }));
    client.conn->write("question");  // before the handshake: kept, then sent, then close_notify
    client.conn->write_eof();
    BOOST_TEST(!client.conn->write("too late"));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.closed() && bag.size() == 2; }));
    BOOST_TEST(server_got == "question");
    BOOST_TEST(client.received == "reply to: question");
    BOOST_TEST(client.reason->to_string() == "eof");
    BOOST_TEST((bag == std::vector<std::string>{"server eof", "server eof"}));
    finish(sched, *listener);
}

BOOST_AUTO_TEST_CASE(garbage_instead_of_a_client_hello_is_a_clean_handshake_failure) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::TlsEchoServer server(sched, reactor_test::server_context());
    for (std::string garbage : {std::string("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"),
                                reactor_test::random_bytes(4096, 99), std::string("\x16\x03\x01\xff\xff garbage")}) {
        const std::size_t before = server.closes.size();
        int fd = reactor_test::connect_blocking(server.port());
        BOOST_REQUIRE(fd >= 0);
        BOOST_REQUIRE(reactor_test::send_all(fd, garbage));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.closes.size() == before + 1; }));
        BOOST_TEST(server.closes.back().kind == EndKind::handshake_failed);
        BOOST_TEST(server.closes.back().detail.starts_with("error:"), server.closes.back().detail);
        // The client reads the server's alert (if any), then EOF: a clean close, not a hang.
        std::string rest = reactor_test::recv_all(fd);
        BOOST_TEST(rest.size() < 64u);
        ::close(fd);
    }
    Client good(sched, server.address(), reactor_test::client_context(), "localhost",
                [](Client& c) { c.conn->write("served"); });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return good.received == "served"; }));
    good.conn->close();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return good.closed() && server.open == 0; }));
    BOOST_TEST(server.listener->accepted() == 4u);
    finish(sched, *server.listener);
}

namespace {

// Closes a raw socket with a reset (SO_LINGER 0): its peer's next recv or
// send meets ECONNRESET.
void close_with_reset(int fd) {
    const linger abortive{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abortive, sizeof abortive);
    ::close(fd);
}

// The end a plain connection gives a reset: kind reset, its errno (the
// kernel says ECONNRESET, or EPIPE to a send after it), no TLS text.
bool is_transport_reset(const reactor::End& end) {
    return end.kind == EndKind::reset && end.detail.empty() &&
           (end.error == std::errc::connection_reset || end.error == std::errc::broken_pipe);
}

// A client handshake started over a plain connection to `peer`, which the
// test accepted by hand (`accepted`); reading paused until the TLS
// connection starts, so a reset meanwhile waits for it.
struct ClientOverRawPeer {
    reactor_test::SilentListener peer;
    reactor::ConnectionPtr plain;
    int accepted = -1;
    tls::ConnectionPtr conn;
    std::optional<reactor::End> reason;

    explicit ClientOverRawPeer(reactor::Scheduler& sched) {
        auto connector = reactor::connect(sched, reactor::Address::loopback_v4(peer.port),
                                          [this](reactor::ConnectionPtr c, std::error_code ec) {
                                              BOOST_REQUIRE_MESSAGE(c, ec.message());
                                              plain = c;
                                              c->pause_reading();
                                          });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return plain != nullptr; }));
        accepted = ::accept4(peer.fd, nullptr, nullptr, SOCK_CLOEXEC);  // the kernel completed it
        BOOST_REQUIRE(accepted >= 0);
        const timeval bound{10, 0};
        ::setsockopt(accepted, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    }
    void start() {
        conn = tls::Connection::start_client(plain, reactor_test::client_context(), "localhost");
        conn->set_close_callback([this](tls::Connection&, const reactor::End& r) { reason = r; });
    }
    // The ClientHello, as the peer read it (start() sent it).
    std::string read_hello() {
        char buf[16 * 1024];
        const ssize_t n = ::recv(accepted, buf, sizeof buf, 0);
        BOOST_REQUIRE(n > 5);
        return std::string(buf, static_cast<std::size_t>(n));
    }
};

}  // namespace

// Issue 48: the socket under a client's handshake is reset. Its end is the
// reset, as the plain connection spells it (kind reset, ECONNRESET), not
// handshake_failed "the TLS engine failed": whether the reset comes while
// it waits for the server's answer (its recv meets it) or before its
// ClientHello goes (the first flight's send meets it, in start_client).
BOOST_AUTO_TEST_CASE(a_reset_under_a_clients_handshake_ends_it_with_the_transports_reset) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    for (const bool before_hello : {false, true}) {
        BOOST_TEST_CONTEXT("reset before the ClientHello went: " << before_hello) {
            ClientOverRawPeer client(sched);
            if (before_hello) {
                close_with_reset(client.accepted);
                pollfd arrived{client.plain->fd(), 0, 0};  // POLLERR and POLLHUP need no asking
                BOOST_REQUIRE(::poll(&arrived, 1, 10'000) == 1);
                client.start();
            } else {
                client.start();
                BOOST_TEST(client.read_hello()[0] == '\x16');  // a handshake record
                close_with_reset(client.accepted);
            }
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.reason.has_value(); }));
            BOOST_TEST(is_transport_reset(*client.reason), client.reason->to_string());
            BOOST_TEST(!client.conn->handshake_done());
        }
    }
    sched.run();
    CHECK_EMPTY(sched);
}

// Issue 48, the shutdown: the peer reset the connection (it arrived, unread)
// and then close() or write_eof() sends our close_notify, whose send meets
// the reset: the end is the reset, as the plain connection's.
BOOST_AUTO_TEST_CASE(a_reset_under_the_shutdown_ends_it_with_the_transports_reset) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::TlsEchoServer server(sched, reactor_test::server_context());
    for (const bool write_eof : {false, true}) {
        BOOST_TEST_CONTEXT((write_eof ? "write_eof()" : "close()")) {
            Client client(sched, server.address(), reactor_test::client_context(), "localhost");
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] {
                return client.conn && client.conn->handshake_done() && server.handshaken.size() == (write_eof ? 2u : 1u);
            }));
            server.handshaken.back()->abort();  // the peer sees a reset
            pollfd arrived{client.conn->transport().fd(), 0, 0};  // POLLERR and POLLHUP need no asking
            BOOST_REQUIRE(::poll(&arrived, 1, 10'000) == 1);
            if (write_eof) {
                client.conn->write_eof();
            } else {
                client.conn->close();
            }
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.closed(); }));
            BOOST_TEST(is_transport_reset(*client.reason), client.reason->to_string());
        }
    }
    finish(sched, *server.listener);
}

// Issue 48, the server's side: a client sends its ClientHello, then resets.
// The server's answer (its first flight) meets the reset, or its recv does:
// either way its end is the reset, not handshake_failed. A few rounds, as
// which of the two comes first is the kernel's timing.
BOOST_AUTO_TEST_CASE(a_client_that_resets_after_its_client_hello_ends_the_servers_handshake_with_the_reset) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    std::string hello;
    {
        ClientOverRawPeer client(sched);
        client.start();
        hello = client.read_hello();
        client.conn->abort();
        ::close(client.accepted);
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.reason.has_value(); }));
    }
    reactor_test::TlsEchoServer server(sched, reactor_test::server_context());
    for (int round = 0; round < 4; ++round) {
        BOOST_TEST_CONTEXT("round " << round) {
            const int fd = reactor_test::connect_blocking(server.port());
            BOOST_REQUIRE(fd >= 0);
            BOOST_REQUIRE(reactor_test::send_all(fd, hello));
            if (round % 2 == 1) {  // the server has read it (its answer came): the reset meets its next flight's wait
                char answer[5];
                BOOST_REQUIRE(reactor_test::run_until(sched, [&] {
                    return ::recv(fd, answer, sizeof answer, MSG_PEEK | MSG_DONTWAIT) == 5;
                }));
            }
            close_with_reset(fd);
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.closes.size() == std::size_t(round) + 1; }));
            BOOST_TEST(is_transport_reset(server.closes.back()), server.closes.back().to_string());
        }
    }
    BOOST_TEST(server.handshaken.empty());
    finish(sched, *server.listener);
}

BOOST_AUTO_TEST_CASE(starttls_upgrades_a_plain_connection_in_place) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto server_context = reactor_test::server_context();
    std::string server_got_secure;
    std::optional<reactor::End> server_reason;
    std::string server_plain_error;
    auto listener = reactor::Listener::listen(sched, reactor_test::any_loopback(), [&](const reactor::ConnectionPtr& c) {
        c->set_data_callback([&](reactor::Connection& plain, std::string_view d) {
            if (d != "STARTTLS\r\n") {
                server_plain_error = std::string(d);
                return plain.close();
            }
            plain.write("GO AHEAD\r\n");
            auto secure = tls::Connection::start_server(plain.shared_from_this(), server_context);
            secure->set_data_callback([&](tls::Connection& s, std::string_view d) {
                server_got_secure += d;
                s.write(d);
            });
            secure->set_close_callback([&](tls::Connection&, const reactor::End& r) { server_reason = r; });
        });
    });
    std::string client_got_plain, client_got_secure;
    std::optional<reactor::End> client_reason;
    bool client_handshake = false;
    reactor::connect(sched, listener->address(), [&](reactor::ConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        c->set_data_callback([&](reactor::Connection& plain, std::string_view d) {
            client_got_plain += d;
            if (client_got_plain != "GO AHEAD\r\n") return;
            auto secure = tls::Connection::start_client(plain.shared_from_this(), reactor_test::client_context(), "localhost");
            secure->set_handshake_callback([&](tls::Connection& s) {
                client_handshake = true;
                s.write("secret");
            });
            secure->set_data_callback([&](tls::Connection& s, std::string_view d) {
                client_got_secure += d;
                if (client_got_secure == "secret") s.close();
            });
            secure->set_close_callback([&](tls::Connection&, const reactor::End& r) { client_reason = r; });
        });
        c->write("STARTTLS\r\n");
    });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client_reason && server_reason; }));
    BOOST_TEST(server_plain_error == "");
    BOOST_TEST(client_handshake);
    BOOST_TEST(server_got_secure == "secret");
    BOOST_TEST(client_got_secure == "secret");
    BOOST_TEST(client_reason->to_string() == "local");
    BOOST_TEST(server_reason->to_string() == "eof");
    finish(sched, *listener);
}

BOOST_AUTO_TEST_CASE(misuse_is_refused_with_a_clear_error) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto server_context = reactor_test::server_context();
    auto client_context = reactor_test::client_context();
    BOOST_CHECK_THROW((void)tls::listen(sched, reactor_test::any_loopback(), client_context, {}), std::invalid_argument);
    BOOST_CHECK_THROW(tls::connect(sched, reactor::Address::loopback_v4(1), server_context, "localhost", {}),
                      std::invalid_argument);
    // A verifying client must know whom to expect.
    BOOST_CHECK_THROW(tls::connect(sched, reactor::Address::loopback_v4(1), client_context, "", {}),
                      std::invalid_argument);
    BOOST_CHECK_THROW(tls::Connection::start_client(nullptr, client_context, "localhost"), std::invalid_argument);
    BOOST_CHECK_THROW(server_context->add_server_name("x", client_context), std::invalid_argument);
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(pause_reading_holds_decrypted_data_back_until_resumed) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    std::vector<std::string> got;
    tls::ConnectionPtr server_side;
    auto listener = tls::listen(sched, reactor_test::any_loopback(), reactor_test::server_context(),
                                [&](const tls::ConnectionPtr& c) {
                                    server_side = c;
                                    c->set_data_callback([&](tls::Connection& c, std::string_view d) {
                                        got.emplace_back(d);
                                        if (got.size() == 1) c.pause_reading();  // at once, inside the callback
                                    });
                                });
    // Three records in a row: they reach the server together, or nearly.
    Client client(sched, listener->address(), reactor_test::client_context(), "localhost", [](Client& c) {
        c.conn->write("one");
        c.conn->write("two");
        c.conn->write("three");
    });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got.size() == 1; }));
    // Paused: whatever arrives waits (undecrypted), however long the loop runs.
    bool waited = false;
    sched.call_later(50ms, [&] { waited = true; });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return waited; }));
    BOOST_TEST((got == std::vector<std::string>{"one"}));
    server_side->resume_reading();
    BOOST_TEST(got.size() == 1u);  // never from inside resume_reading()
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got.size() == 3; }));
    BOOST_TEST((got == std::vector<std::string>{"one", "two", "three"}));
    client.conn->close();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.closed(); }));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server_side->state() == tls::Connection::State::closed; }));
    finish(sched, *listener);
}

BOOST_AUTO_TEST_CASE(the_end_of_the_loop_ends_open_tls_connections) {
    // Scheduler::close(): every connection is aborted and its close callback
    // runs, the reason naming the loop's end; nothing is left behind.
    std::vector<std::string> reasons;
    {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        reactor_test::TlsEchoServer server(sched, reactor_test::server_context());
        Client client(sched, server.address(), reactor_test::client_context(), "localhost",
                      [](Client& c) { c.conn->write("ping"); });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.received == "ping"; }));
        Client pending(sched, server.address(), reactor_test::client_context(), "localhost");  // mid-handshake, maybe
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return pending.conn != nullptr; }));
        sched.close();
        reasons.push_back(client.reason ? client.reason->to_string() : "none");
        reasons.push_back(pending.reason ? pending.reason->to_string() : "none");
        for (const auto& r : server.closes) reasons.push_back(r.to_string());
        BOOST_TEST(sched.empty());
    }
    BOOST_REQUIRE(reasons.size() == 4u);
    for (const auto& r : reasons) BOOST_TEST(r == "scheduler closed");
}

BOOST_AUTO_TEST_CASE(destroying_the_scheduler_with_tls_connections_open_frees_them_without_callbacks) {
    tls::ConnectionPtr client_kept, server_kept;  // kept past the loop, to count who else holds them
    bool any_close_callback = false;
    {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        reactor_test::TlsEchoServer server(sched, reactor_test::server_context());
        Client client(sched, server.address(), reactor_test::client_context(), "localhost",
                      [](Client& c) { c.conn->write("ping"); });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.received == "ping"; }));
        client.conn->set_close_callback([&](tls::Connection&, const reactor::End&) { any_close_callback = true; });
        client_kept = client.conn;
        server_kept = server.handshaken.at(0);
        client.conn.reset();
        server.handshaken.clear();
        server.listener.reset();
        // The Scheduler goes without close(): ASan checks nothing is touched after it.
    }
    BOOST_TEST(!any_close_callback);
    BOOST_TEST(client_kept.use_count() == 1u);  // ours alone: freed with it, not leaked
    BOOST_TEST(server_kept.use_count() == 1u);
    // Each plain connection is held by its TLS connection alone (and the handle made here).
    BOOST_TEST(client_kept->socket().shared_from_this().use_count() == 2u);
    BOOST_TEST(server_kept->socket().shared_from_this().use_count() == 2u);
    client_kept.reset();  // AddressSanitizer: nothing here may touch the loop
    server_kept.reset();
}

BOOST_AUTO_TEST_CASE(drain_after_the_handshake_and_no_writes_once_closing) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::TlsEchoServer server(sched, reactor_test::server_context());
    std::vector<std::string> bag;
    tls::ConnectionPtr client;
    tls::connect(sched, server.address(), reactor_test::client_context(), "localhost",
                 [&](tls::ConnectionPtr c, std::error_code ec) {
                     BOOST_REQUIRE(!ec);
                     client = c;
                     c->set_handshake_callback([&](tls::Connection&) { bag.push_back("handshake"); });
                     c->set_drain_callback([&](tls::Connection& c) {
                         bag.push_back("drain " + std::to_string(c.buffered()));
                     });
                     c->set_data_callback([&](tls::Connection&, std::string_view d) { bag.push_back(std::string(d)); });
                     c->set_close_callback([&](tls::Connection&, const reactor::End& r) { bag.push_back(r.to_string()); });
                     BOOST_TEST(c->write("early"));  // kept until the handshake is done
                     BOOST_TEST(c->buffered() == 5u);
                 });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return bag.size() == 3; }));
    // The plaintext went out after the handshake; the drain says so, before the echo.
    BOOST_TEST((bag == std::vector<std::string>{"handshake", "drain 0", "early"}));
    client->close();
    BOOST_TEST(!client->write("late"));
    BOOST_TEST(client->state() == tls::Connection::State::shutting_down);
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return bag.size() == 4 && server.open == 0; }));
    BOOST_TEST(bag.back() == "local");
    BOOST_TEST(!client->write("after the close"));
    finish(sched, *server.listener);
}

BOOST_AUTO_TEST_CASE(connect_by_host_name_uses_it_as_the_server_name) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::TlsEchoServer server(sched, reactor_test::server_context());
    std::string received;
    std::optional<reactor::End> reason;
    // "localhost" is looked up (it may give ::1 first: each address is tried)
    // and checked against the certificate.
    tls::connect(sched, "localhost", server.port(), reactor_test::client_context(),
                 [&](tls::ConnectionPtr c, std::error_code ec) {
                     BOOST_REQUIRE(!ec);
                     BOOST_TEST(c->server_name() == "localhost");
                     c->set_handshake_callback([](tls::Connection& c) { c.write("by name"); });
                     c->set_data_callback([&](tls::Connection& c, std::string_view d) {
                         received += d;
                         c.close();
                     });
                     c->set_close_callback([&](tls::Connection&, const reactor::End& r) { reason = r; });
                 });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return reason && server.open == 0; }));
    BOOST_TEST(received == "by name");
    BOOST_TEST(reason->to_string() == "local");
    BOOST_TEST(server.handshaken.at(0)->server_name() == "localhost");
    finish(sched, *server.listener);
}

BOOST_AUTO_TEST_CASE(echo_to_a_slow_reader_keeps_the_server_buffer_within_the_water_marks) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    constexpr std::size_t kTotal = 16u << 20;
    constexpr std::size_t kHigh = 64 * 1024;
    constexpr std::size_t kRecord = 16 * 1024 + 256;  // one TLS record's plaintext, plus its framing
    int small = 64 * 1024;  // kernel buffers that cannot hide the backpressure
    std::size_t server_max_buffered = 0;
    int server_pauses = 0;
    tls::ConnectionPtr server_side, client;
    bool client_paused = false;
    // The slow reader: after every 256 KiB it stops reading until the server
    // is held back by its high mark (so the case never depends on timing).
    auto resume_client_once_the_server_is_held_back = [&] {
        if (!client_paused || !server_side || !server_side->above_high_water()) return;
        client_paused = false;
        sched.call_soon([&] { client->resume_reading(); });
    };
    auto listener = tls::listen(sched, reactor_test::any_loopback(), reactor_test::server_context(),
                                [&](const tls::ConnectionPtr& c) {
                                    server_side = c;
                                    ::setsockopt(c->transport().fd(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
                                    c->set_data_callback([&](tls::Connection& c, std::string_view d) {
                                        c.write(d);
                                        server_max_buffered = std::max(server_max_buffered, c.buffered());
                                    });
                                    c->set_high_water_callback([&](tls::Connection& c) {
                                        ++server_pauses;
                                        c.pause_reading();
                                        resume_client_once_the_server_is_held_back();
                                    });
                                    c->set_low_water_callback([](tls::Connection& c) { c.resume_reading(); });
                                });
    const std::string chunk = reactor_test::random_bytes(256 * 1024, 5);
    std::size_t sent = 0, received = 0, mismatches = 0, since_pause = 0;
    std::optional<reactor::End> reason;
    auto send_more = [&](tls::Connection& c) {
        while (sent < kTotal && !c.above_high_water()) {
            c.write(chunk);
            sent += chunk.size();
        }
    };
    tls::connect(sched, listener->address(), reactor_test::client_context(), "localhost",
                 [&](tls::ConnectionPtr c, std::error_code ec) {
                     BOOST_REQUIRE(!ec);
                     client = c;
                     ::setsockopt(c->transport().fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
                     c->set_handshake_callback(send_more);
                     c->set_low_water_callback(send_more);
                     c->set_data_callback([&](tls::Connection& c, std::string_view d) {
                         for (char ch : d) mismatches += ch != chunk[received++ % chunk.size()];
                         since_pause += d.size();
                         if (received == kTotal) return c.close();
                         // (Not near the end: what is left must be enough to fill the kernel buffers.)
                         if (since_pause >= chunk.size() && kTotal - received > (2u << 20)) {
                             since_pause = 0;
                             c.pause_reading();
                             client_paused = true;
                             resume_client_once_the_server_is_held_back();
                         }
                     });
                     c->set_close_callback([&](tls::Connection&, const reactor::End& r) { reason = r; });
                 });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return reason.has_value(); }, 120s));
    BOOST_TEST(reason->to_string() == "local");
    BOOST_TEST(received == kTotal);
    BOOST_TEST(mismatches == 0u);
    BOOST_TEST(server_pauses > 0);  // the slow reader did hold the server back
    // Above the high mark the server stops reading: at most one record's
    // echo more than the mark is ever buffered.
    BOOST_TEST(server_max_buffered <= kHigh + kRecord);
    server_side.reset();
    finish(sched, *listener);
}

BOOST_AUTO_TEST_CASE(a_tls_connection_held_past_its_scheduler_is_released_safely) {
    tls::ConnectionPtr closed_one, open_one;
    {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        reactor_test::TlsEchoServer server(sched, reactor_test::server_context());
        Client first(sched, server.address(), reactor_test::client_context(), "localhost",
                     [](Client& c) { c.conn->close(); });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return first.closed(); }));
        Client second(sched, server.address(), reactor_test::client_context(), "localhost",
                      [](Client& c) { c.conn->write("x"); });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return second.received == "x"; }));
        closed_one = first.conn;
        open_one = second.conn;
        open_one->set_close_callback({});  // `second` goes before the loop
        open_one->set_data_callback({});
        server.handshaken.clear();
    }
    // The loop is gone: what is left of them answers, and frees without touching it.
    BOOST_TEST(closed_one->state() == tls::Connection::State::closed);
    BOOST_TEST(!closed_one->write("late"));
    closed_one->resume_reading();
    closed_one->close();
    closed_one.reset();
    open_one.reset();
}

// Debug mode, as the plain Connection's (test_debug_owner_thread.cpp): while
// the loop runs on this thread, another thread calls every member of a TLS
// connection that acts. Each is refused with std::logic_error before it
// changes anything (write sends nothing, close sends no close_notify) and
// reported once on the loop's handler, naming the member and the line that
// made the connection's transport. From its own thread it then works.
BOOST_AUTO_TEST_CASE(in_debug_mode_a_tls_connection_touched_from_another_thread_is_refused) {
    reactor::Scheduler::Options options = on(reactor_test::backend_under_test());
    options.debug = true;
    reactor::Scheduler sched(options);
    std::vector<reactor::ErrorContext> reports;
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx); });
    int fds[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    // clang-format off
    const unsigned made_line = std::source_location::current().line(); auto transport = reactor::Connection::adopt(sched, fds[0]);
    // clang-format on
    auto server = tls::Connection::start_server(transport, reactor_test::server_context());
    auto client = tls::Connection::start_client(reactor::Connection::adopt(sched, fds[1]),
                                                reactor_test::client_context(), "localhost");
    transport.reset();
    bool server_ready = false, client_ready = false;
    std::string client_got;
    std::optional<reactor::End> server_reason, client_reason;
    server->set_handshake_callback([&](tls::Connection&) { server_ready = true; });
    server->set_close_callback([&](tls::Connection&, const reactor::End& r) { server_reason = r; });
    client->set_handshake_callback([&](tls::Connection&) { client_ready = true; });
    client->set_data_callback([&](tls::Connection&, std::string_view d) { client_got += d; });
    client->set_close_callback([&](tls::Connection&, const reactor::End& r) { client_reason = r; });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server_ready && client_ready; }));

    using C = tls::Connection;
    tls::Connection& s = *server;
    const std::vector<std::pair<const char*, std::function<void()>>> members{
        {"tls::Connection::write", [&] { s.write("refused"); }},
        {"tls::Connection::write_eof", [&] { s.write_eof(); }},
        {"tls::Connection::close", [&] { s.close(); }},
        {"tls::Connection::abort", [&] { s.abort(); }},
        {"tls::Connection::pause_reading", [&] { s.pause_reading(); }},
        {"tls::Connection::resume_reading", [&] { s.resume_reading(); }},
        {"tls::Connection::set_water_marks", [&] { s.set_water_marks(10, 5); }},
        {"tls::Connection::set_data_callback", [&] { s.set_data_callback({}); }},
        {"tls::Connection::set_handshake_callback", [&] { s.set_handshake_callback([](C&) {}); }},
        {"tls::Connection::set_eof_callback", [&] { s.set_eof_callback([](C&) {}); }},
        {"tls::Connection::set_drain_callback", [&] { s.set_drain_callback([](C&) {}); }},
        {"tls::Connection::set_high_water_callback", [&] { s.set_high_water_callback([](C&) {}); }},
        {"tls::Connection::set_low_water_callback", [&] { s.set_low_water_callback([](C&) {}); }},
        {"tls::Connection::set_close_callback", [&] { s.set_close_callback({}); }},
    };
    // The other thread starts once the loop runs, and stops it once done
    // (after the reports it posted, which run first).
    std::vector<std::string> caught(members.size());
    std::thread worker;
    sched.call_soon([&] {
        worker = std::thread([&] {
            for (std::size_t i = 0; i < members.size(); ++i) {
                try {
                    members[i].second();
                } catch (const std::logic_error& e) {
                    caught[i] = e.what();
                }
            }
            sched.call_soon_threadsafe([&] { sched.stop(); });
        });
    });
    auto guard = sched.call_later(60s, [&] { sched.stop(); });
    sched.run_forever();
    worker.join();
    BOOST_REQUIRE(guard.is_pending());  // stopped by the worker
    guard.cancel();

    const std::string made_at = fmt::format("TLS connection made at {}:{}", __FILE__, made_line);
    BOOST_REQUIRE(reports.size() == members.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
        BOOST_TEST_CONTEXT(members[i].first) {
            const std::string expected = fmt::format("{} called from a thread other than the one running its loop ({})",
                                                     members[i].first, made_at);
            BOOST_TEST(caught[i].find(expected) != std::string::npos, caught[i]);
            BOOST_TEST(reports[i].message.find(expected) != std::string::npos, reports[i].message);
            BOOST_TEST(reports[i].origin_known);
            BOOST_TEST(reports[i].origin.line() == made_line);
        }
    }
    BOOST_TEST(sched.stats().wrong_thread_calls == members.size());
    // Nothing was done: open, the same marks and callbacks, nothing sent.
    BOOST_TEST(server->state() == tls::Connection::State::open);
    BOOST_TEST(server->transport().high_water() == 64u * 1024u);
    BOOST_TEST(server->transport().is_reading());
    BOOST_TEST(client_got.empty());
    // From its own thread it works as ever.
    BOOST_TEST(server->write("fine"));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client_got == "fine"; }));
    client->close();
    server.reset();
    client.reset();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server_reason && client_reason; }));
    BOOST_TEST(server_reason->to_string() == "eof");
    sched.run();
    CHECK_EMPTY(sched);
}

// write_eof() or close() asked during the handshake: writes are refused
// from then on; once the handshake is done, the plaintext written before it
// goes, then the handshake callback runs, then our close_notify. After
// write_eof() the echo is read until the peer's close_notify answers ours;
// close() reads nothing more. The closed phase still says where the
// connection got (the handshake done; whether the peer's close_notify came).
BOOST_AUTO_TEST_CASE(an_end_asked_during_the_handshake_moves_through_its_phases) {
    using Phase = tls::Connection::Phase;
    using State = tls::Connection::State;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::TlsEchoServer server(sched, reactor_test::server_context());
    for (const bool write_eof : {true, false}) {
        BOOST_TEST_CONTEXT((write_eof ? "write_eof()" : "close()")) {
            std::optional<Phase> in_handshake_callback, at_echo;
            bool late_write_taken = true;
            Client client(sched, server.address(), reactor_test::client_context(), "localhost", [&](Client& c) {
                in_handshake_callback = c.conn->phase();
                late_write_taken = c.conn->write("late");
            });
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.conn != nullptr; }));
            tls::Connection& conn = *client.conn;
            BOOST_REQUIRE((conn.phase() == Phase::handshaking));  // its ClientHello is out, no answer read yet
            conn.set_data_callback([&](tls::Connection& c, std::string_view d) {
                client.received += d;
                at_echo = c.phase();
            });
            BOOST_TEST(conn.write("hello"));
            if (write_eof) {
                conn.write_eof();
                BOOST_TEST((conn.phase() == Phase::handshaking_then_write_eof));
            } else {
                conn.close();
                BOOST_TEST((conn.phase() == Phase::handshaking_then_close));
            }
            BOOST_TEST((conn.state() == State::handshaking));
            BOOST_TEST(!conn.write("refused"));
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.closed(); }));
            BOOST_TEST((in_handshake_callback ==
                        (write_eof ? Phase::handshaken_then_write_eof : Phase::handshaken_then_close)));
            BOOST_TEST(!late_write_taken);
            BOOST_TEST(conn.handshake_done());
            if (write_eof) {
                BOOST_TEST((at_echo == Phase::write_ended));
                BOOST_TEST(client.received == "hello");
                BOOST_TEST(client.reason->to_string() == "eof");
                BOOST_TEST((conn.phase() == Phase::closed_read_ended));
                BOOST_TEST(conn.at_eof());
            } else {
                BOOST_TEST(!at_echo.has_value());
                BOOST_TEST(client.reason->to_string() == "local");
                BOOST_TEST((conn.phase() == Phase::closed));
                BOOST_TEST(!conn.at_eof());
            }
        }
    }
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.closes.size() == 2u; }));
    BOOST_TEST(server.closes[0].to_string() == "eof");  // its answer was ours to read
    finish(sched, *server.listener);
}

// docs/tls.md's "States" tables are the ones tls::Connection checks: every
// phase is listed with the State it is within (state_of), every edge drawn
// is allowed by may_move and every allowed move is drawn; nothing moves out
// of a closed phase (the close callback ran) or back into the handshake.
BOOST_AUTO_TEST_CASE(the_state_diagram_here_is_the_one_the_code_checks) {
    using Phase = tls::Connection::Phase;
    using State = tls::Connection::State;
    const auto state_name = [](State s) {
        std::string name(tls::to_string(s));
        std::replace(name.begin(), name.end(), ' ', '_');  // "shutting down": the enumerator's name
        return name;
    };
    std::vector<Phase> phases;  // every enumerator: to_string names each
    for (int p = 0; tls::to_string(static_cast<Phase>(p)) != "unknown"; ++p) phases.push_back(static_cast<Phase>(p));
    BOOST_TEST(phases.size() == 14u);
    std::set<std::pair<std::string, std::string>> allowed, within;
    for (Phase from : phases) {
        within.emplace(tls::to_string(from), state_name(tls::Connection::state_of(from)));
        for (Phase to : phases)
            if (from != to && tls::Connection::may_move(from, to))
                allowed.emplace(tls::to_string(from), tls::to_string(to));
    }
    std::ifstream doc(reactor_test::source_dir() / "docs" / "tls.md");
    BOOST_REQUIRE(doc);
    std::set<std::pair<std::string, std::string>> drawn, listed;
    const std::regex edge(R"(^\| `(\w+)` \| `(\w+)` \|)");       // | `from` | `to` | when |
    const std::regex phase(R"(^\| `(\w+)` \| State::(\w+) \|)");  // | `phase` | State::state | what |
    bool in_states = false;
    for (std::string line; std::getline(doc, line);) {
        if (line.starts_with("## ")) in_states = line == "## States";
        std::smatch m;
        if (in_states && std::regex_search(line, m, edge)) drawn.emplace(m[1], m[2]);
        if (in_states && std::regex_search(line, m, phase)) listed.emplace(m[1], m[2]);
    }
    BOOST_TEST(drawn.size() == 29u);
    BOOST_TEST((drawn == allowed));
    BOOST_TEST((listed == within));
    for (Phase from : phases) {
        const State coarse = tls::Connection::state_of(from);
        BOOST_TEST(tls::Connection::may_move(from, from) == (coarse != State::closed), tls::to_string(from));
        for (Phase to : phases) {
            if (from == to || !tls::Connection::may_move(from, to)) continue;
            BOOST_TEST(coarse != State::closed, tls::to_string(from));
            // The coarse State only goes forward: handshaking, open, shutting down, closed.
            BOOST_TEST(coarse <= tls::Connection::state_of(to), tls::to_string(from) << " -> " << tls::to_string(to));
        }
    }
}
