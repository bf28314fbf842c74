// SPDX-License-Identifier: MIT
// What the example servers share: the --backend, --host, --port, --exit-after,
// --max-seconds and --drain-seconds options (and --idle-timeout, for the
// servers whose protocol has no deadlines of its own), the first line they print, the
// lines a reactor::ServerLifetime's reports become (a server that ends on its own,
// for tests and scripts, or on SIGINT/SIGTERM, draining then aborting what is still
// open), and the loop's stats on SIGUSR1. Loop thread only, like everything it touches.
#pragma once

#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <futures/task_snapshot.hpp>
#include <reactor/loop_group.hpp>
#include <reactor/loop_stats.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/group_listener.hpp>
#include <reactor/net/group_server_lifetime.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/net/report_limiter.hpp>
#include <reactor/net/server_lifetime.hpp>

#include "cli.hpp"

namespace examples {

// The servers' default backend. select(2) watches fds below FD_SETSIZE only,
// so a select server stops accepting near a thousand clients, the first limit
// a load test would hit; epoll has none. (The Scheduler's own default stays
// select, the reference backend; countdown keeps it too.)
#ifdef __linux__
inline constexpr reactor::Backend kServerBackend = reactor::Backend::epoll;
#else
inline constexpr reactor::Backend kServerBackend = reactor::Backend::poll;
#endif

// The options every example server takes. Each server picks its own default
// port; its client, if any, uses the same one.
struct ServerOptions {
    explicit ServerOptions(std::uint16_t default_port) : port(default_port) {}

    std::string host = "127.0.0.1";
    std::uint16_t port;
    reactor::Backend backend = kServerBackend;
    long exit_after = 0;
    double max_seconds = 600;
    double drain_seconds = 5;
    double idle_timeout = 300;  // add_idle_timeout_option: the echo and chat servers
};

inline void add_server_options(Cli& cli, ServerOptions& o) {
    cli.add_option("--host", o.host, "numeric IPv4 or IPv6 address to listen on");
    cli.add_option("--port", o.port, "TCP port (0: pick a free one)")->check(CLI::Range(0, 65535));
    add_backend_option(cli, o.backend);
    cli.add_option("--exit-after", o.exit_after,
                   "stop accepting after N connections, exit once they have all closed (0: never)")
        ->check(CLI::NonNegativeNumber);
    cli.add_option("--max-seconds", o.max_seconds,
                   "exit after this many seconds, aborting open connections, so an example never runs "
                   "forever by accident (0: run until killed)")
        ->check(seconds);
    cli.add_option("--drain-seconds", o.drain_seconds,
                   "on SIGINT or SIGTERM, how long open connections may take to finish before they are "
                   "aborted (a second signal aborts them at once)")
        ->check(seconds);
}

// --idle-timeout: a connection that makes no progress for this long is
// ended, so silent clients cannot hold every fd (2,000 idle connections would
// lock out everyone else under `ulimit -n 1024`). No progress means nothing
// received and nothing sent: the connection is closed gracefully (its
// buffered output flushed); or buffered output the client does not read:
// it is aborted, since it cannot be flushed. http_hello has its own
// per-request timeouts instead.
inline void add_idle_timeout_option(Cli& cli, ServerOptions& o) {
    cli.add_option("--idle-timeout", o.idle_timeout,
                   "close a connection that sends nothing and is sent nothing for this many seconds, or that "
                   "does not read what it is sent for as long (0: never)")
        ->check(seconds);
}

// The connection deadlines --idle-timeout asks for (reactor::ConnectionOptions:
// idle_timeout, and write_timeout for output that makes no progress).
inline reactor::ConnectionOptions connection_options(const ServerOptions& o) {
    reactor::ConnectionOptions options;
    const auto timeout = std::chrono::duration_cast<reactor::Duration>(std::chrono::duration<double>(o.idle_timeout));
    options.idle_timeout = timeout;
    options.write_timeout = timeout;
    return options;
}

// --host and --port as an address; exits 2 if --host is not a numeric address.
inline reactor::Address address_or_exit(const Cli& cli, const std::string& host, std::uint16_t port) {
    try {
        return reactor::Address::parse(host, port);
    } catch (const std::exception& e) {
        cli.fail(fmt::format("--host: {}", e.what()));
    }
}
inline reactor::Address listen_address(const Cli& cli, const ServerOptions& o) {
    return address_or_exit(cli, o.host, o.port);
}

// Listener::listen, or exit 1 with the reason (e.g. the port is taken).
inline reactor::ListenerPtr listen_or_exit(reactor::Scheduler& sched, const reactor::Address& address,
                                              reactor::Listener::AcceptCallback on_accept,
                                              reactor::Listener::Options options = {}) {
    try {
        return reactor::Listener::listen(sched, address, std::move(on_accept), std::move(options));
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}\n", e.what());
        std::exit(1);
    }
}

