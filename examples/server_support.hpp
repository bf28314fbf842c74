// SPDX-License-Identifier: MIT
// What the example servers share: the --backend, --host, --port, --exit-after,
// --max-seconds and --drain-seconds options (and --idle-timeout, for the
// servers whose protocol has no deadlines of its own), the first line they print, a
// ServerLifetime that ends a server on its own (for tests and scripts) or on
// SIGINT/SIGTERM, draining then aborting what is still open, and the loop's
// stats on SIGUSR1. Loop thread only, like everything it touches.
#pragma once

#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <futures/task_snapshot.hpp>
#include <reactor/loop_stats.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/net/report_limiter.hpp>

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

// How a callback server ends: on its own (--exit-after, --max-seconds), or
// on SIGINT or SIGTERM, gracefully. The first signal stops accepting, says so
// on one line, and gives the open connections --drain-seconds to finish by
// themselves (a request already under way is answered); what is still open
// then is aborted. A second signal during the drain aborts them at once. In
// every case run() returns once the last connection has closed, and main()
// prints its summary and exits 0: a stop asked for is not a failure.
class ServerLifetime {
public:
    ServerLifetime(reactor::Scheduler& sched, const ServerOptions& o, std::string name)
        : sched_(sched), name_(std::move(name)), exit_after_(o.exit_after),
          drain_(std::chrono::duration<double>(o.drain_seconds)) {
        if (o.max_seconds > 0)
            deadline_ = sched.call_later(std::chrono::duration<double>(o.max_seconds), [this] { abort_all(); });
        for (int signo : {SIGINT, SIGTERM}) sched.add_signal_handler(signo, [this, signo] { on_signal(signo); });
        print_stats_on_sigusr1(sched, name_);
    }

    void set_listener(reactor::ListenerPtr listener) {
        listener_ = std::move(listener);
        // Accept trouble (out of fds): one stderr line, rate-limited, and
        // accepting resumes by itself. The listener failing for good (the
        // loop cannot watch it): one stderr line, the orderly shutdown, and
        // exit_status() says the server failed.
        listener_->set_error_callback([this](reactor::Listener& l, std::error_code error, std::string_view what) {
            std::uint64_t left_out = 0;
            if (l.is_listening() && !accept_reports_.admit(sched_.now(), left_out)) return;
            fmt::print(stderr, "{}: {} ({}){}\n", name_, what, error.message(),
                       left_out == 0 ? std::string() : fmt::format("; {} more since the last report", left_out));
            std::fflush(stderr);
            if (l.is_listening()) return;
            failed_ = true;
            shut_down("the listener failed");
        });
        // Once nothing is left, no timer may keep run() going.
        listener_->wait_closed([this] {
            deadline_.cancel();
            drain_timer_.cancel();
        });
    }

    // From the accept callback.
    void opened() {
        if (exit_after_ > 0 && ++accepted_ >= exit_after_) listener_->close();
    }

    // Connections aborted because a shutdown did not wait for them.
    long aborted() const { return aborted_; }

    // What main() returns: 0 for an end asked for (signals, --exit-after,
    // --max-seconds), 1 if the listener failed (its line is on stderr).
    int exit_status() const { return failed_ ? 1 : 0; }

    // The orderly end, for any reason (`why` begins the line it prints): stop
    // accepting and give open connections the drain time, then abort them.
    // Called again while draining, it aborts at once. SIGINT and SIGTERM come
    // here; so may a program's own reason (chat_server's console at Ctrl-D).
    void shut_down(std::string_view why) {
        if (draining_) {
            fmt::print("{}: {} again: aborting {} connection(s)\n", name_, why, listener_->connections().size());
            std::fflush(stdout);
            return abort_all();
        }
        draining_ = true;
        listener_->close();
        fmt::print("{}: {}: stopped accepting; draining {} connection(s) for up to {}s\n", name_, why,
                   listener_->connections().size(), std::chrono::duration<double>(drain_).count());
        std::fflush(stdout);
        drain_timer_ = sched_.call_later(drain_, [this] { abort_all(); });
    }

private:
    void on_signal(int signo) { shut_down(signo == SIGINT ? "SIGINT" : "SIGTERM"); }

    // Stops accepting and aborts every open connection; run() then returns
    // once their close callbacks have run.
    void abort_all() {
        listener_->close();
        aborted_ += static_cast<long>(listener_->connections().size());
        listener_->connections().abort_all();
    }

    reactor::Scheduler& sched_;
    std::string name_;
    reactor::ListenerPtr listener_;
    long exit_after_;
    long accepted_ = 0, aborted_ = 0;
    bool draining_ = false;
    bool failed_ = false;
    reactor::ReportLimiter accept_reports_{std::chrono::seconds(10)};
    std::chrono::duration<double> drain_;
    reactor::Handle deadline_, drain_timer_;
};

}  // namespace examples
