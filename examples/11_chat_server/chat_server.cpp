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
// (default 300) is closed: the others see "* #<id> timed out".
//
// With --console, every line typed on the server's stdin goes to every client
// as "* server: <line>" (console.hpp), and the end of input (Ctrl-D) shuts
// the server down as SIGTERM does. Without it, stdin is never touched.
//
//   $ chat_server          then, in two terminals:   nc 127.0.0.1 7001
//   kill -USR1 <pid>   prints the loop's stats and live tasks, and carries on (server_support.hpp)
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <reactor/net/line_reader.hpp>
#include <reactor/net/listener.hpp>

#include "cli.hpp"
#include "console.hpp"
#include "program.hpp"
#include "server_support.hpp"

using reactor::Connection;

namespace {

class ChatRoom {
public:
    ChatRoom(std::size_t max_line, std::size_t max_backlog) : max_line_(max_line), max_backlog_(max_backlog) {}

    void join(const reactor::ConnectionPtr& c) {
        Member& m = members_[c.get()];
        m.id = ++last_id_;
        c->set_water_marks(max_backlog_, max_backlog_ / 4);
        c->set_high_water_callback([this](Connection& c) { drop(c, "too slow"); });
        // One call per line, without its "\n" or "\r\n"; a line longer than
        // --max-line closes the connection (CloseKind::line_too_long: see leave).
        reactor::LineReader::attach(
            c,
            [this](Connection& c, std::string_view line) {
                broadcast(&c, fmt::format("#{}: {}\n", members_.at(&c).id, line));
            },
            {.max_length = max_line_});
        c->set_close_callback([this](Connection& c, const reactor::CloseReason& why) { leave(c, why); });
        c->write(fmt::format("* you are #{}; {} other(s) here\n", m.id, members_.size() - 1));
        broadcast(c.get(), fmt::format("* #{} joined\n", m.id));
    }

    // To every client: the server's own lines.
    void announce(const std::string& text) { broadcast(nullptr, text); }

private:
    struct Member {
        std::uint64_t id = 0;
        bool dropped = false;
    };

    // To every client but `from` (null: to all).
    void broadcast(const Connection* from, const std::string& text) {
        // write() may call a high-water callback, which only aborts: the
        // member set changes later, in close callbacks, so iterating is safe.
        for (auto& [conn, member] : members_)
            if (conn != from && !member.dropped) conn->write(text);
    }

    void drop(Connection& c, std::string_view why) {
        Member& m = members_.at(&c);
        if (m.dropped) return;
        m.dropped = true;
        fmt::print(stderr, "chat_server: dropping #{}: {}\n", m.id, why);
        c.abort();
        broadcast(&c, fmt::format("* #{} dropped: {}\n", m.id, why));
    }

    // --idle-timeout ended it (silent, or not reading what it was sent), its
    // line was too long, or it left.
    void leave(Connection& c, const reactor::CloseReason& why) {
        if (why.kind == reactor::CloseKind::line_too_long) drop(c, "line too long");  // already closed: drop() tells
        const Member m = members_.extract(&c).mapped();
        const bool timed_out = why.kind == reactor::CloseKind::idle_timeout || why.kind == reactor::CloseKind::write_timeout;
        if (!m.dropped) broadcast(&c, fmt::format("* #{} {}\n", m.id, timed_out ? "timed out" : "left"));
    }

    std::size_t max_line_, max_backlog_;
    std::unordered_map<Connection*, Member> members_;  // valid until each close callback
    std::uint64_t last_id_ = 0;
};

// The console's input ended: the server shuts down as on SIGTERM, unless it
// has stopped accepting already (--exit-after, or a signal came first).
void console_ended(examples::ServerLifetime& lifetime, const reactor::Listener& listener, std::string_view why) {
    if (listener.is_listening()) return lifetime.shut_down(fmt::format("console: {}", why));
    fmt::print("chat_server: console: {}\n", why);
    std::fflush(stdout);
}

int run(int argc, char** argv) {
    examples::Cli cli("chat_server", "Line-based chat: each line is sent to every other client.");
    examples::ServerOptions options(7001);
    examples::add_server_options(cli, options);
    examples::add_idle_timeout_option(cli, options);
    std::size_t max_line = 4096, max_backlog = 256 * 1024;
    cli.add_option("--max-line", max_line, "longest line accepted, in bytes; longer disconnects the sender")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
    cli.add_option("--max-backlog", max_backlog, "bytes allowed to wait for a slow client before it is disconnected")
        ->check(CLI::Range(std::size_t{4}, std::size_t{1} << 30));
    bool console = false;
    cli.add_flag("--console", console,
                 "announce each line typed on stdin to every client as \"* server: <line>\"; the end of input "
                 "(Ctrl-D) shuts the server down as SIGTERM does");
    cli.parse_or_exit(argc, argv);
    reactor::Scheduler sched(examples::on(options.backend));
    examples::ServerLifetime lifetime(sched, options, "chat_server");
    ChatRoom room(max_line, max_backlog);
    // Before listening: a stdin the console cannot read ends the run here.
    futures::Stream input;
    if (console) input = examples::open_console_or_exit(sched, "chat_server", max_line);

    reactor::Listener::Options listen_options = examples::listen_options(options);  // --exit-after
    listen_options.connection = examples::connection_options(options);  // --idle-timeout
    auto listener = examples::listen_or_exit(sched, examples::listen_address(cli, options),
                                             [&](const reactor::ConnectionPtr& c) { room.join(c); }, listen_options);
    lifetime.set_listener(listener);
    futures::Future<void> console_task;
    if (console) {
        console_task = futures::spawn(
            sched, examples::Console(
                       std::move(input), "chat_server", max_line,
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

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("chat_server", run, argc, argv); }
