// SPDX-License-Identifier: MIT
// group_chat.hpp: chat_server --loops N, N > 1. An examples::GroupServer
// (group_server.hpp: a reactor::LoopGroup of N loops, one thread each, this
// thread running loop 0; a GroupListener handing each client to the loop
// with the fewest; a reactor::GroupServerLifetime ending them all) whose
// loops each own their clients in a LoopRoom of their own, which posts their
// lines to the other loops' rooms. Nothing is shared between the loops but
// the listener's counts.
//
// Loop 0 has the jobs that are one per process: it accepts, owns the signals
// (SIGINT and SIGTERM: the lifetime; SIGUSR1: a line per loop, each loop's
// room describing itself), reads the console and prints
// what the server says about itself. The end comes once every listener is
// closed and every loop's last client has gone (a departure is relayed, on
// its loop, before the lifetime hears of that loop again); every loop is
// then asked to stop; once all have, the summary: the line a one-loop
// chat_server prints, then one line per loop.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <reactor/loop_stats.hpp>

#include "console.hpp"
#include "group_server.hpp"
#include "loop_room.hpp"
#include "server_support.hpp"

namespace examples {

// Once the server has ended, how long each loop may take to finish what is
// left (the console task's cancellation, posts between loops under way)
// before it is closed; a loop with nothing left ends at once.
inline constexpr std::chrono::seconds kLoopDrain{2};

inline int run_group_chat(const reactor::Address& address, const ServerOptions& options, LoopRoom::Limits limits,
                          bool console, std::size_t loops) {
    GroupServer server(options, GroupOptions{loops, reactor::Spreading::least_connections, kLoopDrain}, "chat_server");
    std::vector<std::unique_ptr<LoopRoom>> owned;
    std::vector<LoopRoom*> rooms;
    for (std::size_t i = 0; i < loops; ++i) {
        owned.push_back(std::make_unique<LoopRoom>(server.group().loop(i), i, loops, limits));
        rooms.push_back(owned.back().get());
    }
    for (LoopRoom* room : rooms) room->link(rooms);
    reactor::Scheduler& loop0 = server.group().loop(0);
    // Before listening: a stdin the console cannot read ends the run here.
    futures::Stream input;
    if (console) input = open_console_or_exit(loop0, "chat_server", limits.max_line);

    reactor::Listener::Options listen_options = examples::listen_options(options);  // --exit-after
    listen_options.connection = connection_options(options);                        // --idle-timeout
    server.listen(address, [&rooms](const reactor::ConnectionPtr& c, std::size_t loop) { rooms[loop]->join(c); },
                  listen_options);
    server.describe_loops([&rooms](std::size_t i) {  // SIGUSR1, on loop i
        const LoopRoom& room = *rooms[i];
        const reactor::LoopStats s = room.loop().stats();
        return fmt::format("{} client(s), {} line(s) heard, {} from other loops, {} post(s) out; {} iterations, {} "
                           "callbacks run, {} fd events, {} posts taken, {} wake-up writes",
                           room.clients(), room.lines_heard(), room.lines_from_peers(), room.posts_out(),
                           s.iterations, s.callbacks_run, s.io_events, s.posts_taken, s.wakeup_writes);
    });
    // After the line GroupServer has loop 0 print when run() starts.
    loop0.call_soon([loops] {
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
                           // Unless it stopped accepting already (--exit-after, a signal).
                           const reactor::ListenerPtr acceptor = server.listener().listener_on(0);
                           if (acceptor && acceptor->is_listening())
                               return server.shut_down(fmt::format("console: {}", why));
                           fmt::print("chat_server: console: {}\n", why);
                           std::fflush(stdout);
                       }));
        // The console must not keep loop 0 running once the rest is done.
        server.on_ended([&] { console_task.cancel(); });
    }
    server.run();  // until the lifetime asks every loop to stop; then all have ended
    fmt::print("chat_server: {} connections, {} aborted\n", server.connections(), server.aborted());
    for (std::size_t i = 0; i < loops; ++i)
        fmt::print("chat_server: loop {}: {} connections, {} lines heard, {} posts to other loops\n", i,
                   rooms[i]->served(), rooms[i]->lines_heard(), rooms[i]->posts_out());
    std::fflush(stdout);
    return 0;
}

}  // namespace examples
