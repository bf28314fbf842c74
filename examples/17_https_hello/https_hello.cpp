// SPDX-License-Identifier: MIT
// https_hello: an HTTPS server answering every request with "Hello over
// TLS!": the callback connection of step 09 with TLS over it (reactor::tls).
//
// Step 17 of the series (examples/README.md).
//
// The new idea: TLS as a layer over a plain connection. tls::listen is a
// Listener whose connections start a server handshake with a tls::Context;
// each tls::Connection then has the plain connection's callbacks (data,
// water marks, close with a reason) plus a handshake callback. The
// certificate comes from --cert/--key (PEM files), or, without them, a
// self-signed one is made in memory for localhost, 127.0.0.1 and ::1 (a
// client must then skip verification: curl -k). docs/tls.md has the rest.
// The session here is a few lines of HTTP on purpose, so that TLS is all
// this step shows; the full HTTP/1.1 server of step 12 serves HTTPS too,
// with everything it has (http_hello --tls-cert FILE --tls-key FILE).
//
// What keeps clients from holding it: --handshake-timeout (10 s) for a
// handshake that never finishes; --idle-timeout (75 s, nginx's
// keepalive_timeout, as http_hello's) for a connection that sends nothing
// after it, or does not read what it is sent; --max-connections (default:
// the fd limit found at start, less 64) for how many are open at once,
// beyond which a new client is closed at once; and --max-handshakes
// (default: a quarter of that) for the handshakes in progress, beyond which
// the oldest is aborted (server_support.hpp).
//
//   $ https_hello --port 8443 &   curl -k https://127.0.0.1:8443/
#include <chrono>
#include <string>
#include <unordered_map>

#include <fmt/format.h>
#include <reactor/tls/certificate_maker.hpp>
#include <reactor/tls/listen.hpp>

#include "cli.hpp"
#include "https_session.hpp"
#include "program.hpp"
#include "server_support.hpp"

namespace tls = reactor::tls;

namespace {

// The server's context: the certificate given, or a self-signed one.
tls::ContextPtr make_context(const std::string& cert, const std::string& key) {
    tls::ServerOptions options;
    options.alpn = {"http/1.1"};
    options.identity = cert.empty() ? tls::self_signed({"localhost", "127.0.0.1", "::1"}).identity()
                                    : tls::Identity::from_files(cert, key);
    return tls::Context::server(options);  // a bad file: tls::Error naming it, reported by guarded_main
}

int run(int argc, char** argv) {
    examples::Cli cli("https_hello", "HTTPS server answering every request with \"Hello over TLS!\".");
    examples::ServerOptions options(8443);
    options.idle_timeout = 75;  // an HTTP keep-alive server's (http_hello's --idle-timeout)
    examples::add_server_options(cli, options);
    examples::add_idle_timeout_option(cli, options);
    examples::add_handshake_limit_option(cli, options);
    std::string cert, key;
    int handshake_timeout = 10;
    cli.add_option("--cert", cert, "certificate chain, PEM file (leaf first); with --key")
        ->check(examples::existing_file);
    cli.add_option("--key", key, "private key of --cert, PEM file")->check(examples::existing_file);
    cli.add_option("--handshake-timeout", handshake_timeout, "seconds a client may take to finish its TLS handshake")
        ->check(examples::range(1, 3600));
    cli.parse_or_exit(argc, argv);
    if (cert.empty() != key.empty()) cli.fail("--cert and --key go together");

    reactor::Scheduler sched(examples::on(options.backend));
    examples::ServerLifetime lifetime(sched, options, "https_hello");
    std::unordered_map<tls::Connection*, https::HttpsSession> sessions;  // each until its close callback
    long handshakes = 0, failed = 0;

    auto on_accept = [&](const tls::ConnectionPtr& c) {
        sessions.try_emplace(c.get());
        c->set_handshake_callback([&](tls::Connection& c) {
            ++handshakes;
            examples::say(fmt::format("https_hello: {} {}, ALPN '{}'", c.transport().peer_address().to_string(),
                                      c.protocol_version(), c.alpn_protocol()));
        });
        c->set_data_callback([&](tls::Connection& c, std::string_view data) { sessions.at(&c).on_data(c, data); });
        c->set_high_water_callback([](tls::Connection& c) { c.pause_reading(); });
        c->set_low_water_callback([](tls::Connection& c) { c.resume_reading(); });
        c->set_close_callback([&](tls::Connection& c, const reactor::End& reason) {
            if (reason.kind == reactor::EndKind::handshake_failed || reason.kind == reactor::EndKind::handshake_timeout) {
                ++failed;
                examples::say(fmt::format("https_hello: a handshake failed: {}", reason.to_string()));
            }
            sessions.erase(&c);
        });
    };
    reactor::Listener::Options listen_options = examples::listen_options(options);  // --exit-after, --max-connections
    listen_options.connection = examples::connection_options(options);                 // --idle-timeout
    listen_options.connection.read_size = 16 * 1024 + 64;  // one TLS record
    tls::Options tls_options;
    tls_options.handshake_timeout = std::chrono::seconds(handshake_timeout);
    tls_options.max_handshakes = examples::max_handshakes(options);  // --max-handshakes
    reactor::ListenerPtr listener;
    try {
        listener = tls::listen(sched, examples::listen_address(cli, options), make_context(cert, key), on_accept,
                               listen_options, tls_options);
    } catch (const std::system_error& e) {  // the port is taken...
        fmt::print(stderr, "https_hello: {}\n", e.what());
        return examples::kFailed;
    }
    lifetime.set_listener(listener);
    examples::announce(sched, listener->address());  // the first line, as every example server's
    if (cert.empty())
        examples::say("https_hello: no --cert/--key: serving a self-signed certificate for localhost, 127.0.0.1 and ::1 "
                      "(clients must skip verification: curl -k)");

    sched.run();
    fmt::print("https_hello: {} connections, {} handshakes, {} failed, {} aborted\n", listener->accepted(), handshakes,
               failed, lifetime.aborted());
    std::fflush(stdout);
    return lifetime.exit_status();
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("https_hello", run, argc, argv); }
