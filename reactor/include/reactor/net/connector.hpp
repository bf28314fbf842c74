// reactor::Connector / reactor::connect(): one asynchronous connect(2) to a TCP
// or Unix address, ending in a Connection or an error code.
//
// A pending Connector owns its socket and keeps itself alive (the loop holds it
// through its waiter); the returned pointer is only needed to cancel(). The
// callback runs exactly once unless cancelled, always on a later loop
// iteration, never from inside connect(). Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <system_error>

#include "reactor/net/address.hpp"
#include "reactor/scheduler.hpp"
#include "reactor/net/connection.hpp"

namespace reactor {

class Connector : public std::enable_shared_from_this<Connector> {
    struct Passkey {};

public:
    // Exactly one of the two is set. Errors are errno values in
    // std::generic_category(): ECONNREFUSED, ECONNRESET (the server accepted
    // and reset the connection before this side saw it complete, e.g. an
    // accept-and-abort overload guard), ENETUNREACH, EHOSTUNREACH, ETIMEDOUT
    // (also our own timeout), ENOENT (no such Unix socket file), EAGAIN (a
    // Unix listener's backlog is full), EMFILE (out of fds, or the select
    // backend cannot watch the socket: fd >= FD_SETSIZE).
    using ConnectCallback = std::function<void(ConnectionPtr, std::error_code)>;

    struct Options {
        // Zero: no limit of our own (the kernel gives up on TCP after about two minutes).
        std::chrono::milliseconds timeout{0};
        bool no_delay = true;          // TCP_NODELAY on the new TCP connection
        ConnectionOptions connection;  // for the new connection
    };

    // Starts connecting. Never throws for network reasons (those go to the
    // callback); throws std::invalid_argument for an address that is neither IP nor Unix.
    static std::shared_ptr<Connector> start(Scheduler& sched, const Address& address, ConnectCallback cb, Options options);

    Connector(Passkey, Scheduler& sched, Address address, ConnectCallback cb, Options options);
    ~Connector();
    Connector(const Connector&) = delete;
    Connector& operator=(const Connector&) = delete;

    // The callback will not run; the socket is closed. True if it was still
    // pending. Safe from any loop callback.
    bool cancel();
    bool is_pending() const noexcept { return state_ == State::connecting; }
    const Address& address() const noexcept { return address_; }

private:
    enum class State : std::uint8_t { connecting, done, cancelled };

    void begin();
    void on_writable();
    void finish(int error);
    void finish_later(int error);
    void close_socket();

    Scheduler& sched_;
    Address address_;
    ConnectCallback cb_;
    Options options_;
    State state_ = State::connecting;
    int fd_ = -1;
    bool waiting_ = false;  // registered for writability
    Handle timer_;          // timeout
    Handle soon_;           // immediate outcome, delivered on the next iteration
};

// The usual spelling: connect(sched, Address::parse("127.0.0.1", 8080), cb).
inline std::shared_ptr<Connector> connect(Scheduler& sched, const Address& address, Connector::ConnectCallback cb,
                                          Connector::Options options = {}) {
    return Connector::start(sched, address, std::move(cb), options);
}

}  // namespace reactor
