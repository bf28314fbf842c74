// SPDX-License-Identifier: MIT
// examples/19_tls_echo, run for real on 127.0.0.1: tls_echo_client against
// tls_echo_server with certificates the test writes to a temporary
// directory (verified conversations, many at once, a large window), a wrong
// server name and an untrusted certificate refused with the reason, the
// self-signed mode with --insecure, --exit-after and --max-seconds, both
// command lines, and Ctrl-C on both. Every wait is bounded.
#include <boost/test/unit_test.hpp>

#include <poll.h>

#include <string>
#include <vector>

#include <reactor/tls/certificate_maker.hpp>

#include "support/net_util.hpp"
#include "support/example_servers.hpp"
#include "support/process.hpp"
#include "support/tls_fixtures.hpp"

using namespace std::chrono_literals;
using reactor_test::Child;
using reactor_test::example_path;

namespace {

struct CertificateFiles {
    reactor_test::TempDir dir;
    std::string ca = dir.write("ca.pem", reactor_test::pki().ca.certificate_pem());
    std::string chain = dir.write("chain.pem", reactor_test::pki().server.certificate_pem);
    std::string key = dir.write("key.pem", reactor_test::pki().server.key_pem);
    std::string stranger_ca = dir.write("stranger.pem", reactor_test::pki().stranger_ca.certificate_pem());
};

reactor_test::Run client(std::uint16_t port, std::vector<std::string> args) {
    args.insert(args.begin(), {"--port", std::to_string(port), "--max-seconds", "60"});
    return reactor_test::run_example("tls_echo_client", args);
}

}  // namespace

BOOST_AUTO_TEST_CASE(verified_conversations_and_refused_certificates) {
    CertificateFiles files;
    Child server(example_path("tls_echo_server"),
                 {"--port", "0", "--max-seconds", "60", "--cert", files.chain, "--key", files.key, "--exit-after", "14"});
    const std::uint16_t port = reactor_test::listening_port(server);
    // 10 connections x 200 messages, 8 in flight each, up to 64 KiB: the
    // water marks at work on both sides.
    auto ok = client(port, {"--cafile", files.ca, "--connections", "10", "--messages", "200", "--window", "8",
                            "--size", "65536"});
    BOOST_TEST(ok.code == 0, ok.err);
    BOOST_REQUIRE(ok.out.size() == 1u);
    BOOST_TEST(ok.out[0].starts_with("tls_echo_client: 10 connections x 200 messages to 127.0.0.1:" +
                                     std::to_string(port) + " (TLSv1.3, verified as 'localhost'): OK (0 failed), "),
               ok.out[0]);
    // A name the certificate does not carry, and a CA that did not sign it.
    auto wrong_name = client(port, {"--cafile", files.ca, "--server-name", "wrong.test", "--connections", "1"});
    BOOST_TEST(wrong_name.code == 1);
    BOOST_TEST(wrong_name.err.find("certificate verify failed: hostname mismatch") != std::string::npos,
               wrong_name.err);
    auto untrusted = client(port, {"--cafile", files.stranger_ca, "--connections", "1"});
    BOOST_TEST(untrusted.code == 1);
    BOOST_TEST(untrusted.err.find("certificate verify failed") != std::string::npos, untrusted.err);
    // The server serves on after the failures.
    auto again = client(port, {"--cafile", files.ca, "--connections", "2", "--messages", "5"});
    BOOST_TEST(again.code == 0, again.err);
    const auto lines = reactor_test::lines_of(server.read_all(20s));
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_REQUIRE(lines.size() == 3u);  // the two failures, then the summary
    BOOST_TEST(lines[0].find("handshake failed: ") != std::string::npos, lines[0]);
    BOOST_TEST(lines[2].starts_with("tls_echo_server: 14 connections, 12 handshakes, 2 failed, "), lines[2]);
    BOOST_TEST(lines[2].ends_with(" bytes echoed, 0 aborted"), lines[2]);
}

BOOST_AUTO_TEST_CASE(self_signed_server_and_an_insecure_client) {
    Child server(example_path("tls_echo_server"), {"--port", "0", "--max-seconds", "60", "--exit-after", "2"});
    const std::uint16_t port = reactor_test::listening_port(server);
    auto notice = server.read_line(20s);
    BOOST_REQUIRE(notice);
    BOOST_TEST(notice->find("self-signed certificate") != std::string::npos, *notice);
    auto insecure = client(port, {"--insecure", "--connections", "1", "--messages", "3"});
    BOOST_TEST(insecure.code == 0, insecure.err);
    BOOST_REQUIRE(insecure.out.size() == 1u);
    BOOST_TEST(insecure.out[0].find("(TLSv1.3, not verified): OK") != std::string::npos, insecure.out[0]);
    // Verifying against the system's trust store: a self-signed certificate is refused.
    auto verifying = client(port, {"--connections", "1"});
    BOOST_TEST(verifying.code == 1);
    BOOST_TEST(verifying.err.find("certificate verify failed") != std::string::npos, verifying.err);
    const auto lines = reactor_test::lines_of(server.read_all(20s));
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_REQUIRE(!lines.empty());
    BOOST_TEST(lines.back().starts_with("tls_echo_server: 2 connections, 1 handshakes, 1 failed, "), lines.back());
}