// The first stdout line of every example server, which tests and scripts
// wait for: "listening on 127.0.0.1:7000 (epoll)", the bound address (the real
// port when 0 was asked), then the backend the loop really runs.
inline void announce(const reactor::Scheduler& sched, const reactor::Address& bound) {
    fmt::print("listening on {} ({})\n", bound.to_string(), sched.selector().name());
    std::fflush(stdout);
}

// `kill -USR1 <pid>` makes a server print its loop's stats
// (reactor::format_stats) as one block of stdout lines, each starting with
// "<name>: ", then carry on: stdout, like the servers' other lines about
// themselves (the signal lines, the summary), so a script reads one stream.
// Timings are there when the server runs with REACTOR_DEBUG=1. Then the
// live tasks (futures::all_tasks): "<name>: N live task(s)", and one line per
// task with where it was spawned, its state and what it waits on.
inline void print_stats_on_sigusr1(reactor::Scheduler& sched, std::string name) {
    sched.add_signal_handler(SIGUSR1, [&sched, name = std::move(name)] {
        fmt::print("{}", reactor::format_stats(sched.stats(), name + ": "));
        const std::vector<futures::TaskInfo> tasks = futures::all_tasks(sched);
        fmt::print("{}: {} live task(s)\n", name, tasks.size());
        for (const futures::TaskInfo& t : tasks) {
            fmt::print("{}:   task spawned at {}:{}: {}\n", name, t.spawned_at.file_name(), t.spawned_at.line(),
                       t.to_string());
        }
        std::fflush(stdout);
    });
}

// How a callback server ends: reactor::ServerLifetime (on SIGINT or SIGTERM,
// or when the listener fails for good: stop accepting, give the open
// connections --drain-seconds, abort the rest; a second signal aborts at once;
// --max-seconds aborts everything), with the lines the example servers print
// about it. --exit-after is the listener's own max_accepts (listen_options()).
// In every case run() returns once the last connection has closed, and main()
// prints its summary and exits 0: a stop asked for is not a failure.
class ServerLifetime {
public:
    ServerLifetime(reactor::Scheduler& sched, const ServerOptions& o, std::string name)
        : sched_(sched), name_(std::move(name)) {
        options_.drain_time = std::chrono::duration_cast<reactor::Duration>(std::chrono::duration<double>(o.drain_seconds));
        if (o.max_seconds > 0)
            options_.max_run_time = std::chrono::duration_cast<reactor::Duration>(std::chrono::duration<double>(o.max_seconds));
        print_stats_on_sigusr1(sched, name_);
    }

    void set_listener(reactor::ListenerPtr listener) {
        lifetime_.emplace(sched_, std::move(listener), options_,
                          [this](const reactor::ServerLifetime::Report& r) { print(r); });
    }

    // Connections aborted because a shutdown did not wait for them.
    long aborted() const { return lifetime_ ? static_cast<long>(lifetime_->aborted()) : 0; }

    // What main() returns: 0 for an end asked for (signals, --exit-after,
    // --max-seconds), 1 if the listener failed (its line is on stderr).
    int exit_status() const { return lifetime_ && lifetime_->failed() ? 1 : 0; }

    // The orderly end for a program's own reason (chat_server's console at
    // Ctrl-D): `why` begins the line it prints.
    void shut_down(std::string_view why) { lifetime_->shut_down(why); }

private:
    void print(const reactor::ServerLifetime::Report& r) {
        using Kind = reactor::ServerLifetime::Report::Kind;
        using Cause = reactor::ServerLifetime::Report::Cause;
        switch (r.kind) {
        case Kind::draining:
            fmt::print("{}: {}: stopped accepting; draining {} connection(s) for up to {}s\n", name_, r.why,
                       r.connections, std::chrono::duration<double>(options_.drain_time).count());
            std::fflush(stdout);
            return;
        case Kind::aborting:
            if (r.cause != Cause::stopped_again) return;  // the drain or run time is over: quietly
            fmt::print("{}: {} again: aborting {} connection(s)\n", name_, r.why, r.connections);
            std::fflush(stdout);
            return;
        case Kind::accept_trouble: {
            // Out of fds: one stderr line, rate-limited; accepting resumes by itself.
            std::uint64_t left_out = 0;
            if (!accept_reports_.admit(sched_.now(), left_out)) return;
            print_trouble(r, left_out);
            return;
        }
        case Kind::listener_failed: print_trouble(r, 0); return;  // the drain follows
        case Kind::ended: return;
        }
    }
    void print_trouble(const reactor::ServerLifetime::Report& r, std::uint64_t left_out) {
        fmt::print(stderr, "{}: {} ({}){}\n", name_, r.why, r.error.message(),
                   left_out == 0 ? std::string() : fmt::format("; {} more since the last report", left_out));
        std::fflush(stderr);
    }

