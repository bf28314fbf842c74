// SPDX-License-Identifier: MIT
// http_hello: a small, strict HTTP/1.1 server that answers every request with
// "Hello, world!", complete enough for curl, ab and wrk.
//
// Step 12 of the series (examples/README.md).
//
// The new idea: a protocol on top of the callback connection, in layers that
// each fit on a screen: http_head.hpp reads one request head (RFC 9112, and
// strict: whatever could be read two ways is refused), http_request_parser.hpp
// cuts a byte stream into requests, http_session.hpp answers them on one
// connection, with a header timeout and an idle timeout so that slow clients
// cannot take every fd. Here is only what ties a session to its connection. A
// pipelining client that never reads cannot grow our output: reading pauses
// above the high-water mark and resumes below the low one.
//
// With --tls-cert and --tls-key it serves HTTPS: the same sessions over
// reactor::tls connections (step 17 introduces them; http_tls.hpp makes the
// listener), keep-alive, Expect, timeouts and SIGTERM's drain unchanged, and
// --handshake-timeout for clients that never finish their handshake, and
// --max-handshakes for how many may be in progress at once (the oldest is
// aborted beyond it). --max-connections (default: the fd limit found at
// start, less 64) bounds the connections open at once, TLS or not: beyond it
// a new client is closed at once (server_support.hpp). The
// flags exist when the examples are built with reactor::tls (REACTOR_TLS):
// the CMake step defines REACTOR_EXAMPLES_TLS to 1 or 0 for this file.
//
//   $ http_hello &   curl -v http://127.0.0.1:8080/
//   $ http_hello --tls-cert chain.pem --tls-key key.pem &   curl --cacert ca.pem https://localhost:8080/
//   kill -USR1 <pid>   prints the loop's stats and live tasks, and carries on (server_support.hpp)
//   $ http_hello --loops 2 &   (one loop per thread: http_on_loops.hpp; with --tls-cert too)
#include <chrono>
#include <string>

#include <fmt/format.h>
#include <reactor/net/listener.hpp>

#include "cli.hpp"
#include "http_on_loops.hpp"
#include "http_sessions.hpp"
#if REACTOR_EXAMPLES_TLS
#include "http_tls.hpp"
#endif
#include "program.hpp"
#include "group_server.hpp"
#include "server_support.hpp"

namespace {

int run(int argc, char** argv) {
    examples::Cli cli("http_hello", "Strict HTTP/1.1 server answering every request with \"Hello, world!\".");
    examples::ServerOptions options(8080);
    examples::add_server_options(cli, options);
    // Bodies are skipped as they arrive, never stored: --max-body bounds the
    // time one request may take, not memory, so it is well above the 1 MiB
    // beyond which curl asks "Expect: 100-continue" by itself.
    http::Limits limits{8192, std::size_t{64} << 20};  // max_head, max_body
    cli.add_option("--max-head", limits.max_head, "largest request line + headers, in bytes (431 beyond)")
        ->check(examples::range(std::size_t{16}, std::size_t{1} << 30));
    cli.add_option("--max-body", limits.max_body, "largest request body, in bytes (413 beyond)")
        ->check(examples::range(std::size_t{0}, std::size_t{1} << 40));
    // nginx's client_header_timeout, client_body_timeout and keepalive_timeout.
    int header_timeout = 60, body_timeout = 60, idle_timeout = 75;
    cli.add_option("--header-timeout", header_timeout,
                   "seconds a request head may take from its first byte (408 and close beyond)")
        ->check(examples::range(1, 86400));
    cli.add_option("--body-timeout", body_timeout,
                   "seconds a request body may take after its head, however steadily its bytes come (408 and "
                   "close beyond; 0: no limit)")
        ->check(examples::range(0, 86400));
    cli.add_option("--idle-timeout", idle_timeout, "seconds a connection may send nothing (close beyond)")
        ->check(examples::range(1, 86400));
#if REACTOR_EXAMPLES_TLS
    http::TlsFlags tls;
    http::add_tls_options(cli, tls);
    examples::add_handshake_limit_option(cli, options);  // with --tls-cert
#endif
    examples::GroupOptions loops;
    examples::add_group_options(cli, loops);
    cli.parse_or_exit(argc, argv);
#if REACTOR_EXAMPLES_TLS
    http::check_tls_options(cli, tls);
    tls.max_handshakes = examples::max_handshakes(options);
#endif
    const http::Timeouts timeouts{std::chrono::seconds(header_timeout), std::chrono::seconds(idle_timeout),
                                  std::chrono::seconds(body_timeout)};

    // Reads of at most 16 KiB (a few hundred pipelined requests, or a large
    // head and then some): what a connection waiting for its output to drain
    // holds unanswered, besides that output (the 64 KiB mark + a batch).
    reactor::Listener::Options listen_options = examples::listen_options(options);  // --exit-after
    listen_options.connection.read_size = 16 * 1024;
    const reactor::Address address = examples::listen_address(cli, options);
#if REACTOR_EXAMPLES_TLS
    if (loops.loop_count() > 1 && tls.serve_tls())
        return http::run_on_loops(address, options, loops, listen_options, limits, timeouts, tls);
#endif
    if (loops.loop_count() > 1) return http::run_on_loops(address, options, loops, listen_options, limits, timeouts);

    reactor::Scheduler sched(examples::on(options.backend));
    examples::ServerLifetime lifetime(sched, options, "http_hello");
    http::Sessions<reactor::Connection> sessions{limits, timeouts, {}, {}};
    reactor::ListenerPtr listener;
#if REACTOR_EXAMPLES_TLS
    http::Sessions<reactor::tls::Connection> tls_sessions{limits, timeouts, {}, {}};
    if (tls.serve_tls())
        listener = http::listen_tls(sched, address, tls, [&](const reactor::tls::ConnectionPtr& c) {
            tls_sessions.start(*c);
        }, listen_options);
#endif
    if (!listener) {
        auto on_accept = [&](const reactor::ConnectionPtr& c) {
            sessions.start(*c);
        };
        listener = examples::listen_or_exit(sched, address, on_accept, listen_options);
    }
    lifetime.set_listener(listener);
    examples::announce(sched, listener->address());

    sched.run();
    std::string handshakes;
#if REACTOR_EXAMPLES_TLS
    if (tls.serve_tls()) handshakes = fmt::format(", {} failed TLS handshakes", tls_sessions.failed_handshakes);
#endif
    fmt::print("http_hello: {} connections{}, {} aborted\n", listener->accepted(), handshakes, lifetime.aborted());
    std::fflush(stdout);
    return lifetime.exit_status();
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("http_hello", run, argc, argv); }
