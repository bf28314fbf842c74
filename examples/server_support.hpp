// What the example servers share: the --backend, --host, --port, --exit-after
// and --max-seconds options, the first line they print, and a ServerLifetime
// that lets a server end on its own (for tests and scripts) and shut down
// cleanly, aborting whatever is still open. Loop thread only, like everything
// it touches.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/listener.hpp>

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
                                              reactor::Listener::AcceptCallback on_accept) {
    try {
        return reactor::Listener::listen(sched, address, std::move(on_accept));
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

class ServerLifetime {
public:
    ServerLifetime(reactor::Scheduler& sched, const ServerOptions& o) : exit_after_(o.exit_after) {
        if (o.max_seconds > 0)
            deadline_ = sched.call_later(std::chrono::duration<double>(o.max_seconds), [this] { shutdown(); });
    }

    void set_listener(reactor::ListenerPtr listener) { listener_ = std::move(listener); }

    // From the accept callback.
    void opened(const reactor::ConnectionPtr& c) {
        open_.insert(c.get());
        if (exit_after_ > 0 && ++accepted_ >= exit_after_) listener_->close();
    }
    // From the close callback. The pointer is valid until then (an open
    // connection owns itself), so a raw pointer is enough to find it.
    void closed(reactor::Connection& c) {
        open_.erase(&c);
        if (!listener_->is_listening() && open_.empty()) deadline_.cancel();  // nothing left: run() returns
    }

    // Stops accepting and aborts every open connection; run() then returns
    // once their close callbacks have run.
    void shutdown() {
        listener_->close();
        std::vector<reactor::Connection*> doomed(open_.begin(), open_.end());
        for (auto* c : doomed) c->abort();
        if (open_.empty()) deadline_.cancel();
    }

private:
    reactor::ListenerPtr listener_;
    std::unordered_set<reactor::Connection*> open_;
    long exit_after_;
    long accepted_ = 0;
    reactor::Handle deadline_;
};

}  // namespace examples