    reactor::Scheduler& sched_;
    std::string name_;
    reactor::ServerLifetime::Options options_;
    reactor::ReportLimiter accept_reports_{std::chrono::seconds(10)};
    std::optional<reactor::ServerLifetime> lifetime_;
};

// The listener options of a server with these options: --exit-after.
inline reactor::Listener::Options listen_options(const ServerOptions& o) {
    reactor::Listener::Options options;
    options.max_accepts = static_cast<std::uint64_t>(o.exit_after);
    return options;
}

// --loops and --spreading: how many loops serve, and how connections are
// spread over them (reactor::GroupListener).
struct GroupOptions {
    std::size_t loops = 1;
    reactor::Spreading spreading = reactor::Spreading::least_connections;

    // --loops 0: one per CPU this process may run on.
    std::size_t loop_count() const { return loops == 0 ? reactor::LoopGroup::available_cpus() : loops; }
};

inline void add_group_options(Cli& cli, GroupOptions& g) {
    cli.add_option("--loops", g.loops,
                   "event loops serving the connections, each on a thread of its own (1: one loop, on the main "
                   "thread; 0: one per CPU this process may use)")
        ->check(CLI::Range(0, 1024));
    cli.add_option_function<std::string>(
           "--spreading",
           [&g](const std::string& name) {
               g.spreading = name == "round_robin" ? reactor::Spreading::round_robin
                             : name == "reuse_port" ? reactor::Spreading::reuse_port
                                                    : reactor::Spreading::least_connections;
           },
           "with --loops above 1, how connections are spread: least_connections (to the loop with the fewest), "
           "round_robin, or reuse_port (one SO_REUSEPORT listener per loop, the kernel picks)")
        ->check(CLI::IsMember({"least_connections", "round_robin", "reuse_port"}))
        ->default_str("least_connections");
}

// A server on several loops: the group (loop 0 is the main thread's, under
// run()), its listener, and its end, with the lines the single-loop
// ServerLifetime prints, the same --exit-after, --max-seconds and
// --drain-seconds. --exit-after with reuse_port counts the connections of
// every loop and closes the listeners at the Nth: a few more, accepted by
// other loops meanwhile, may be served too. Made, listened and run on the
// main thread.
class GroupServer {
public:
    // `unit` names what the drain lines count: "connection(s)", or
    // "client(s)" for echo_server_streams, as on one loop.
    GroupServer(const ServerOptions& o, const GroupOptions& g, std::string name, std::string unit = "connection(s)")
        : options_(o), spreading_(g.spreading), group_(group_options(o, g)), name_(std::move(name)),
          unit_(std::move(unit)) {}

    reactor::LoopGroup& group() { return group_; }
    std::size_t size() const { return group_.size(); }

    // Listens (exit 1 with the reason if it cannot), prints the first line,
    // and arranges the end and SIGUSR1. `on_accept` runs on the
    // connection's loop, with that loop's index.
    void listen(const reactor::Address& address, reactor::GroupListener::AcceptCallback on_accept,
                reactor::Listener::Options listener_options) {
        reactor::GroupListener::Options lo;
        lo.spreading = spreading_;
        lo.listener = std::move(listener_options);
        const auto exit_after = static_cast<std::uint64_t>(options_.exit_after);
        if (spreading_ == reactor::Spreading::reuse_port && exit_after > 0) {
            lo.listener.max_accepts = 0;  // one count for every loop's listener, below
            on_accept = [this, exit_after, inner = std::move(on_accept)](const reactor::ConnectionPtr& c,
                                                                         std::size_t loop) {
                if (accepted_.fetch_add(1) + 1 == exit_after) listener_->close();
                inner(c, loop);
            };
        }
        try {
            listener_ = reactor::GroupListener::listen(group_, address, std::move(on_accept), std::move(lo));
        } catch (const std::exception& e) {
            fmt::print(stderr, "{}\n", e.what());
            std::exit(1);
        }
        reactor::GroupServerLifetime::Options lifetime;
        lifetime.drain_time = seconds_of(options_.drain_seconds);
        if (options_.max_seconds > 0) lifetime.max_run_time = seconds_of(options_.max_seconds);
        lifetime_.emplace(group_, *listener_, lifetime,
                          [this](const reactor::GroupServerLifetime::Report& r) { print(r); });
        lifetime_->on_ended([this] { group_.request_stop(); });
        print_stats_on_sigusr1();
        announce(group_.loop(0), listener_->address());
    }

