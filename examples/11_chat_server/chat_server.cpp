// SPDX-License-Identifier: MIT
// chat_server: line-based chat. Every line a client sends goes to every other
// client as "#<id>: <line>"; joins and departures are announced as "* ..." lines.
//
// Step 11 of the series (examples/README.md). New here: connections talking to
// each other, and what to do with a slow one.
//
// A client that does not read what the others say would make its output
// buffer grow without bound: once more than --max-backlog bytes wait for it,
// it is DISCONNECTED (the others see "* #<id> dropped: too slow"), as IRC
// servers drop on "SendQ exceeded". Pausing the readers that feed it instead
// would let one stalled client silence the room. A line longer than
// --max-line disconnects its sender (gracefully: what it was sent before
// still goes out). One that stays silent (and is sent nothing), or stops
// reading, for --idle-timeout seconds is closed: the others see "* #<id>
// timed out". At most --max-connections clients are in the room at once:
// beyond it a new one is closed at once, before it joins (server_support.hpp).
//
// With --console, every line typed on the server's stdin goes to every client
// as "* server: <line>" (console.hpp), and the end of input (Ctrl-D) shuts
// the server down as SIGTERM does. Without it, stdin is never touched.
//
// With --loops N (0: one per CPU the process may use), the clients are
// spread over N loops (--spreading), one thread each: each loop owns its
// clients in a room of its own (loop_room.hpp), and a line reaches the others
// by posts between loops, in order per sender. The default, one loop, is the
// same server as a group of one (examples::GroupServer), on the main thread.
//
// Loop 0 has the jobs that are one per process: it accepts (but with
// --spreading reuse_port, where every loop does), owns the signals
// (SIGINT and SIGTERM: the server's end; SIGUSR1), reads the console and
// prints what the server says about itself. The end comes once the listener
// is closed and every loop's last client has gone; then the summary: the
// total, and with several loops one line per loop.
//
//   $ chat_server          then, in two terminals:   nc 127.0.0.1 7001
//   kill -USR1 <pid>   prints the loop's stats and live tasks, and carries on (server_support.hpp);
//                      with several loops, one line per loop, each loop's room describing itself
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <deque>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>

#include "cli.hpp"
#include "console.hpp"
#include "group_server.hpp"
#include "loop_room.hpp"
#include "program.hpp"
#include "server_support.hpp"

namespace {

// GroupOptions::loop_drain: what is left once the server has ended (the
// console task's cancellation, posts between loops under way) gets this long.
constexpr std::chrono::seconds kLoopDrain{2};

int serve(const reactor::Address& address, const examples::ServerOptions& options, examples::GroupOptions group,
          examples::LoopRoom::Limits limits, bool console) {
    const std::size_t loops = group.loop_count();
    group.loop_drain = kLoopDrain;
    examples::GroupServer server(options, group, "chat_server");
    std::deque<examples::LoopRoom> owned;  // one per loop, each used on its own
    std::vector<examples::LoopRoom*> rooms;
    for (std::size_t i = 0; i < loops; ++i)
        rooms.push_back(&owned.emplace_back(server.group().loop(i), i, loops, limits));
    for (examples::LoopRoom* room : rooms) room->link(rooms);
    reactor::Scheduler& loop0 = server.group().loop(0);
    futures::Future<void> console_task;
    if (console) {
        auto ended = [&](std::string_view why) {
            // The server shuts down as on SIGTERM, unless it has stopped
            // accepting already (--exit-after, or a signal came first).
            const reactor::ListenerPtr acceptor = server.listener().listener_on(0);
            if (acceptor && acceptor->is_listening()) return server.shut_down(fmt::format("console: {}", why));
            examples::say(fmt::format("chat_server: console: {}", why));
        };
        // Before listening: a stdin the console cannot read ends the run
        // here. The task's first step only starts a read, on loop 0.
        console_task = futures::spawn(loop0, examples::Console(loop0, *rooms[0], limits.max_line, ended));
        // The console must not keep loop 0 running once the rest is done.
        server.on_ended([&] { console_task.cancel(); });
    }

    reactor::Listener::Options listen_options = examples::listen_options(options);  // --exit-after
    listen_options.connection = examples::connection_options(options);              // --idle-timeout
    server.listen(address, [&rooms](const reactor::ConnectionPtr& c, std::size_t loop) { rooms[loop]->join(c); },
                  listen_options);
    server.describe_loops([&rooms](std::size_t i) { return rooms[i]->describe(); });
    if (loops > 1)  // after the line GroupServer has loop 0 print when run() starts
        loop0.call_soon([loops, by = group.spreading_name()] {
            examples::say(fmt::format("chat_server: {} loops, clients spread by {}", loops, by));
        });
    server.run();  // until the server has ended and every loop has stopped
    fmt::print("chat_server: {} connections, {} aborted\n", server.connections(), server.aborted());
    for (std::size_t i = 0; loops > 1 && i < loops; ++i)  // with one loop, the total says it all
        fmt::print("chat_server: loop {}: {} connections, {} lines heard, {} posts to other loops\n", i,
                   server.listener().handed()[i], rooms[i]->lines_heard(), rooms[i]->posts_out());
    std::fflush(stdout);
    return server.exit_status();
}

int run(int argc, char** argv) {
    examples::Cli cli("chat_server", "Line-based chat: each line is sent to every other client.");
    examples::ServerOptions options(7001);
    examples::add_server_options(cli, options);
    examples::add_idle_timeout_option(cli, options);
    examples::LoopRoom::Limits limits{.max_line = 4096, .max_backlog = 256 * 1024};
    cli.add_option("--max-line", limits.max_line, "longest line accepted, in bytes; longer disconnects the sender")
        ->check(examples::range(std::size_t{1}, std::size_t{1} << 30));
    cli.add_option("--max-backlog", limits.max_backlog,
                   "bytes allowed to wait for a slow client before it is disconnected")
        ->check(examples::range(std::size_t{4}, std::size_t{1} << 30));
    bool console = false;
    cli.add_flag("--console", console,
                 "announce each line typed on stdin to every client as \"* server: <line>\"; the end of input "
                 "(Ctrl-D) shuts the server down as SIGTERM does");
    examples::GroupOptions group;  // --loops, --spreading
    examples::add_group_options(cli, group);
    cli.parse_or_exit(argc, argv);
    return serve(examples::listen_address(cli, options), options, group, limits, console);
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("chat_server", run, argc, argv); }
