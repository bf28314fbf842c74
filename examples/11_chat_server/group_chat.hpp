// SPDX-License-Identifier: MIT
// group_chat.hpp: chat_server --loops N, N > 1. A reactor::LoopGroup of N
// loops, one thread each (this thread runs loop 0); a GroupListener hands
// each client to the loop with the fewest (least_connections), where it
// lives and dies; each loop's LoopRoom owns that loop's clients and posts
// their lines to the other loops' rooms. Nothing is shared between the
// loops but the listener's counts.
//
// Loop 0 has the jobs that are one per process: it accepts, owns the signals
// (SIGINT and SIGTERM: GroupLifetime; SIGUSR1: LoopReport), reads the console
// and prints what the server says about itself. When the server has ended,
// every loop is asked to stop; once all have, the summary: the line a
// one-loop chat_server prints, then one line per loop.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <reactor/loop_group.hpp>
#include <reactor/net/group_listener.hpp>

#include "console.hpp"
#include "group_lifetime.hpp"
#include "loop_report.hpp"
#include "loop_room.hpp"
#include "server_support.hpp"

namespace examples {

// Once the server has ended, how long each loop may take to finish what is
// left (the console task's cancellation, posts between loops under way)
// before it is closed; a loop with nothing left ends at once.
inline constexpr std::chrono::seconds kLoopDrain{2};

// GroupListener::listen, or exit 1 with the reason (e.g. the port is taken).
inline std::unique_ptr<reactor::GroupListener> group_listen_or_exit(reactor::LoopGroup& group,
                                                                    const reactor::Address& address,
                                                                    reactor::GroupListener::AcceptCallback on_accept,
                                                                    reactor::GroupListener::Options options) {
    try {
        return reactor::GroupListener::listen(group, address, std::move(on_accept), std::move(options));
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}\n", e.what());
        std::exit(1);
    }
}

inline int run_group_chat(const reactor::Address& address, const ServerOptions& options, LoopRoom::Limits limits,
                          bool console, std::size_t loops) {
    reactor::LoopGroupOptions group_options;
    group_options.loops = loops;
    group_options.loop_options = [&options](std::size_t) { return on(options.backend); };
    group_options.drain = kLoopDrain;
    reactor::LoopGroup group(group_options);

    std::vector<std::unique_ptr<LoopRoom>> owned;
    std::vector<LoopRoom*> rooms;
    for (std::size_t i = 0; i < loops; ++i) {
        owned.push_back(std::make_unique<LoopRoom>(group.loop(i), i, loops, limits));
        rooms.push_back(owned.back().get());
    }
    for (LoopRoom* room : rooms) room->link(rooms);
    reactor::Scheduler& loop0 = group.loop(0);
    // Before listening: a stdin the console cannot read ends the run here.
    futures::Stream input;
    if (console) input = open_console_or_exit(loop0, "chat_server", limits.max_line);

    reactor::GroupListener::Options listen_options;  // least_connections, loop 0 accepting
    listen_options.listener = examples::listen_options(options);         // --exit-after (GroupLifetime)
    listen_options.listener.connection = connection_options(options);  // --idle-timeout
    auto listener = group_listen_or_exit(
        group, address, [&rooms](const reactor::ConnectionPtr& c, std::size_t loop) { rooms[loop]->join(c); },
        listen_options);
    GroupLifetime lifetime(group, *listener, rooms, options, "chat_server");
    LoopReport report(group, rooms, "chat_server");
    // Said by loop 0 (before the console's first step) once group.run() has
    // started every loop's thread: a loop that cannot start ends the server
    // before it claims to listen.
    loop0.call_soon([&] {
        announce(loop0, listener->address());
        fmt::print("chat_server: {} loops, clients spread by least connections\n", loops);
        std::fflush(stdout);
    });
    futures::Future<void> console_task;
    if (console) {
        console_task = futures::spawn(
            loop0, Console(
                       std::move(input), "chat_server", limits.max_line,
                       [&](std::string_view line) { rooms[0]->announce(fmt::format("* server: {}\n", line)); },
                       [&](std::string_view why) {
                           if (lifetime.accepting()) return lifetime.shut_down(fmt::format("console: {}", why));
                           fmt::print("chat_server: console: {}\n", why);
                           std::fflush(stdout);
                       }));
        // The console must not keep loop 0 running once the rest is done.
        lifetime.on_ended([&] { console_task.cancel(); });
    }
    group.run();  // until GroupLifetime asks every loop to stop; then all have ended
    const std::vector<std::uint64_t> handed = listener->handed();
    std::uint64_t aborted = 0;
    for (LoopRoom* room : rooms) aborted += room->aborted();
    fmt::print("chat_server: {} connections, {} aborted\n",
               std::accumulate(handed.begin(), handed.end(), std::uint64_t{0}), aborted);
    for (std::size_t i = 0; i < loops; ++i)
        fmt::print("chat_server: loop {}: {} connections, {} lines heard, {} posts to other loops\n", i,
                   rooms[i]->served(), rooms[i]->lines_heard(), rooms[i]->posts_out());
    std::fflush(stdout);
    return 0;
}

}  // namespace examples
