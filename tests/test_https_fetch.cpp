// SPDX-License-Identifier: MIT
// examples/18_https_fetch, run for real against examples/17_https_hello:
// the page fetched over a verified connection (the certificate written to a
// private temporary directory, the CA given with --cafile), a certificate
// from a CA it does not trust refused with OpenSSL's reason, Ctrl-C in the
// middle of a handshake, and its command line. Everything on 127.0.0.1 (the
// name "localhost" is the only one looked up), bounded in time.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include <reactor/tls/certificate_maker.hpp>

#include "support/fds.hpp"
#include "support/net_util.hpp"
#include "support/process.hpp"
#include "support/text_match.hpp"
#include "support/tls_fixtures.hpp"

using namespace std::chrono_literals;
using reactor_test::Child;
using reactor_test::example_path;

namespace {

// The port of https_hello's first line, "listening on 127.0.0.1:PORT (backend)".
std::string wait_for_port(Child& server) {
    auto line = server.read_line(20s);
    BOOST_REQUIRE(line);
    const auto m =
        reactor_test::partial_match_groups(*line, "^listening on 127\\.0\\.0\\.1:([0-9]+) \\((select|poll|epoll)\\)$");
    BOOST_REQUIRE_MESSAGE(m.has_value(), *line);
    return (*m)[1];
}

// https_hello serving `cert` (signed by the test CA, or not), ending after
// `connections` connections.
struct Server {
    reactor_test::TempDir dir;
    std::string ca = dir.write("ca.pem", reactor_test::pki().ca.certificate_pem());
    Child child;
    std::string port;
    Server(const reactor::tls::IssuedCertificate& cert, int connections)
        : child(example_path("https_hello"),
                {"--port", "0", "--exit-after", std::to_string(connections), "--cert",
                 dir.write("chain.pem", cert.certificate_pem), "--key", dir.write("key.pem", cert.key_pem)}),
          port(wait_for_port(child)) {}
};

bool readable(int fd, std::chrono::milliseconds timeout) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
}

}  // namespace

BOOST_AUTO_TEST_CASE(fetches_a_page_from_https_hello_verified_by_the_ca_file) {
    Server server(reactor_test::pki().server, 2);
    for (const std::string host : {"localhost", "127.0.0.1"}) {
        BOOST_TEST_CONTEXT(host) {
            auto r = reactor_test::run_example("https_fetch",
                                               {"--cafile", server.ca, "https://" + host + ":" + server.port + "/page"});
            BOOST_TEST(r.code == 0, r.err);
            BOOST_REQUIRE(r.out.size() == 3u);
            BOOST_TEST(r.out[0] == "connected to 127.0.0.1:" + server.port + " (TLSv1.3, ALPN 'http/1.1')");
            BOOST_TEST(r.out[1] == "HTTP/1.1 200 OK");
            BOOST_TEST(r.out[2] == "body: 16 bytes");  // "Hello over TLS!\n"
            BOOST_TEST(r.err == "");
        }
    }
    const auto lines = reactor_test::lines_of(server.child.read_all(20s));
    BOOST_TEST(server.child.wait(10s) == 0);
    BOOST_REQUIRE(!lines.empty());
    BOOST_TEST(lines.back() == "https_hello: 2 connections, 2 handshakes, 0 failed, 0 aborted");
}

BOOST_AUTO_TEST_CASE(a_certificate_it_cannot_verify_fails_with_openssls_reason) {
    // Signed by a CA that --cafile does not hold.
    Server stranger(reactor_test::pki().stranger, 1);
    auto r = reactor_test::run_example("https_fetch", {"--cafile", stranger.ca, "https://127.0.0.1:" + stranger.port + "/"});
    BOOST_TEST(r.code == 1);
    BOOST_TEST(r.out.empty());
    BOOST_TEST(r.err.starts_with("https_fetch: stream: TLS handshake failed: "), r.err);
    BOOST_TEST(r.err.find("certificate verify failed") != std::string::npos, r.err);
    BOOST_TEST(stranger.child.wait(20s) == 0);
    // A certificate for another name ("alt.test"), from the trusted CA.
    Server alt(reactor_test::pki().alt, 1);
    r = reactor_test::run_example("https_fetch", {"--cafile", alt.ca, "https://localhost:" + alt.port + "/"});
    BOOST_TEST(r.code == 1);
    BOOST_TEST(r.err.find("hostname mismatch") != std::string::npos, r.err);
    BOOST_TEST(alt.child.wait(20s) == 0);
}

BOOST_AUTO_TEST_CASE(ctrl_c_during_the_handshake_stops_it) {
    reactor_test::SilentListener silent;  // accepts by hand and never answers
    reactor_test::TempDir dir;
    const std::string ca = dir.write("ca.pem", reactor_test::pki().ca.certificate_pem());
    Child fetch(example_path("https_fetch"), {"--cafile", ca, "https://127.0.0.1:" + std::to_string(silent.port) + "/"});
    BOOST_REQUIRE(readable(silent.fd, 20s));
    reactor_test::Fd peer(::accept(silent.fd, nullptr, nullptr));
    BOOST_REQUIRE(peer.get() >= 0);
    BOOST_REQUIRE(readable(peer.get(), 20s));  // its ClientHello: the handshake is under way
    ::kill(fetch.pid(), SIGINT);
    BOOST_TEST(fetch.read_all(20s) == "https_fetch: interrupted\n");
    BOOST_TEST(fetch.wait(10s) == 130);
}

BOOST_AUTO_TEST_CASE(its_command_line) {
    auto help = reactor_test::run_example("https_fetch", {"--help"});
    BOOST_TEST(help.code == 0);
    BOOST_TEST(!help.out.empty());
    auto no_ca = reactor_test::run_example("https_fetch", {"https://localhost:1/"});
    BOOST_TEST(no_ca.code == 2);
    BOOST_TEST(no_ca.err.find("--cafile") != std::string::npos, no_ca.err);
    reactor_test::TempDir dir;
    const std::string ca = dir.write("ca.pem", reactor_test::pki().ca.certificate_pem());
    auto plain = reactor_test::run_example("https_fetch", {"--cafile", ca, "http://localhost:1/"});
    BOOST_TEST(plain.code == 2);
    BOOST_TEST(plain.err.find("not an https:// URL: 'http://localhost:1/'") != std::string::npos, plain.err);
}
