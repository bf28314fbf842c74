// SPDX-License-Identifier: MIT
// http::run_on_loops: http_hello with --loops N above 1. Plain HTTP served by
// N loops, each on a thread of its own (a reactor::LoopGroup and a
// reactor::GroupListener spreading connections by --spreading, through
// examples::GroupServer): each loop keeps the sessions of its own
// connections, so nothing is shared and nothing is locked. SIGUSR1 prints
// one line per loop; SIGINT or SIGTERM drains as on one loop, and the
// summary line also gives each loop's share. HTTPS stays on one loop
// (--tls-cert with --loops above 1 is refused). Runs on the main thread,
// which is loop 0's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "http_sessions.hpp"
#include "group_server.hpp"
#include "server_support.hpp"

namespace http {

inline int run_on_loops(const reactor::Address& address, const examples::ServerOptions& options,
                        const examples::GroupOptions& loops, reactor::Listener::Options listen_options,
                        const Limits& limits, const Timeouts& timeouts) {
    examples::GroupServer server(options, loops, "http_hello");
    // One Sessions per loop: each loop's connections, and its scratch buffer.
    std::vector<std::unique_ptr<Sessions<reactor::Connection>>> sessions;
    for (std::size_t i = 0; i < server.size(); ++i)
        sessions.push_back(std::make_unique<Sessions<reactor::Connection>>(
            Sessions<reactor::Connection>{limits, timeouts, {}, {}}));
    server.listen(address, [&sessions](const reactor::ConnectionPtr& c, std::size_t loop) {
        sessions[loop]->start(*c);
    }, std::move(listen_options));
    server.run();
    fmt::print("http_hello: {} connections, {} aborted{}\n", server.connections(), server.aborted(),
               server.per_loop([](std::size_t) { return std::string(); }));
    std::fflush(stdout);
    return 0;
}

}  // namespace http
