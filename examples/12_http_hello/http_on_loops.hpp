// SPDX-License-Identifier: MIT
// http::run_on_loops: http_hello with --loops N above 1. HTTP (or, with
// --tls-cert, HTTPS) served by N loops, each on a thread of its own (a
// reactor::LoopGroup and a reactor::GroupListener spreading connections by
// --spreading, through examples::GroupServer): each loop keeps the sessions
// of its own connections, so nothing is shared and nothing is locked but
// the one TLS server context, which every loop may use (OpenSSL locks its
// session cache and ticket keys; a session from one loop resumes on
// another). SIGUSR1 prints one line per loop; SIGINT or SIGTERM drains as on
// one loop, and the summary line also gives each loop's share. Runs on the
// main thread, which is loop 0's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "group_server.hpp"
#include "http_sessions.hpp"
#include "server_support.hpp"
#if REACTOR_EXAMPLES_TLS
#include <reactor/tls/connection.hpp>
#include <reactor/tls/handshake_limit.hpp>

#include "http_tls.hpp"
#endif

namespace http {

// One Sessions per loop: each loop's connections, and its scratch buffer.
template <class Conn>
std::vector<std::unique_ptr<Sessions<Conn>>> sessions_per_loop(std::size_t loops, const Limits& limits,
                                                               const Timeouts& timeouts) {
    std::vector<std::unique_ptr<Sessions<Conn>>> out;
    for (std::size_t i = 0; i < loops; ++i)
        out.push_back(std::make_unique<Sessions<Conn>>(Sessions<Conn>{limits, timeouts, {}, {}}));
    return out;
}

// The summary line, after the run: `handshakes` (HTTPS) after the count.
inline int summary(examples::GroupServer& server, const std::string& handshakes) {
    fmt::print("http_hello: {} connections{}, {} aborted{}\n", server.connections(), handshakes, server.aborted(),
               server.per_loop([](std::size_t) { return std::string(); }));
    std::fflush(stdout);
    return 0;
}

// Plain HTTP.
inline int run_on_loops(const reactor::Address& address, const examples::ServerOptions& options,
                        const examples::GroupOptions& loops, reactor::Listener::Options listen_options,
                        const Limits& limits, const Timeouts& timeouts) {
    examples::GroupServer server(options, loops, "http_hello");
    auto sessions = sessions_per_loop<reactor::Connection>(server.size(), limits, timeouts);
    server.listen(address, [&sessions](const reactor::ConnectionPtr& c, std::size_t loop) {
        sessions[loop]->start(*c);
    }, std::move(listen_options));
    server.run();
    return summary(server, "");
}

#if REACTOR_EXAMPLES_TLS
// HTTPS: what reactor::tls::listen over a group does, on the group server's
// listener: each accepted connection starts its handshake on its own loop,
// with the one context. A bad certificate or key throws before any loop runs.
inline int run_on_loops(const reactor::Address& address, const examples::ServerOptions& options,
                        const examples::GroupOptions& loops, reactor::Listener::Options listen_options,
                        const Limits& limits, const Timeouts& timeouts, const TlsFlags& flags) {
    examples::GroupServer server(options, loops, "http_hello");
    auto sessions = sessions_per_loop<reactor::tls::Connection>(server.size(), limits, timeouts);
    // --max-handshakes, shared out as tls::listen over a group does: each
    // loop bounds its own (touched by that loop only).
    std::vector<reactor::tls::HandshakeLimit> handshakes(
        server.size(), reactor::tls::HandshakeLimit((flags.max_handshakes + server.size() - 1) / server.size()));
    server.listen(address, [&sessions, &handshakes, context = server_context(flags), tls = connection_options(flags)](
                               const reactor::ConnectionPtr& c, std::size_t loop) {
        reactor::tls::ConnectionPtr secured;
        try {
            secured = reactor::tls::Connection::start_server(c, context, tls);
        } catch (...) {
            c->abort();  // never left open without callbacks
            throw;       // to the loop's exception handler
        }
        if (tls.max_handshakes > 0) handshakes[loop].started(secured);
        sessions[loop]->start(*secured);
    }, std::move(listen_options));
    server.run();
    long failed = 0;
    for (const auto& s : sessions) failed += s->failed_handshakes;
    return summary(server, fmt::format(", {} failed TLS handshakes", failed));
}
#endif

}  // namespace http
