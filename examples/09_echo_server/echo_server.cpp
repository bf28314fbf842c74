// SPDX-License-Identifier: MIT
// echo_server: the callback-driven echo server. Every byte a client sends
// comes back unchanged, in order.
//
// Step 09 of the series (examples/README.md). New here: the callback TCP server
// (Listener, Connection, water marks).
//
// Backpressure: a client that sends without reading its echoes makes them
// pile up in our output buffer; past the high-water mark (64 KiB) we stop
// reading from that client until the buffer drains to the low mark (16 KiB),
// so TCP flow control holds the client back and memory stays bounded. The
// connections do it themselves (ConnectionOptions::pause_reading_above_high_water):
// no water-mark callbacks, so nothing per connection to store them.
// --idle-timeout (default 300 s) ends a connection that makes no progress,
// so silent clients cannot hold every fd; --max-connections (default: the
// fd limit found at start, less 64) bounds how many are open at once: beyond
// it a new client is closed at once (reactor::Listener::Options::max_connections;
// with --loops, every loop's connections count together).
//
//   $ echo_server                          (then, elsewhere: echo_client)
//   listening on 127.0.0.1:7000 (epoll)
//   ^C  (SIGINT or SIGTERM: stop accepting, drain, exit 0; see server_support.hpp)
//   kill -USR1 <pid>   prints the loop's stats and live tasks, and carries on (server_support.hpp)
//
// --loops N (above 1) serves through N loops, each on a thread of its own
// (issue 24's shared-nothing layer: a reactor::LoopGroup and a
// reactor::GroupListener spreading connections by --spreading): each
// connection is served by one loop for its whole life, and each loop counts
// its own echoed bytes. SIGUSR1 then prints one line per loop; the end is
// the same drain, with one summary line that also gives each loop's share.
#include <vector>

#include <fmt/format.h>
#include <reactor/net/listener.hpp>

#include "cli.hpp"
#include "echo.hpp"
#include "program.hpp"
#include "group_server.hpp"
#include "server_support.hpp"

namespace {

// --idle-timeout, and backpressure (see the top of the file).
reactor::ConnectionOptions echo_connection_options(const examples::ServerOptions& options) {
    return examples::echo_connection_options(examples::connection_options(options));
}

int run_on_loops(examples::Cli& cli, const examples::ServerOptions& options, const examples::GroupOptions& loops) {
    examples::GroupServer server(options, loops, "echo_server");
    // Each loop adds to its own, on every message: one cache line each, or
    // the loops' counters would share a line and every echo would pull it
    // from the other core (false sharing, the one shared write per message).
    struct alignas(64) Count {
        std::uint64_t n = 0;
    };
    std::vector<Count> echoed(server.size());
    reactor::Listener::Options listen_options = examples::listen_options(options);  // --exit-after
    listen_options.connection = echo_connection_options(options);
    server.listen(examples::listen_address(cli, options),
                  [&echoed](const reactor::ConnectionPtr& c, std::size_t loop) { examples::echo(c, echoed[loop].n); },
                  listen_options);
    server.run();
    std::uint64_t total = 0;
    for (const Count& c : echoed) total += c.n;
    fmt::print("echo_server: {} connections, {} bytes echoed, {} aborted{}\n", server.connections(), total,
               server.aborted(), server.per_loop([&echoed](std::size_t i) {
                   return fmt::format(", {} bytes echoed", echoed[i].n);
               }));
    std::fflush(stdout);
    return 0;
}

int run(int argc, char** argv) {
    examples::Cli cli("echo_server", "Callback-driven TCP echo server: every byte comes back unchanged.");
    examples::ServerOptions options(7000);  // echo_client's default too
    examples::add_server_options(cli, options);
    examples::add_idle_timeout_option(cli, options);
    examples::GroupOptions loops;
    examples::add_group_options(cli, loops);
    cli.parse_or_exit(argc, argv);
    if (loops.loop_count() > 1) return run_on_loops(cli, options, loops);
    reactor::Scheduler sched(examples::on(options.backend));
    examples::ServerLifetime lifetime(sched, options, "echo_server");
    std::uint64_t echoed = 0;
    reactor::Listener::Options listen_options = examples::listen_options(options);  // --exit-after
    listen_options.connection = echo_connection_options(options);

    auto on_accept = [&](const reactor::ConnectionPtr& c) { examples::echo(c, echoed); };
    auto listener = examples::listen_or_exit(sched, examples::listen_address(cli, options), on_accept, listen_options);
    lifetime.set_listener(listener);
    examples::announce(sched, listener->address());

    sched.run();
    fmt::print("echo_server: {} connections, {} bytes echoed, {} aborted\n", listener->accepted(), echoed,
               lifetime.aborted());
    std::fflush(stdout);
    return lifetime.exit_status();
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("echo_server", run, argc, argv); }
