// SPDX-License-Identifier: MIT
// reactor::tls against real TLS programs that are not ours, over 127.0.0.1,
// on every selector backend: the library's client against `openssl
// s_server`, `openssl s_client` against the library's server (TLS 1.2 and
// 1.3, ALPN, a resumed session), and `curl` fetching a page from a tiny
// HTTPS server. The programs are spawned by the case, bounded in time and
// killed at its end; a case whose program is missing is skipped with the
// reason printed. The certificates are made in memory and written to a
// private temporary directory for the programs.
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

#include <reactor/tls/connection.hpp>
#include <reactor/tls/listen.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/net_util.hpp"
#include "support/outside_program.hpp"
#include "support/text_match.hpp"
#include "support/tls_fixtures.hpp"

using namespace std::chrono_literals;
namespace tls = reactor::tls;
using reactor_test::needs_program;
using reactor_test::on;
using reactor_test::OutsideProgram;
using reactor_test::pki;

namespace {

// The certificates, as files for the programs.
struct Files {
    reactor_test::TempDir dir;
    std::string ca = dir.write("ca.pem", pki().ca.certificate_pem());
    std::string chain = dir.write("server-chain.pem", pki().server.certificate_pem);
    std::string key = dir.write("server-key.pem", pki().server.key_pem);
    std::string session = (dir.path / "session.pem").string();
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(our_client_against_openssl_s_server_tls_1_3_and_1_2_with_alpn, *needs_program("openssl")) {
    Files files;
    for (std::string version : {"-tls1_3", "-tls1_2"}) {
        BOOST_TEST_CONTEXT(version) {
            reactor::Scheduler sched(on(reactor_test::backend_under_test()));
            OutsideProgram server(sched, "openssl",
                                  {"s_server", "-accept", "127.0.0.1:0", "-naccept", "1", "-cert", files.chain, "-key",
                                   files.key, "-alpn", "http/1.1", version});
            std::optional<reactor_test::MatchGroups> port;
            BOOST_REQUIRE(reactor_test::run_until(
                sched,
                [&] {
                    port = reactor_test::partial_match_groups(server.output(), "ACCEPT 127\\.0\\.0\\.1:([0-9]+)");
                    return port.has_value();
                },
                20s));
            auto options = reactor_test::client_options();
            options.alpn = {"h2", "http/1.1"};
            std::string received;
            std::optional<reactor::End> reason;
            tls::ConnectionPtr client;
            tls::connect(sched, reactor::Address::loopback_v4(static_cast<std::uint16_t>(std::stoi((*port)[1]))),
                         tls::Context::client(options), "localhost", [&](tls::ConnectionPtr c, std::error_code ec) {
                             BOOST_REQUIRE(!ec);
                             client = c;
                             c->set_handshake_callback([](tls::Connection& c) { c.write("hello from reactor\n"); });
                             c->set_data_callback([&](tls::Connection&, std::string_view d) { received += d; });
                             c->set_close_callback([&](tls::Connection&, const reactor::End& r) { reason = r; });
                         });
            // s_server prints what it receives, and sends what it reads on stdin.
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return contains(server.output(), "hello from reactor"); }, 20s));
            server.write_stdin("hello from s_server\n");
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return received == "hello from s_server\n"; }, 20s));
            BOOST_TEST(client->alpn_protocol() == "http/1.1");
            BOOST_TEST(client->protocol_version() == (version == "-tls1_3" ? "TLSv1.3" : "TLSv1.2"));
            BOOST_TEST(client->verify_result() == 0);
            client->close();  // close_notify: s_server ends its only connection and exits
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return reason && server.output_closed(); }, 20s));
            BOOST_TEST(reason->to_string() == "local");
            BOOST_TEST(server.wait(10s) == 0, server.output());
            sched.run();
            CHECK_EMPTY(sched);
        }
    }
}

