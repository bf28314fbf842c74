// SPDX-License-Identifier: MIT
// What the example servers share: the --backend, --host, --port, --exit-after,
// --max-seconds, --drain-seconds and --max-connections options (and
// --idle-timeout, for the servers whose protocol has no deadlines of its own;
// --max-handshakes for the TLS ones), the first line they print, the
// lines a reactor::ServerLifetime's reports become (a server that ends on its own,
// for tests and scripts, or on SIGINT/SIGTERM, draining then aborting what is still
// open), and the loop's stats on SIGUSR1. Loop thread only, like everything it touches.
#pragma once

#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/resource.h>
#include <sys/select.h>

#include <algorithm>

#include <fmt/format.h>
#include <futures/task_snapshot.hpp>
#include <reactor/loop_stats.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/net/connection.hpp>
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

// The fds a server may use, found at start: RLIMIT_NOFILE's soft limit, and
// for the select backend at most FD_SETSIZE (select cannot watch an fd above it).
inline std::size_t fd_limit(reactor::Backend backend) {
    std::size_t limit = 1024;
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0)
        limit = rl.rlim_cur == RLIM_INFINITY ? std::size_t{1} << 20 : static_cast<std::size_t>(rl.rlim_cur);
    if (backend == reactor::Backend::select) limit = std::min<std::size_t>(limit, FD_SETSIZE);
    return limit;
}

// --max-connections' default: the fd limit less 64 kept for the rest (the
// listener, the loops' own fds, stdio, certificate files, a log), so that
// clients alone can never take every fd; half of a limit too small for that.
inline constexpr std::size_t kSpareFds = 64;
inline std::size_t default_max_connections(reactor::Backend backend) {
    const std::size_t limit = fd_limit(backend);
    return limit > 2 * kSpareFds ? limit - kSpareFds : std::max<std::size_t>(1, limit / 2);
}

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
    std::size_t max_connections = default_max_connections(backend);  // see max_connections() below
    std::size_t max_handshakes = kAutoHandshakes;  // add_handshake_limit_option; see max_handshakes() below
    static constexpr std::size_t kAutoHandshakes = static_cast<std::size_t>(-1);  // not given: from --max-connections
};

inline void add_server_options(Cli& cli, ServerOptions& o) {
    cli.add_option("--host", o.host, "numeric IPv4 or IPv6 address to listen on");
    cli.add_option("--port", o.port, "TCP port (0: pick a free one)")->check(range(0, 65535));
    add_backend_option(cli, o.backend);
    cli.add_option("--exit-after", o.exit_after,
                   "stop accepting after N connections, exit once they have all closed (0: never)")
        ->check(non_negative);
    cli.add_option("--max-seconds", o.max_seconds,
                   "exit after this many seconds, aborting open connections, so an example never runs "
                   "forever by accident (0: run until killed)")
        ->check(seconds);
    cli.add_option("--drain-seconds", o.drain_seconds,
                   "on SIGINT or SIGTERM, how long open connections may take to finish before they are "
                   "aborted (a second signal aborts them at once)")
        ->check(seconds);
    cli.add_option("--max-connections", o.max_connections,
                   fmt::format("most client connections open at once: beyond it a new "
                               "client is closed at once (default: the fd limit found at start, {}, less {}; "
                               "with --backend select at most FD_SETSIZE ({}) less {}; 0: no limit)",
                               fd_limit(kServerBackend), kSpareFds, FD_SETSIZE, kSpareFds));
}

// --max-handshakes, for the TLS servers: the most TLS handshakes in progress
// at once; beyond it the oldest still in progress is aborted, so clients that
// start handshakes and never finish them cannot keep real ones out
// (reactor::tls::Options::max_handshakes, reactor/tls/handshake_limit.hpp).
inline void add_handshake_limit_option(Cli& cli, ServerOptions& o) {
    cli.add_option("--max-handshakes", o.max_handshakes,
                   "most TLS handshakes in progress at once: beyond it the oldest is aborted (never above "
                   "--max-connections; 0: no limit)")
        ->default_str("a quarter of --max-connections");
}

// --max-connections as the listener gets it: with --backend select, at most
// what select can watch (fd_limit(select) less the spare fds).
inline std::size_t max_connections(const ServerOptions& o) {
    if (o.max_connections == 0 || o.backend != reactor::Backend::select) return o.max_connections;
    return std::min(o.max_connections, default_max_connections(reactor::Backend::select));
}

// --max-handshakes as the TLS layer gets it: a quarter of max_connections()
// unless given (of the default fd-based one with --max-connections 0), and
// never above max_connections().
inline std::size_t max_handshakes(const ServerOptions& o) {
    const std::size_t connections = max_connections(o);
    if (o.max_handshakes == ServerOptions::kAutoHandshakes)
        return std::max<std::size_t>(1, (connections > 0 ? connections : default_max_connections(o.backend)) / 4);
    if (connections == 0 || o.max_handshakes == 0) return o.max_handshakes;
    return std::min(o.max_handshakes, connections);
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

// The listener options of a server with these options: --exit-after and
// --max-connections.
inline reactor::Listener::Options listen_options(const ServerOptions& o) {
    reactor::Listener::Options options;
    options.max_accepts = static_cast<std::uint64_t>(o.exit_after);
    options.max_connections = max_connections(o);
    return options;
}

}  // namespace examples
