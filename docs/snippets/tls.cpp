// SPDX-License-Identifier: MIT
// docs/tls.md: a TLS server and a verifying client, a line server over TLS
// (reactor::tls::LineReader), a protocol of one's own over TLS and the
// connection's end(), STARTTLS, ALPN and SNI, the close reasons of failures,
// certificates made for tests, and streams over TLS (reactor::futures_tls).
// Loopback only; every case ends by itself.
// (Built only with reactor::tls.)
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/tls/stream.hpp>
#include <reactor/loop_group.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/group_listener.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/net/transport.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/tls/certificate_maker.hpp>
#include <reactor/tls/connection.hpp>
#include <reactor/tls/context.hpp>
#include <reactor/tls/listen.hpp>
#include <reactor/tls/readers.hpp>

using namespace std::chrono_literals;

namespace {

// The certificates of every case: made once, in memory.
struct Certificates {
    // [snippet:make_certificates]
    reactor::tls::CertificateAuthority ca;  // a throwaway CA, in memory
    reactor::tls::IssuedCertificate server = ca.issue_server({"localhost", "127.0.0.1"});
    reactor::tls::IssuedCertificate alt = ca.issue_server({"alt.test"});
    reactor::tls::IssuedCertificate client = ca.issue_client("a client");
    // [end-snippet:make_certificates]
};

const Certificates& certificates() {
    static const Certificates made;
    return made;
}

reactor::tls::ContextPtr client_context() {
    reactor::tls::ClientOptions options;
    options.trust = certificates().ca.trust();
    return reactor::tls::Context::client(options);
}

// Runs the loop until `done`, at most 20 s.
template <class Pred>
bool run_until(reactor::Scheduler& sched, Pred done) {
    bool expired = false;
    auto guard = sched.call_later(20s, [&] { expired = true; });
    while (!done() && !expired) sched.run_once();
    guard.cancel();
    return done();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tls_md)

BOOST_AUTO_TEST_CASE(server_and_verifying_client) {
    reactor::Scheduler sched;
    const reactor::Address address = reactor::Address::parse("127.0.0.1", 0);
    const std::string chain_pem = certificates().server.certificate_pem, key_pem = certificates().server.key_pem;
    // [snippet:server]
    reactor::tls::ServerOptions options;
    options.identity = reactor::tls::Identity::from_pem(chain_pem, key_pem);  // or from_files(chain, key)
    auto context = reactor::tls::Context::server(options);
    auto listener = reactor::tls::listen(sched, address, context, [](const reactor::tls::ConnectionPtr& c) {
        c->set_data_callback([](reactor::tls::Connection& c, std::string_view data) { c.write(data); });
        c->set_high_water_callback([](reactor::tls::Connection& c) { c.pause_reading(); });
        c->set_low_water_callback([](reactor::tls::Connection& c) { c.resume_reading(); });
    });
    // [end-snippet:server]
    const reactor::Address server_address = listener->address();
    const std::string ca_pem = certificates().ca.certificate_pem();
    std::string got, subject;
    std::optional<reactor::End> closed;
    // [snippet:client]
    reactor::tls::ClientOptions client_options;
    client_options.trust.ca_pem = ca_pem;  // or .ca_file; neither: the system's trust store
    auto client_context = reactor::tls::Context::client(client_options);
    // Connects to the address, expects a certificate for "localhost" there (never looked up).
    reactor::tls::connect(sched, server_address, client_context, "localhost",
                          [&](reactor::tls::ConnectionPtr c, std::error_code error) {
                              if (error) return;  // the TCP connect failed
                              c->set_handshake_callback([&](reactor::tls::Connection& c) {
                                  subject = c.peer_subject();  // "CN=localhost,O=reactor test"
                                  c.write("hello");
                              });
                              c->set_data_callback([&](reactor::tls::Connection& c, std::string_view data) {
                                  got += data;
                                  c.close();  // close_notify, then the TCP close
                              });
                              c->set_close_callback([&](reactor::tls::Connection&, const reactor::End& why) {
                                  closed = why;  // why.to_string() == "local"
                              });
                          });
    // [end-snippet:client]
    BOOST_REQUIRE(run_until(sched, [&] { return closed.has_value(); }));
    BOOST_TEST(got == "hello");
    BOOST_TEST(subject == "CN=localhost,O=reactor test");
    BOOST_TEST(closed->to_string() == "local");
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(lines_over_tls) {
    reactor::Scheduler sched;
    const reactor::Address address = reactor::Address::parse("127.0.0.1", 0);
    reactor::tls::ServerOptions options;
    options.identity = certificates().server.identity();
    auto context = reactor::tls::Context::server(options);
    std::vector<reactor::End> reasons;
    // [snippet:line_reader]
    auto listener = reactor::tls::listen(sched, address, context, [&](const reactor::tls::ConnectionPtr& c) {
        reactor::tls::LineReader::attach(
            c,
            [](reactor::tls::Connection& c, std::string_view line) {  // decrypted: "hello", without its end
                if (line == "quit") return c.close();
                c.write(fmt::format("Got: {}\n", line));
            },
            {.max_length = 1024});  // a longer line: close_notify, and EndKind::line_too_long
        c->set_close_callback([&](reactor::tls::Connection&, const reactor::End& why) { reasons.push_back(why); });
    });
    // [end-snippet:line_reader]
    // Two clients: one says two lines, the second of them "quit"; the other
    // sends a line too long.
    std::vector<std::string> got(2);
    std::vector<reactor::End> client_ends;
    const std::vector<std::string> sent = {"hello\r\nquit\n", std::string(2000, 'x')};
    for (std::size_t i = 0; i < sent.size(); ++i) {
        reactor::tls::connect(sched, listener->address(), client_context(), "localhost",
                              [&, i](reactor::tls::ConnectionPtr c, std::error_code error) {
                                  if (error) return listener->close();
                                  c->write(sent[i]);  // sent once the handshake is done
                                  c->set_data_callback([&, i](reactor::tls::Connection&, std::string_view data) {
                                      got[i] += data;
                                  });
                                  c->set_close_callback([&](reactor::tls::Connection&, const reactor::End& why) {
                                      client_ends.push_back(why);
                                  });
                              });
        BOOST_REQUIRE(run_until(sched, [&] { return client_ends.size() == i + 1 && reasons.size() == i + 1; }));
    }
    BOOST_TEST(got[0] == "Got: hello\n");
    BOOST_TEST(reasons[0].to_string() == "local");  // "quit"
    BOOST_TEST(got[1] == "");
    BOOST_TEST(reasons[1].to_string() == "line too long");
    BOOST_TEST(client_ends[0].to_string() == "eof");  // the server's close_notify, both times
    BOOST_TEST(client_ends[1].to_string() == "eof");
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

// [snippet:tls_protocol]
// Told the decrypted bytes and the end; it outlives the connections it is
// set on (a local of the test), so it needs to hold nothing.
struct Collect final : reactor::Protocol {
    std::string got;
    std::optional<reactor::End> end;
    void on_data(std::string_view plaintext) override { got += plaintext; }
    void on_closed(const reactor::End& why) override { end = why; }
};
// [end-snippet:tls_protocol]

BOOST_AUTO_TEST_CASE(a_protocol_over_tls) {
    reactor::Scheduler sched;
    reactor::tls::ServerOptions options;
    options.identity = certificates().server.identity();
    auto context = reactor::tls::Context::server(options);
    Collect collect;
    // [snippet:tls_protocol_set]
    reactor::tls::ConnectionPtr kept;  // only to read end() afterwards: an open one holds itself
    auto listener = reactor::tls::listen(sched, reactor::Address::parse("127.0.0.1", 0), context,
                                         [&](const reactor::tls::ConnectionPtr& c) {
                                             kept = c;
                                             c->set_protocol(&collect);  // in place of callbacks
                                         });
    // [end-snippet:tls_protocol_set]
    // A client that says "hello" once its handshake is done, then closes
    // (close_notify, then the TCP close).
    std::optional<reactor::End> client_end;
    reactor::tls::connect(sched, listener->address(), client_context(), "localhost",
                          [&](reactor::tls::ConnectionPtr c, std::error_code error) {
                              if (error) return listener->close();
                              c->set_handshake_callback([](reactor::tls::Connection& c) {
                                  c.write("hello");
                                  c.close();
                              });
                              c->set_close_callback(
                                  [&](reactor::tls::Connection&, const reactor::End& why) { client_end = why; });
                          });
    BOOST_REQUIRE(run_until(sched, [&] { return client_end.has_value() && collect.end.has_value(); }));
    BOOST_TEST(collect.got == "hello");
    BOOST_TEST(collect.end->to_string() == "eof");  // the client's close_notify
    BOOST_REQUIRE(kept != nullptr);
    BOOST_REQUIRE(kept->end() != nullptr);
    BOOST_TEST(kept->end()->to_string() == "eof");  // what its protocol was told
    listener->close();
    sched.run();
    BOOST_TEST(kept.use_count() == 1);  // closed, it let itself go: only ours is left
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(a_server_on_every_loop_of_a_group) {
    reactor::tls::ServerOptions options;
    options.identity = certificates().server.identity();
    auto context = reactor::tls::Context::server(options);
    // [snippet:on_loops]
    reactor::LoopGroupOptions group_options;
    group_options.loops = 2;  // 0: one per CPU
    reactor::LoopGroup group(group_options);
    auto server = reactor::tls::listen(group, reactor::Address::parse("127.0.0.1", 0), context,
                                       [](const reactor::tls::ConnectionPtr& c, std::size_t /*loop*/) {
                                           c->set_data_callback([](reactor::tls::Connection& c, std::string_view data) {
                                               c.write(data);  // on the connection's own loop
                                           });
                                       });
    group.start();  // before: listen; after: the loops serve on their threads
    // [end-snippet:on_loops]
    reactor::Scheduler sched;
    std::string got;
    std::optional<reactor::End> closed;
    reactor::tls::connect(sched, server->address(), client_context(), "localhost",
                          [&](reactor::tls::ConnectionPtr c, std::error_code error) {
                              if (error) return;
                              c->set_handshake_callback([](reactor::tls::Connection& c) { c.write("hello"); });
                              c->set_data_callback([&](reactor::tls::Connection& c, std::string_view data) {
                                  got += data;
                                  c.close();
                              });
                              c->set_close_callback(
                                  [&](reactor::tls::Connection&, const reactor::End& why) { closed = why; });
                          });
    BOOST_REQUIRE(run_until(sched, [&] { return closed.has_value(); }));
    BOOST_TEST(got == "hello");
    server->close();
    group.stop();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(a_wrong_host_name_is_a_handshake_failure) {
    reactor::Scheduler sched;
    reactor::tls::ServerOptions options;
    options.identity = certificates().server.identity();
    auto listener = reactor::tls::listen(sched, reactor::Address::parse("127.0.0.1", 0),
                                         reactor::tls::Context::server(options), {});
    std::optional<reactor::End> closed;
    reactor::tls::connect(sched, listener->address(), client_context(), "wrong.test",
                          [&](reactor::tls::ConnectionPtr c, std::error_code) {
                              c->set_close_callback([&](reactor::tls::Connection&, const reactor::End& why) {
                                  // [snippet:handshake_failed]
                                  if (why.kind == reactor::EndKind::handshake_failed) {
                                      // why.detail: "error:0A000086:SSL routines::certificate verify failed: hostname mismatch"
                                  }
                                  // [end-snippet:handshake_failed]
                                  closed = why;
                              });
                          });
    BOOST_REQUIRE(run_until(sched, [&] { return closed.has_value(); }));
    BOOST_TEST((closed->kind == reactor::EndKind::handshake_failed));
    BOOST_TEST(closed->detail == "error:0A000086:SSL routines::certificate verify failed: hostname mismatch");
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(starttls) {
    reactor::Scheduler sched;
    reactor::tls::ServerOptions options;
    options.identity = certificates().server.identity();
    auto server_context = reactor::tls::Context::server(options);
    std::optional<reactor::End> server_closed;
    auto listener = reactor::Listener::listen(
        sched, reactor::Address::parse("127.0.0.1", 0), [&](const reactor::ConnectionPtr& conn) {
            // [snippet:starttls_server]
            conn->set_data_callback([&](reactor::Connection& plain, std::string_view line) {
                if (line != "STARTTLS\r\n") return plain.close();
                plain.write("OK\r\n");  // the last plaintext; then the handshake, on the same socket
                auto secure = reactor::tls::Connection::start_server(plain.shared_from_this(), server_context);
                secure->set_data_callback([](reactor::tls::Connection& s, std::string_view d) { s.write(d); });
                // [end-snippet:starttls_server]
                secure->set_close_callback(
                    [&](reactor::tls::Connection&, const reactor::End& why) { server_closed = why; });
            });
        });
    std::string echoed;
    reactor::connect(sched, listener->address(), [&](reactor::ConnectionPtr conn, std::error_code error) {
        BOOST_REQUIRE(!error);
        conn->set_data_callback([&](reactor::Connection& plain, std::string_view answer) {
            BOOST_REQUIRE(answer == "OK\r\n");
            auto secure = reactor::tls::Connection::start_client(plain.shared_from_this(), client_context(), "localhost");
            secure->set_handshake_callback([](reactor::tls::Connection& s) { s.write("secret"); });
            secure->set_data_callback([&](reactor::tls::Connection& s, std::string_view d) {
                echoed += d;
                s.close();
            });
        });
        conn->write("STARTTLS\r\n");
    });
    BOOST_REQUIRE(run_until(sched, [&] { return server_closed.has_value(); }));
    BOOST_TEST(echoed == "secret");
    BOOST_TEST(server_closed->to_string() == "eof");
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(alpn_and_sni) {
    reactor::Scheduler sched;
    const auto& certs = certificates();
    // [snippet:alpn_sni]
    reactor::tls::ServerOptions main_options, alt_options;
    main_options.identity = certs.server.identity();  // for "localhost", and clients that send no name
    main_options.alpn = {"h2", "http/1.1"};           // the server's preference decides
    alt_options.identity = certs.alt.identity();
    alt_options.alpn = main_options.alpn;
    auto server_context = reactor::tls::Context::server(main_options);
    server_context->add_server_name("alt.test", reactor::tls::Context::server(alt_options));

    reactor::tls::ClientOptions client_options;
    client_options.trust = certs.ca.trust();
    client_options.alpn = {"http/1.1"};  // offered
    // [end-snippet:alpn_sni]
    auto listener = reactor::tls::listen(sched, reactor::Address::parse("127.0.0.1", 0), server_context, {});
    std::string alpn, subject;
    bool closed = false;
    reactor::tls::connect(sched, listener->address(), reactor::tls::Context::client(client_options), "alt.test",
                          [&](reactor::tls::ConnectionPtr c, std::error_code) {
                              c->set_handshake_callback([&](reactor::tls::Connection& c) {
                                  alpn = c.alpn_protocol();
                                  subject = c.peer_subject();
                                  c.close();
                              });
                              c->set_close_callback(
                                  [&](reactor::tls::Connection&, const reactor::End&) { closed = true; });
                          });
    BOOST_REQUIRE(run_until(sched, [&] { return closed; }));
    BOOST_TEST(alpn == "http/1.1");
    BOOST_TEST(subject == "CN=alt.test,O=reactor test");
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tls_md_streams)

BOOST_AUTO_TEST_CASE(streams_over_tls) {
    reactor::Scheduler sched;
    reactor::tls::ServerOptions server_options;
    server_options.identity = certificates().server.identity();
    const reactor::tls::ContextPtr server_context = reactor::tls::Context::server(server_options);
    const reactor::Address address = reactor::Address::loopback_v4(0);
    // [snippet:stream_server]
    futures::StreamServer server = futures::start_server(
        sched, address,
        [](futures::Stream stream) {  // called once the client's handshake is done
            return stream.read_until("\n").then([stream](std::string line) mutable {
                stream.write("you said: " + line);
                return stream.drain();
            });
        },
        futures::StreamOptions{}, server_context);  // asyncio's ssl=
    // [end-snippet:stream_server]
    // [snippet:stream_client]
    futures::Stream stream = futures::run_until_complete(
        sched, futures::open_connection(sched, server.address(), client_context(), "localhost"));
    // Here the handshake is done and the server verified.
    stream.write("hello\n");
    std::string answer = futures::run_until_complete(sched, stream.read_until("\n"));  // "you said: hello\n"
    std::string version = stream.tls()->protocol_version();                          // "TLSv1.3"
    // [end-snippet:stream_client]
    BOOST_TEST(answer == "you said: hello\n");
    BOOST_TEST(version == "TLSv1.3");
    // The server's conversation is over: it closed with close_notify, a clean EOF.
    BOOST_TEST(futures::run_until_complete(sched, stream.read()) == "");
    std::string what;
    std::optional<reactor::EndKind> kind;
    // [snippet:stream_errors]
    try {
        // A certificate for "localhost" where "alt.test" was expected.
        futures::run_until_complete(sched,
                                    futures::open_connection(sched, server.address(), client_context(), "alt.test"));
    } catch (const futures::StreamError& e) {  // a std::system_error (EPROTO)
        what = e.what();  // "stream: TLS handshake failed: error:0A000086:SSL routines::certificate verify failed..."
        kind = e.end.kind;  // reactor::EndKind::handshake_failed; e.end.detail: OpenSSL's text
    }
    // [end-snippet:stream_errors]
    BOOST_TEST(what.starts_with("stream: TLS handshake failed: error:0A000086:SSL routines::certificate verify failed"),
               what);
    BOOST_TEST((kind == reactor::EndKind::handshake_failed));
    server.close();
    stream.close();
    futures::run_until_complete(sched, stream.wait_closed());
    stream = {};
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(stream_starttls) {
    reactor::Scheduler sched;
    reactor::tls::ServerOptions server_options;
    server_options.identity = certificates().server.identity();
    const reactor::tls::ContextPtr server_context = reactor::tls::Context::server(server_options);
    // A plaintext server that upgrades when asked.
    futures::StreamServer server = futures::start_server(
        sched, reactor::Address::loopback_v4(0), [server_context](futures::Stream stream) {
            // [snippet:stream_starttls_server]
            return stream.read_until("\n")
                .then([stream, server_context](std::string command) mutable {
                    if (command != "STARTTLS\n") throw std::runtime_error("expected STARTTLS");
                    stream.write("220 go ahead\n");  // the last plaintext, then the handshake
                    return futures::start_tls(stream, server_context);
                })
                .then([stream]() mutable { return stream.read_until("\n"); })  // decrypted
                .then([stream](std::string line) mutable {
                    stream.write(line);
                    return stream.drain();
                });
            // [end-snippet:stream_starttls_server]
        });
    futures::Stream stream = futures::run_until_complete(sched, futures::open_connection(sched, server.address()));
    // [snippet:stream_starttls_client]
    stream.write("STARTTLS\n");
    std::string go = futures::run_until_complete(sched, stream.read_until("\n"));  // "220 go ahead\n"
    futures::run_until_complete(sched, futures::start_tls(stream, client_context(), "localhost"));
    stream.write("now encrypted\n");
    // [end-snippet:stream_starttls_client]
    BOOST_TEST(go == "220 go ahead\n");
    BOOST_TEST(futures::run_until_complete(sched, stream.read_until("\n")) == "now encrypted\n");
    BOOST_TEST(stream.tls() != nullptr);
    server.close();
    stream.close();
    futures::run_until_complete(sched, stream.wait_closed());
    stream = {};
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_SUITE_END()