    // Loop 0 on this thread, the others on theirs, until the end.
    void run() { group_.run(); }

    // After run(): the totals, and "; loop 0: 3 connections, 0 aborted; loop
    // 1: ..." with `extra(i)` after each loop's connections (", 120 bytes
    // echoed"), for the summary line.
    std::uint64_t connections() const { return ended_.total().accepted; }
    std::uint64_t aborted() const { return ended_.total().aborted; }
    template <class Extra>
    std::string per_loop(Extra extra) const {
        std::string out;
        for (std::size_t i = 0; i < ended_.loops.size(); ++i)
            out += fmt::format("; loop {}: {} connections{}, {} aborted", i, ended_.loops[i].accepted, extra(i),
                               ended_.loops[i].aborted);
        return out;
    }

private:
    static reactor::Duration seconds_of(double s) {
        return std::chrono::duration_cast<reactor::Duration>(std::chrono::duration<double>(s));
    }
    static reactor::LoopGroupOptions group_options(const ServerOptions& o, const GroupOptions& g) {
        reactor::LoopGroupOptions options;
        options.loops = g.loop_count();
        options.loop_options = [backend = o.backend](std::size_t) { return on(backend); };
        return options;
    }

    // On loop 0: the same lines as ServerLifetime's, and the end's counts.
    void print(const reactor::GroupServerLifetime::Report& r) {
        using Kind = reactor::GroupServerLifetime::Report::Kind;
        using Cause = reactor::GroupServerLifetime::Report::Cause;
        switch (r.kind) {
        case Kind::draining:
            fmt::print("{}: {}: stopped accepting; draining {} {} for up to {}s\n", name_, r.why, r.total().open,
                       unit_, options_.drain_seconds);
            break;
        case Kind::aborting:
            if (r.cause != Cause::stopped_again) return;  // the drain or run time is over: quietly
            fmt::print("{}: {} again: aborting {} {}\n", name_, r.why, r.total().open, unit_);
            break;
        case Kind::ended: ended_ = {r.kind, r.cause, {}, r.loops}; return;
        }
        std::fflush(stdout);
    }

    // `kill -USR1 <pid>`: one line per loop, "<name>: loop I: N live
    // connection(s), ..." from that loop's own stats, gathered on loop 0 and
    // printed there in loop order.
    void print_stats_on_sigusr1() {
        group_.loop(0).add_signal_handler(SIGUSR1, [this] {
            struct Gathered {
                std::vector<std::string> lines;
                std::size_t left;
            };
            auto gathered = std::make_shared<Gathered>(Gathered{std::vector<std::string>(size()), size()});
            for (std::size_t i = 0; i < size(); ++i) {
                (void)group_.loop(i).try_call_soon_threadsafe([this, i, gathered] {
                    const reactor::LoopStats st = group_.loop(i).stats();
                    std::string line = fmt::format(
                        "{}: loop {}: {} live connection(s), {} accepted, {} iterations, {} callbacks run, {} io "
                        "events, {} timers fired, {} posts taken, {} wake-up writes\n",
                        name_, i, listener_->connections_on(i).size(), listener_->handed()[i], st.iterations,
                        st.callbacks_run, st.io_events, st.timers_fired, st.posts_taken, st.wakeup_writes);
                    (void)group_.loop(0).try_call_soon_threadsafe([i, gathered, line = std::move(line)]() mutable {
                        gathered->lines[i] = std::move(line);
                        if (--gathered->left > 0) return;
                        for (const std::string& l : gathered->lines) fmt::print("{}", l);
                        std::fflush(stdout);
                    });
                });
            }
        });
    }

    const ServerOptions& options_;
    reactor::Spreading spreading_;
    reactor::LoopGroup group_;
    std::string name_;
    std::string unit_;
    std::unique_ptr<reactor::GroupListener> listener_;
    std::optional<reactor::GroupServerLifetime> lifetime_;
    std::atomic<std::uint64_t> accepted_{0};  // --exit-after with reuse_port: every loop counts here
    reactor::GroupServerLifetime::Report ended_;
};

}  // namespace examples
