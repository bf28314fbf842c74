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
// would let one stalled client silence the room. Lines are cut by a
// reactor::LineReader: a line longer than --max-line disconnects its sender
// (gracefully: what it was sent before still goes out). One that stays
// silent (and is sent nothing), or stops reading, for --idle-timeout seconds
// (default 300) is closed: the others see "* #<id> timed out". At most
// --max-connections clients (default: the fd limit found at start, less 64)
// are in the room at once: beyond it a new one is closed at once, before it
// joins (server_support.hpp).
//
// With --console, every line typed on the server's stdin goes to every client
// as "* server: <line>" (console.hpp), and the end of input (Ctrl-D) shuts
// the server down as SIGTERM does. Without it, stdin is never touched.
//
// With --loops N (0: one per CPU the process may use), the clients are
// spread over N loops, one thread each (group_chat.hpp): each loop owns its
// clients in a room of its own (loop_room.hpp), and a line reaches the others
// by posts between loops, in order per sender. The default, one loop, is the
// program as it was before loop groups.
//
//   $ chat_server          then, in two terminals:   nc 127.0.0.1 7001
//   kill -USR1 <pid>   prints the loop's stats and live tasks, and carries on (server_support.hpp);
//                      with several loops, one line per loop (group_chat.hpp)
#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <reactor/loop_group.hpp>
#include <reactor/net/listener.hpp>

#include "cli.hpp"
#include "console.hpp"
#include "group_chat.hpp"
#include "loop_room.hpp"
#include "program.hpp"
#include "server_support.hpp"

namespace {

// More loops than this is a typing error rather than a machine: each one is
// a thread and a few fds.
constexpr std::size_t kMaxLoops = 1024;

// The console's input ended: the server shuts down as on SIGTERM, unless it
// has stopped accepting already (--exit-after, or a signal came first).
void console_ended(examples::ServerLifetime& lifetime, const reactor::Listener& listener, std::string_view why) {
    if (listener.is_listening()) return lifetime.shut_down(fmt::format("console: {}", why));
    fmt::print("chat_server: console: {}\n", why);
    std::fflush(stdout);
}

// Today's server: one loop, the whole room on it.
int run_one_loop(const examples::Cli& cli, const examples::ServerOptions& options, examples::LoopRoom::Limits limits,
                 bool console) {
    reactor::Scheduler sched(examples::on(options.backend));
    examples::ServerLifetime lifetime(sched, options, "chat_server");
    examples::LoopRoom room(sched, 0, 1, limits);
    // Before listening: a stdin the console cannot read ends the run here.
    futures::Stream input;
    if (console) input = examples::open_console_or_exit(sched, "chat_server", limits.max_line);

    reactor::Listener::Options listen_options = examples::listen_options(options);  // --exit-after
    listen_options.connection = examples::connection_options(options);  // --idle-timeout
    auto listener = examples::listen_or_exit(sched, examples::listen_address(cli, options),
                                             [&](const reactor::ConnectionPtr& c) { room.join(c); }, listen_options);
    lifetime.set_listener(listener);
    futures::Future<void> console_task;
    if (console) {
        console_task = futures::spawn(
            sched, examples::Console(
                       std::move(input), "chat_server", limits.max_line,
                       [&](std::string_view line) { room.announce(fmt::format("* server: {}\n", line)); },
                       [&](std::string_view why) { console_ended(lifetime, *listener, why); }));
        // The console must not keep the loop running once the rest is done.
        listener->wait_closed([&] { console_task.cancel(); });
    }
    examples::announce(sched, listener->address());

    sched.run();
    fmt::print("chat_server: {} connections, {} aborted\n", listener->accepted(), lifetime.aborted());
    std::fflush(stdout);
    return lifetime.exit_status();
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
    std::size_t loops = 1;
    cli.add_option("--loops", loops,
                   "event loops, one thread each, the clients spread over them (0: one per CPU this process may "
                   "use); a line reaches the clients of every loop, in order per sender")
        ->check(examples::range(std::size_t{0}, kMaxLoops));
    cli.parse_or_exit(argc, argv);
    if (loops == 0) loops = reactor::LoopGroup::available_cpus();
    if (loops == 1) return run_one_loop(cli, options, limits, console);
    return examples::run_group_chat(examples::listen_address(cli, options), options, limits, console, loops);
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("chat_server", run, argc, argv); }