BOOST_AUTO_TEST_CASE(the_server_ends_on_its_own_and_on_ctrl_c) {
    auto timed = reactor_test::run_example("tls_echo_server", {"--port", "0", "--max-seconds", "0.2"});
    BOOST_TEST(timed.code == 0, timed.err);
    BOOST_REQUIRE(!timed.out.empty());
    BOOST_TEST(timed.out.back() == "tls_echo_server: 0 connections, 0 handshakes, 0 failed, 0 bytes echoed, 0 aborted");
    auto r = reactor_test::interrupt_after_first_line("tls_echo_server", {"--port", "0"});
    BOOST_TEST(r.code == 0, r.err);
    BOOST_REQUIRE(r.out.size() >= 2u);
    BOOST_TEST(r.out[r.out.size() - 2] ==
               "tls_echo_server: SIGINT: stopped accepting; draining 0 connection(s) for up to 5s");
    BOOST_TEST(r.out.back() == "tls_echo_server: 0 connections, 0 handshakes, 0 failed, 0 bytes echoed, 0 aborted");
}

// The client on Ctrl-C, stuck in a handshake with a server that never
// answers: its summary, marked interrupted, and exit 130.
BOOST_AUTO_TEST_CASE(the_client_on_ctrl_c_prints_its_summary_marked_interrupted) {
    reactor_test::SilentListener server;
    Child c(example_path("tls_echo_client"),
            {"--port", std::to_string(server.port), "--insecure", "--connections", "1", "--max-seconds", "60"});
    pollfd p{server.fd, POLLIN, 0};
    BOOST_REQUIRE(::poll(&p, 1, 10000) == 1);
    int silent = ::accept(server.fd, nullptr, nullptr);
    BOOST_REQUIRE(silent >= 0);
    BOOST_REQUIRE(::kill(c.pid(), SIGINT) == 0);
    std::string out = c.read_all(20s);
    const std::string err = c.read_stderr(5s);
    BOOST_TEST(c.wait(10s) == 130, err);
    ::close(silent);
    BOOST_TEST(out.starts_with("tls_echo_client: 1 connections x 100 messages to "), out);
    BOOST_TEST(out.find("(no handshake, not verified): FAILED (") != std::string::npos, out);
    BOOST_TEST(out.find(", interrupted)") != std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(their_command_lines) {
    for (const char* name : {"tls_echo_server", "tls_echo_client"}) {
        auto help = reactor_test::run_example(name, {"--help"});
        BOOST_TEST(help.code == 0, name);
        BOOST_TEST(help.out.size() > 5u, name);
    }
    CertificateFiles files;
    auto alone = reactor_test::run_example("tls_echo_server", {"--cert", files.chain});
    BOOST_TEST(alone.code == 2);
    BOOST_TEST(alone.err.find("--cert and --key go together") != std::string::npos, alone.err);
    const std::string junk = files.dir.write("junk.pem", "junk\n");
    auto bad = reactor_test::run_example("tls_echo_server", {"--port", "0", "--cert", files.chain, "--key", junk});
    BOOST_TEST(bad.code == 1);
    BOOST_TEST(bad.err.find("tls_echo_server: reactor::tls: cannot use the server private key file '" + junk + "'") !=
                   std::string::npos,
               bad.err);
    auto both = reactor_test::run_example("tls_echo_client", {"--insecure", "--cafile", files.ca});
    BOOST_TEST(both.code == 2);
    BOOST_TEST(both.err.find("--insecure and --cafile contradict each other") != std::string::npos, both.err);
    auto bad_ca = reactor_test::run_example("tls_echo_client", {"--cafile", junk});
    BOOST_TEST(bad_ca.code == 1);
    BOOST_TEST(bad_ca.err.find(junk) != std::string::npos, bad_ca.err);
    auto nan = reactor_test::run_example("tls_echo_server", {"--handshake-timeout", "nan"});
    BOOST_TEST(nan.code == 2);
    BOOST_TEST(nan.err.find("--handshake-timeout") != std::string::npos, nan.err);
}
