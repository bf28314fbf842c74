// SPDX-License-Identifier: MIT
// http_hello's HTTPS side: --tls-cert, --tls-key and --handshake-timeout, and
// the TLS listener they make (reactor::tls, step 17). Only http_hello.cpp
// includes it, and only when the examples are built with reactor::tls.
//
// --max-handshakes (server_support.hpp) bounds the handshakes in progress:
// beyond it the oldest is aborted (reactor/tls/handshake_limit.hpp).
// The handshake gets its own deadline, as nginx's ssl_handshake_timeout: the
// header timeout only starts once the handshake is done and bytes of a head
// arrive, so without it a client that connects and sends nothing (or half a
// ClientHello) would hold its fd until the idle timeout. A certificate or key
// that cannot be used throws reactor::tls::Error naming the file, which
// guarded_main() prints as the program's one line (exit 1): a server that
// cannot serve what it was asked to serve must not start.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>
#include <reactor/tls/listen.hpp>

#include "cli.hpp"
#include "program.hpp"

namespace http {

struct TlsFlags {
    std::string cert, key;       // PEM files; both or neither
    int handshake_timeout = 10;  // seconds
    std::size_t max_handshakes = 0;  // examples::max_handshakes(): --max-handshakes, set after parsing
    bool serve_tls() const { return !cert.empty(); }
};

inline void add_tls_options(examples::Cli& cli, TlsFlags& flags) {
    cli.add_option("--tls-cert", flags.cert, "serve HTTPS with this certificate chain, PEM file (leaf first); with --tls-key")
        ->check(examples::existing_file);
    cli.add_option("--tls-key", flags.key, "private key of --tls-cert, PEM file")->check(examples::existing_file);
    cli.add_option("--handshake-timeout", flags.handshake_timeout,
                   "with --tls-cert: seconds a client may take to finish its TLS handshake (then it is aborted)")
        ->check(examples::range(1, 86400));
}

// After parsing: the two files go together.
inline void check_tls_options(const examples::Cli& cli, const TlsFlags& flags) {
    if (flags.cert.empty() != flags.key.empty()) cli.fail("--tls-cert and --tls-key go together");
}

// The server context (one, whatever the number of loops: a server context
// may serve every loop of a group) and the handshake deadline. Throws
// reactor::tls::Error for a bad certificate or key.
inline reactor::tls::ContextPtr server_context(const TlsFlags& flags) {
    reactor::tls::ServerOptions server;
    server.identity = reactor::tls::Identity::from_files(flags.cert, flags.key);
    server.alpn = {"http/1.1"};
    return reactor::tls::Context::server(server);
}

inline reactor::tls::Options connection_options(const TlsFlags& flags) {
    reactor::tls::Options tls;
    tls.handshake_timeout = std::chrono::seconds(flags.handshake_timeout);
    tls.max_handshakes = flags.max_handshakes;
    return tls;
}

// The HTTPS listener: every accepted connection starts a server handshake;
// `on_accept` gets the TLS connection. Throws reactor::tls::Error for a bad
// certificate or key; a port that cannot be had: one line, exit 1.
inline reactor::ListenerPtr listen_tls(reactor::Scheduler& sched, const reactor::Address& address,
                                       const TlsFlags& flags, reactor::tls::AcceptCallback on_accept,
                                       reactor::Listener::Options listen_options) {
    auto context = server_context(flags);
    try {
        return reactor::tls::listen(sched, address, std::move(context), std::move(on_accept),
                                    std::move(listen_options), connection_options(flags));
    } catch (const std::system_error& e) {  // the port is taken...
        fmt::print(stderr, "{}\n", e.what());
        std::exit(examples::kFailed);
    }
}

}  // namespace http
