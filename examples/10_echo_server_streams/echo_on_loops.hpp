// SPDX-License-Identifier: MIT
// examples::echo_streams_on_loops: echo_server_streams with --loops N above
// 1. The same EchoSession tasks, each spawned on its connection's loop (a
// reactor::GroupListener hands every connection to one loop of a
// reactor::LoopGroup, through examples::GroupServer), over a futures::Stream
// made there from the connection: nothing of a conversation ever leaves its
// loop, and each loop keeps counts of its own. Each conversation runs in its
// loop's futures::ServerScope, as start_server's run in the server's scope.
// The end is GroupServer's (SIGINT/SIGTERM handled once, drain, abort: an
// abort reads as EOF, so the session just finishes), once every loop's
// conversations have ended, with the same summary line as on one loop, then
// each loop's share. Runs on the main thread, which is loop 0's.
#pragma once

#include <cstdio>
#include <vector>

#include <fmt/format.h>
#include <futures/server_scope.hpp>
#include <futures/stream.hpp>
#include <futures/task.hpp>

#include "echo_session.hpp"
#include "group_server.hpp"
#include "server_support.hpp"

namespace examples {

inline int echo_streams_on_loops(const reactor::Address& address, const ServerOptions& options,
                                 const GroupOptions& loops) {
    GroupServer server(options, loops, "echo_server_streams", "client(s)");
    std::vector<EchoCounts> counts(server.size());  // each loop's own
    std::vector<futures::ServerScope> scopes;  // each loop's: the server's end waits for its conversations
    futures::StreamOptions stream_options;
    stream_options.connection = connection_options(options);  // --idle-timeout
    reactor::Listener::Options listen_options = examples::listen_options(options);  // --exit-after
    listen_options.connection = stream_options.connection;
    server.listen(address, [&](const reactor::ConnectionPtr& c, std::size_t loop) {
        futures::Stream stream = futures::Stream::from(c, stream_options);
        // As StreamServer does: the stream is closed when its conversation ends.
        scopes[loop].follow(stream, futures::spawn(server.group().loop(loop), EchoSession(stream, counts[loop])));
    }, listen_options);
    for (std::size_t i = 0; i < server.size(); ++i) scopes.emplace_back(server.listener().connections_on(i).gate());
    server.run();
    EchoCounts total;
    for (const EchoCounts& c : counts) {
        total.echoed += c.echoed;
        total.resets += c.resets;
        total.timeouts += c.timeouts;
        total.failures += c.failures;
    }
    fmt::print("echo_server_streams: {} connections, {} bytes echoed, {} reset by the client, {} timed out, {} "
               "failed{}\n",
               server.connections(), total.echoed, total.resets, total.timeouts, total.failures,
               server.per_loop([&counts](std::size_t i) { return fmt::format(", {} bytes echoed", counts[i].echoed); }));
    std::fflush(stdout);
    return 0;
}

}  // namespace examples
