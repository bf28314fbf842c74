// What the example servers share: the --backend, --host, --port, --exit-after
// and --max-seconds options, and a ServerLifetime that lets a server end on
// its own (for tests and scripts) and shut down cleanly, aborting whatever is
// still open. Loop thread only, like everything it touches.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>
#include <reactor/tcp_connection.hpp>
#include <reactor/tcp_listener.hpp>

#include "cli.hpp"

namespace examples {

inline void add_server_options(Cli& cli) {
    cli.option("host", "127.0.0.1", "numeric IPv4 or IPv6 address to listen on")
        .option("port", "0", "TCP port (0: pick a free one)")
        .option("backend", "select", "readiness backend: select, poll or epoll")
        .option("exit-after", "0", "stop accepting after N connections, exit once they have all closed (0: never)")
        .option("max-seconds", "600", "exit after this many seconds, aborting open connections, so an\n                 example never runs forever by accident (0: run until killed)");
}

// A scheduler on the backend chosen with --backend; exits 2 on a bad name or
// a backend this build does not have.
inline std::unique_ptr<reactor::Scheduler> make_scheduler(const Cli& cli) {
    auto backend = reactor::parse_backend(cli.text("backend"));
    if (!backend) cli.fail(fmt::format("--backend must be select, poll or epoll, not '{}'", cli.text("backend")));
    reactor::Scheduler::Options options;
    options.backend = *backend;
    try {
        return std::make_unique<reactor::Scheduler>(std::move(options));
    } catch (const std::exception& e) {
        cli.fail(e.what());
    }
}

inline reactor::Address listen_address(const Cli& cli) {
    long port = cli.integer("port");
    if (port < 0 || port > 65535) cli.fail("--port must be 0..65535");
    try {
        return reactor::Address::parse(cli.text("host"), static_cast<std::uint16_t>(port));
    } catch (const std::exception& e) {
        cli.fail(e.what());
    }
}

// TcpListener::listen, or exit 1 with the reason (e.g. the port is taken).
inline reactor::TcpListenerPtr listen_or_exit(reactor::Scheduler& sched, const reactor::Address& address,
                                              reactor::TcpListener::AcceptCallback on_accept) {
    try {
        return reactor::TcpListener::listen(sched, address, std::move(on_accept));
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}\n", e.what());
        std::exit(1);
    }
}

// The first stdout line of every example server; tests wait for it.
inline void announce(const reactor::TcpListener& listener) {
    fmt::print("listening on {}\n", listener.address().to_string());
    std::fflush(stdout);
}

class ServerLifetime {
public:
    ServerLifetime(reactor::Scheduler& sched, const Cli& cli) : exit_after_(cli.integer("exit-after")) {
        double seconds = cli.number("max-seconds");
        if (seconds > 0)
            deadline_ = sched.call_later(std::chrono::duration<double>(seconds), [this] { shutdown(); });
    }

    void set_listener(reactor::TcpListenerPtr listener) { listener_ = std::move(listener); }

    // From the accept callback.
    void opened(const reactor::TcpConnectionPtr& c) {
        open_.insert(c.get());
        if (exit_after_ > 0 && ++accepted_ >= exit_after_) listener_->close();
    }
    // From the close callback. The pointer is valid until then (an open
    // connection owns itself), so a raw pointer is enough to find it.
    void closed(reactor::TcpConnection& c) {
        open_.erase(&c);
        if (!listener_->listening() && open_.empty()) deadline_.cancel();  // nothing left: run() returns
    }
    std::size_t open_count() const { return open_.size(); }
    const std::unordered_set<reactor::TcpConnection*>& connections() const { return open_; }

    // Stops accepting and aborts every open connection; run() then returns
    // once their close callbacks have run.
    void shutdown() {
        listener_->close();
        std::vector<reactor::TcpConnection*> doomed(open_.begin(), open_.end());
        for (auto* c : doomed) c->abort();
        if (open_.empty()) deadline_.cancel();
    }

private:
    reactor::TcpListenerPtr listener_;
    std::unordered_set<reactor::TcpConnection*> open_;
    long exit_after_;
    long accepted_ = 0;
    reactor::Handle deadline_;
};

}  // namespace examples
