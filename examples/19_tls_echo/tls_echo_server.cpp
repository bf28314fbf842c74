// SPDX-License-Identifier: MIT
// tls_echo_server: the callback echo server of step 09 over TLS. Every byte
// a client sends comes back unchanged, in order, encrypted.
//
// Step 19 of the series (examples/README.md). New here: a TLS server in the
// callback layer whose flow control is the plain one's: the water marks of a
// tls::Connection count ciphertext the kernel has not taken, so a client
// that sends without reading makes us stop reading from it (pause_reading:
// the peer is held back by TCP) until its echoes drain, and memory stays
// bounded. The certificate comes from --cert/--key (PEM files); without
// them, a self-signed one is made in memory for localhost, 127.0.0.1 and ::1
// (its client must then skip verification: tls_echo_client --insecure).
// --handshake-timeout lets go of clients that never finish their handshake;
// --idle-timeout (default 300 s) of those that stop making progress.
// --max-connections (default: the fd limit less 64) bounds the connections
// open at once (beyond it a new client is closed at once), and
// --max-handshakes (default: a quarter of that) the handshakes in progress:
// beyond it the oldest is aborted, so half-finished handshakes cannot keep
// real clients out. The listener and its echo are listen_tls_echo
// (tls_echo.hpp, beside this file), which tests/test_sim_tls.cpp runs on a
// simulated host.
//
//   $ tls_echo_server --cert chain.pem --key key.pem    (then: tls_echo_client --cafile ca.pem)
//   listening on 127.0.0.1:7443 (epoll)
//   ^C  (SIGINT or SIGTERM: stop accepting, drain, exit 0; see server_support.hpp)
#include <chrono>
#include <string>

#include <fmt/format.h>
#include <reactor/tls/certificate_maker.hpp>

#include "cli.hpp"
#include "program.hpp"
#include "server_support.hpp"
#include "tls_echo.hpp"

namespace tls = reactor::tls;

namespace {

// The server's context: the certificate given (a bad file: tls::Error
// naming it, reported by guarded_main), or a self-signed one.
tls::ContextPtr make_context(const std::string& cert, const std::string& key) {
    tls::ServerOptions options;
    options.identity = cert.empty() ? tls::self_signed({"localhost", "127.0.0.1", "::1"}).identity()
                                    : tls::Identity::from_files(cert, key);
    return tls::Context::server(options);
}

int run(int argc, char** argv) {
    examples::Cli cli("tls_echo_server", "TLS echo server: every byte comes back unchanged, over TLS.");
    examples::ServerOptions options(7443);  // tls_echo_client's default too
    examples::add_server_options(cli, options);
    examples::add_idle_timeout_option(cli, options);
    examples::add_handshake_limit_option(cli, options);
    std::string cert, key;
    double handshake_timeout = 10;
    cli.add_option("--cert", cert, "certificate chain, PEM file (leaf first); with --key")
        ->check(examples::existing_file);
    cli.add_option("--key", key, "private key of --cert, PEM file")->check(examples::existing_file);
    cli.add_option("--handshake-timeout", handshake_timeout,
                   "seconds a client may take to finish its TLS handshake (then it is aborted; 0: no limit)")
        ->check(examples::seconds);
    cli.parse_or_exit(argc, argv);
    if (cert.empty() != key.empty()) cli.fail("--cert and --key go together");
    const auto context = make_context(cert, key);

    reactor::Scheduler sched(examples::on(options.backend));
    examples::ServerLifetime lifetime(sched, options, "tls_echo_server");
    examples::TlsEchoCounts counts;
    // The first few failed handshakes say enough.
    auto on_end = [&counts](tls::Connection& c, const reactor::End& reason) {
        if (c.handshake_done() || counts.failed > 5) return;
        examples::say(
            fmt::format("tls_echo_server: {}: {}", c.transport().peer_address().to_string(), reason.to_string()));
    };
    reactor::Listener::Options listen_options = examples::listen_options(options);  // --exit-after
    listen_options.connection = examples::connection_options(options);  // --idle-timeout
    tls::Options tls_options;
    tls_options.handshake_timeout =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(handshake_timeout));
    tls_options.max_handshakes = examples::max_handshakes(options);  // --max-handshakes
    reactor::ListenerPtr listener;
    try {
        listener = examples::listen_tls_echo(sched, examples::listen_address(cli, options), context, counts, on_end,
                                             listen_options, tls_options);
    } catch (const std::system_error& e) {  // the port is taken...
        fmt::print(stderr, "tls_echo_server: {}\n", e.what());
        return examples::kFailed;
    }
    lifetime.set_listener(listener);
    examples::announce(sched, listener->address());
    if (cert.empty())
        examples::say("tls_echo_server: no --cert/--key: a self-signed certificate for localhost, 127.0.0.1 and ::1 "
                      "(clients must skip verification: tls_echo_client --insecure)");

    sched.run();
    fmt::print("tls_echo_server: {} connections, {} handshakes, {} failed, {} bytes echoed, {} aborted\n",
               listener->accepted(), counts.handshakes, counts.failed, counts.echoed, lifetime.aborted());
    std::fflush(stdout);
    return lifetime.exit_status();
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("tls_echo_server", run, argc, argv); }
