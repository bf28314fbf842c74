// SPDX-License-Identifier: MIT
// echo_server_streams: the echo server again, written with futures streams and
// one hand-written state-machine task per client (minio's server, desugared).
// Same behaviour and options as echo_server: every byte comes back unchanged;
// drain() after each write is the backpressure (a client that does not read
// its echoes stops being read from until they drain).
//
// Step 10 of the series (examples/README.md). New here: streams:
// read/write/drain futures, one task per connection, and a graceful shutdown
// with serve_until: SIGINT/SIGTERM stop accepting, open clients get
// --drain-seconds to finish, then are aborted; a second signal aborts now.
// --idle-timeout (default 300 s) is the streams' connection deadline: a
// client silent for that long (or not reading its echoes) fails its pending
// read or drain with ETIMEDOUT, and is counted as "timed out".
// --max-connections (default: the fd limit less 64) is StreamOptions'
// max_connections: beyond it a new client is closed at once, its handler
// never runs (server_support.hpp).
//
//   $ echo_server_streams                  (then, elsewhere: echo_client)
//   listening on 127.0.0.1:7000 (epoll)
//   kill -USR1 <pid>   prints the loop's stats and live tasks, and carries on (server_support.hpp)
//   $ echo_server_streams --loops 2   (one loop per thread: echo_on_loops.hpp)
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/stream.hpp>

#include "cli.hpp"
#include "echo_on_loops.hpp"
#include "echo_session.hpp"
#include "program.hpp"
#include "group_server.hpp"
#include "server_support.hpp"

namespace {

int run(int argc, char** argv) {
    examples::Cli cli("echo_server_streams", "Echo server written with futures streams and state-machine tasks.");
    examples::ServerOptions options(7000);  // the same port as echo_server: echo_client's default
    examples::add_server_options(cli, options);
    examples::add_idle_timeout_option(cli, options);
    examples::GroupOptions loops;
    examples::add_group_options(cli, loops);
    cli.parse_or_exit(argc, argv);
    if (loops.loop_count() > 1)
        return examples::echo_streams_on_loops(examples::listen_address(cli, options), options, loops);
    reactor::Scheduler sched(examples::on(options.backend));
    examples::EchoCounts counts;
    long accepted = 0;
    futures::StreamOptions stream_options;
    stream_options.connection = examples::connection_options(options);  // --idle-timeout: reads fail with ETIMEDOUT
    stream_options.max_connections = examples::max_connections(options);  // --max-connections
    futures::StreamServer server;
    futures::Future<void> stop(sched), all_closed;  // stop: what ends serve_until
    auto stop_now = [&] {
        if (!stop.done()) stop.set_result();
    };
    try {
        server = futures::start_server(sched, examples::listen_address(cli, options), [&](futures::Stream stream) {
            if (options.exit_after > 0 && ++accepted >= options.exit_after) {
                server.close();
                all_closed = server.wait_closed().finally(stop_now);  // no drain: they have all closed
            }
            return futures::spawn(sched, examples::EchoSession(std::move(stream), counts));
        }, stream_options);
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}\n", e.what());
        return 1;
    }
    // The first SIGINT/SIGTERM ends serve_until's serving: it stops accepting
    // and gives open clients --drain-seconds; a second one aborts them now.
    for (int signo : {SIGINT, SIGTERM})
        sched.add_signal_handler(signo, [&, signo] {
            const char* what = signo == SIGINT ? "SIGINT" : "SIGTERM";
            if (stop.done()) {
                fmt::print("echo_server_streams: {} again: aborting {} client(s)\n", what, server.active());
                server.abort_clients();
            } else {
                server.close();  // now, not when serve_until gets to it: no client slips in meanwhile
                fmt::print("echo_server_streams: {}: stopped accepting; draining {} client(s) for up to {}s\n",
                           what, server.active(), options.drain_seconds);
                stop_now();
            }
            std::fflush(stdout);
        });
    examples::print_stats_on_sigusr1(sched, "echo_server_streams");
    reactor::Handle deadline;
    if (options.max_seconds > 0)
        deadline = sched.call_later(std::chrono::duration<double>(options.max_seconds), [&] {
            server.close();
            server.abort_clients();
            stop_now();
        });
    const std::chrono::duration<double> drain(options.drain_seconds);
    futures::Future<void> done = server.serve_until(stop, std::chrono::duration_cast<reactor::Duration>(drain));
    examples::announce(sched, server.address());

    futures::run_until(sched, done);  // never fails; the loop stops with it
    deadline.cancel();
    fmt::print("echo_server_streams: {} connections, {} bytes echoed, {} reset by the client, {} timed out, {} failed\n",
               server.accepted(), counts.echoed, counts.resets, counts.timeouts, counts.failures);
    std::fflush(stdout);
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("echo_server_streams", run, argc, argv); }
