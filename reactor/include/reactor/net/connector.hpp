// SPDX-License-Identifier: MIT
// reactor::Connector / reactor::connect(): one asynchronous connect(2) to a TCP
// or Unix address, ending in a Connection or an error code.
//
// Or to a host name: connect(sched, "localhost", 8080, cb) looks the name up
// off the loop thread (getaddrinfo on a ThreadPool, as libuv's uv_getaddrinfo
// and asyncio's create_connection do), then tries each address it yields in
// turn until one connects, as asyncio does; the callback sees the last
// attempt's error if none does. A numeric host ("127.0.0.1", "::1") needs no
// lookup. A list of addresses is tried the same way.
//
// A pending Connector owns its socket and keeps itself alive (the loop holds it
// through its waiter); the returned pointer is only needed to cancel(). The
// callback runs exactly once unless cancelled, always on a later loop
// iteration, never from inside connect(). Scheduler::close() (or the
// destructor) drops a connect still pending: its callback never runs, its
// socket is closed and its lookup cancelled. Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/net/address.hpp"
#include "reactor/fd_owner.hpp"
#include "reactor/scheduler.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/thread_pool.hpp"

namespace reactor {

class REACTOR_API Connector final : public std::enable_shared_from_this<Connector>, private FdOwner {
    struct Passkey {};

public:
    // Exactly one of the two is set. Errors are errno values in
    // std::generic_category(): ECONNREFUSED, ECONNRESET (the server accepted
    // and reset the connection before this side saw it complete, e.g. an
    // accept-and-abort overload guard), ENETUNREACH, EHOSTUNREACH, ETIMEDOUT
    // (also our own timeout), ENOENT (no such Unix socket file), EAGAIN (a
    // Unix listener's backlog is full), EMFILE (out of fds, or the select
    // backend cannot watch the socket: fd >= FD_SETSIZE). A host name that
    // cannot be looked up: getaddrinfo's error, in reactor::resolve_category()
    // (reactor/net/resolve_error.hpp: resolve_errc::no_name for an unknown
    // name...; host() names it), or EAI_SYSTEM's errno in the system category;
    // the resolver pool's queue full: resolve_errc::again (try again later);
    // the pool shut down before the lookup ran: ECANCELED.
    using ConnectCallback = std::function<void(ConnectionPtr, std::error_code)>;

    struct Options {
        // For the whole connect: the lookup and every address tried. Zero: no
        // limit of our own (the kernel gives up on TCP after about two minutes).
        std::chrono::milliseconds timeout{0};
        bool no_delay = true;          // TCP_NODELAY on the new TCP connection
        ConnectionOptions connection;  // for the new connection
        // Where a host name is looked up; null: reactor::default_thread_pool().
        ThreadPool* resolver = nullptr;
    };

    // Starts connecting. Never throws for network reasons (those go to the
    // callback); throws std::invalid_argument for an address that is neither IP nor Unix.
    // Scheduler::live() names the connect in progress, its lookup and the
    // connection it makes by `where`: the line that called connect().
    static std::shared_ptr<Connector> start(Scheduler& sched, const Address& address, ConnectCallback cb, Options options,
                                            std::source_location where = std::source_location::current());
    // To the first of `addresses` that answers, tried in turn (as Asio's
    // async_connect over an endpoint range); the callback sees the last
    // attempt's error if none does. Throws std::invalid_argument for an empty
    // list or an address that is neither IP nor Unix.
    static std::shared_ptr<Connector> start(Scheduler& sched, std::vector<Address> addresses, ConnectCallback cb,
                                            Options options,
                                            std::source_location where = std::source_location::current());
    // To `host` (numeric, or a name looked up on options.resolver) and `port`.
    static std::shared_ptr<Connector> start(Scheduler& sched, std::string_view host, std::uint16_t port,
                                            ConnectCallback cb, Options options,
                                            std::source_location where = std::source_location::current());

    Connector(Passkey, Scheduler& sched, std::string host, ConnectCallback cb, Options options,
              std::source_location where);
    ~Connector();
    Connector(const Connector&) = delete;
    Connector& operator=(const Connector&) = delete;

    // The callback will not run; the socket is closed. True if it was still
    // pending. Safe from any loop callback.
    bool cancel();
    bool is_pending() const noexcept { return state_ == State::resolving || state_ == State::connecting; }
    // The address being tried, or the last one tried; none (AF_UNSPEC) while
    // a host name is being looked up.
    const Address& address() const noexcept { return address_; }
    // The host given to start(); empty when it was given an Address.
    const std::string& host() const noexcept { return host_; }

private:
    // The loop cannot watch the connecting socket (epoll_ctl: ENOMEM,
    // ENOSPC): this address failed with that error; the next is tried.
    void on_unwatchable(int fd, std::error_code error) override;
    void describe(int fd, std::vector<LiveItem>& out) const override;
    enum class State : std::uint8_t { resolving, connecting, done, cancelled };

    void arm_timeout();
    void look_up(std::uint16_t port);
    void on_resolved(JobResult<std::vector<Address>>&& result);
    void try_addresses(std::vector<Address> addresses);
    void begin();
    void on_writable();
    void attempt_done(int error);
    void finish(std::error_code error);
    void finish_later(std::error_code error);
    void close_socket();

    Scheduler& sched_;
    // Its loop's kernel, held: ~Connector closes a socket left by a loop torn
    // down mid-connect, when the Scheduler (and maybe its kernel) is gone.
    std::shared_ptr<Kernel> kernel_;
    std::source_location where_;  // the user's connect() call
    std::string host_;
    Address address_;                // the attempt in progress
    std::vector<Address> untried_;   // the addresses after it, last first
    ConnectCallback cb_;
    Options options_;
    State state_ = State::connecting;
    int fd_ = -1;
    bool waiting_ = false;  // registered for writability
    Job lookup_;            // while resolving
    Handle timer_;          // timeout
    Handle soon_;           // immediate outcome, delivered on the next iteration
};

// The usual spelling: connect(sched, Address::parse("127.0.0.1", 8080), cb).
inline std::shared_ptr<Connector> connect(Scheduler& sched, const Address& address, Connector::ConnectCallback cb,
                                          Connector::Options options = {},
                                          std::source_location where = std::source_location::current()) {
    return Connector::start(sched, address, std::move(cb), options, where);
}
inline std::shared_ptr<Connector> connect(Scheduler& sched, std::vector<Address> addresses,
                                          Connector::ConnectCallback cb, Connector::Options options = {},
                                          std::source_location where = std::source_location::current()) {
    return Connector::start(sched, std::move(addresses), std::move(cb), options, where);
}
// connect(sched, "localhost", 8080, cb): by host name (or numeric host).
inline std::shared_ptr<Connector> connect(Scheduler& sched, std::string_view host, std::uint16_t port,
                                          Connector::ConnectCallback cb, Connector::Options options = {},
                                          std::source_location where = std::source_location::current()) {
    return Connector::start(sched, host, port, std::move(cb), options, where);
}

}  // namespace reactor
