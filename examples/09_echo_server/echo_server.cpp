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
// so TCP flow control holds the client back and memory stays bounded.
// --idle-timeout (default 300 s) ends a connection that makes no progress,
// so silent clients cannot hold every fd.
//
//   $ echo_server                          (then, elsewhere: echo_client)
//   listening on 127.0.0.1:7000 (epoll)
//   ^C  (SIGINT or SIGTERM: stop accepting, drain, exit 0; see server_support.hpp)
//   kill -USR1 <pid>   prints the loop's stats and live tasks, and carries on (server_support.hpp)
#include <fmt/format.h>
#include <reactor/net/listener.hpp>

#include "cli.hpp"
#include "program.hpp"
#include "server_support.hpp"

using reactor::Connection;

namespace {

int run(int argc, char** argv) {
    examples::Cli cli("echo_server", "Callback-driven TCP echo server: every byte comes back unchanged.");
    examples::ServerOptions options(7000);  // echo_client's default too
    examples::add_server_options(cli, options);
    examples::add_idle_timeout_option(cli, options);
    cli.parse_or_exit(argc, argv);
    reactor::Scheduler sched(examples::on(options.backend));
    examples::ServerLifetime lifetime(sched, options, "echo_server");
    std::uint64_t echoed = 0;
    reactor::Listener::Options listen_options = examples::listen_options(options);  // --exit-after
    listen_options.connection = examples::connection_options(options);  // --idle-timeout

    auto on_accept = [&](const reactor::ConnectionPtr& c) {
        c->set_data_callback([&echoed](Connection& c, std::string_view data) {
            echoed += data.size();
            c.write(data);
        });
        c->set_high_water_callback([](Connection& c) { c.pause_reading(); });
        c->set_low_water_callback([](Connection& c) { c.resume_reading(); });
    };
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