BOOST_AUTO_TEST_CASE(openssl_s_client_against_our_server_verifies_and_resumes, *needs_program("openssl")) {
    Files files;
    for (std::string version : {"-tls1_3", "-tls1_2"}) {
        BOOST_TEST_CONTEXT(version) {
            reactor::Scheduler sched(on(reactor_test::backend_under_test()));
            auto options = reactor_test::server_options();
            options.alpn = {"http/1.1"};
            reactor_test::TlsEchoServer server(sched, tls::Context::server(options));
            for (int round = 0; round < 2; ++round) {
                const std::size_t closes_before = server.closes.size();
                std::vector<std::string> args{"s_client", "-connect", "127.0.0.1:" + std::to_string(server.port()),
                                              "-servername", "localhost", "-CAfile", files.ca, "-verify_return_error",
                                              "-alpn", "http/1.1", version, "-quiet", "-no_ign_eof"};
                args.insert(args.end(), {round == 0 ? "-sess_out" : "-sess_in", files.session});
                OutsideProgram client(sched, "openssl", args);
                client.write_stdin("ping from s_client\n");
                BOOST_REQUIRE(reactor_test::run_until(
                    sched, [&] { return contains(client.output(), "ping from s_client"); }, 20s));
                // EOF on its stdin: s_client sends close_notify and exits.
                client.close_stdin();
                BOOST_REQUIRE(reactor_test::run_until(
                    sched, [&] { return client.output_closed() && server.closes.size() == closes_before + 1; }, 20s));
                BOOST_TEST(client.wait(10s) == 0, client.output());
                BOOST_TEST(server.closes.back().to_string() == "eof");
                const auto& side = server.handshaken.back();
                BOOST_TEST(side->alpn_protocol() == "http/1.1");
                BOOST_TEST(side->server_name() == "localhost");
                BOOST_TEST(side->protocol_version() == (version == "-tls1_3" ? "TLSv1.3" : "TLSv1.2"));
                BOOST_TEST(side->session_reused() == (round == 1));  // the second run offered the saved session
            }
            server.listener->close();
            sched.run();
            CHECK_EMPTY(sched);
        }
    }
}

BOOST_AUTO_TEST_CASE(curl_fetches_a_page_from_a_tiny_https_server, *needs_program("curl")) {
    Files files;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto options = reactor_test::server_options();
    options.alpn = {"http/1.1"};  // curl offers h2 too: the server's list decides
    std::vector<tls::ConnectionPtr> served;
    std::vector<reactor::End> closes;
    auto listener = tls::listen(sched, reactor_test::any_loopback(), tls::Context::server(options),
                                [&](const tls::ConnectionPtr& c) {
                                    auto request = std::make_shared<std::string>();
                                    c->set_data_callback([request](tls::Connection& c, std::string_view d) {
                                        *request += d;
                                        if (!contains(*request, "\r\n\r\n")) return;
                                        c.write("HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\n"
                                                "hello over TLS\n");
                                        c.close();
                                    });
                                    c->set_handshake_callback([&](tls::Connection& c) { served.push_back(c.shared_from_this()); });
                                    c->set_close_callback([&](tls::Connection&, const reactor::End& r) { closes.push_back(r); });
                                });
    const std::string url = "https://127.0.0.1:" + std::to_string(listener->address().port()) + "/hello";
    struct Case {
        std::vector<std::string> extra;
        std::string version;
    };
    for (const Case& c : std::vector<Case>{{{}, "TLSv1.3"}, {{"--tls-max", "1.2"}, "TLSv1.2"}}) {
        BOOST_TEST_CONTEXT(c.version) {
            std::vector<std::string> args{"-sS", "--noproxy", "*", "--max-time", "20", "--cacert", files.ca};
            args.insert(args.end(), c.extra.begin(), c.extra.end());
            args.push_back(url);
            OutsideProgram curl(sched, "curl", args);
            const std::size_t closes_before = closes.size();
            BOOST_REQUIRE(reactor_test::run_until(
                sched, [&] { return curl.output_closed() && closes.size() == closes_before + 1; }, 30s));
            BOOST_TEST(curl.wait(10s) == 0, curl.output());
            BOOST_TEST(curl.output() == "hello over TLS\n");
            BOOST_TEST(served.back()->alpn_protocol() == "http/1.1");
            BOOST_TEST(served.back()->protocol_version() == c.version);
            BOOST_TEST(closes.back().kind != reactor::EndKind::handshake_failed, closes.back().to_string());
        }
    }
    listener->close();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(renegotiation_is_refused, *needs_program("openssl")) {
    Files files;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::TlsEchoServer server(sched, reactor_test::server_context());
    OutsideProgram client(sched, "openssl",
                          {"s_client", "-connect", "127.0.0.1:" + std::to_string(server.port()), "-servername",
                           "localhost", "-CAfile", files.ca, "-tls1_2", "-quiet", "-no_ign_eof"});
    client.write_stdin("before\n");
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return contains(client.output(), "before"); }, 20s));
    client.write_stdin("R\n");  // s_client's command: renegotiate (TLS 1.2)
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.output_closed() && server.open == 0; }, 20s));
    BOOST_TEST(client.wait(10s) != 0);
    BOOST_TEST(contains(client.output(), "no renegotiation"), client.output());  // our refusal, as s_client read it
    BOOST_REQUIRE(server.closes.size() == 1u);
    BOOST_TEST(server.closes[0].kind != reactor::EndKind::local, server.closes[0].to_string());
    server.listener->close();
    sched.run();
    CHECK_EMPTY(sched);
}
