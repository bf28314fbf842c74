// SPDX-License-Identifier: MIT
// reactor::Listener: a listening stream socket (TCP over IPv4/IPv6, or Unix
// domain) that accepts connections and hands each over as a Connection.
//
// Owns its fd (and, for a Unix path it created, the socket file). Owned by
// whoever holds the shared_ptr; destroying it, or close(), stops listening
// (connections already accepted live on). The loop's end closes it too
// (docs/scheduler.md, "What outlives what"): it may then outlive its Scheduler.
// Loop thread only (debug mode refuses and reports a call from another
// thread: docs/cores.md); never calls back synchronously.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <system_error>
#include <vector>

#include <sys/socket.h>
#include <sys/types.h>

#include "reactor/export.hpp"
#include "reactor/callback_slot.hpp"
#include "reactor/net/address.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/net/connection_set.hpp"
#include "reactor/net/report_limiter.hpp"
#include "reactor/fd_owner.hpp"
#include "reactor/net/detail/loop_socket.hpp"
#include "reactor/scheduler.hpp"

namespace reactor {

class REACTOR_API Listener final : public std::enable_shared_from_this<Listener>, private FdOwner, private detail::LoopSocket {
    struct Passkey {};

public:
    // Receives each accepted connection, already reading: set its callbacks
    // here (data can first arrive on the next iteration).
    using AcceptCallback = std::function<void(const ConnectionPtr&)>;
    // Accept trouble that did not stop the listener: fd exhaustion (accepting
    // pauses for accept_pause), a connection refused because the backend
    // cannot watch its fd, or one turned away at Options::max_connections
    // (ECONNREFUSED). The callback sees every occurrence. Without one,
    // they go to the Scheduler's exception handler, rate-limited: the first,
    // then at most one per report_interval saying how many were left out, and
    // one more when accepting works again.
    // And the one trouble that stops it: the loop cannot watch the listening
    // socket (epoll_ctl: ENOMEM, ENOSPC). The listener closes itself
    // (is_listening() false, failure() says why; connections already
    // accepted go on) and reports it once, through the callback if there is
    // one (it then sees is_listening() false), else through the exception
    // handler.
    using ErrorCallback = std::function<void(Listener&, std::error_code, std::string_view what)>;

    struct Options {
        int backlog = SOMAXCONN;
        bool reuse_address = true;  // SO_REUSEADDR (TCP): restart while old connections linger in TIME_WAIT
        bool reuse_port = false;    // SO_REUSEPORT (TCP): several listeners share a port
        // Set: each accepted socket (non-blocking, close-on-exec, TCP_NODELAY
        // for TCP) is handed to this instead of becoming a Connection on this
        // loop; it owns the fd from then on, even if it throws (the exception
        // then goes to the exception handler). What a GroupListener uses to
        // give each connection to another loop (group_listener.hpp). The
        // accept callback is not called, and connections() stays empty.
        std::function<void(int fd)> hand_off;
        // After EMFILE/ENFILE/ENOBUFS/ENOMEM, accepting stops this long rather
        // than spinning on a listening socket that stays readable; pending
        // clients wait in the backlog meanwhile.
        std::chrono::milliseconds accept_pause{100};
        std::chrono::milliseconds report_interval{10'000};  // see ErrorCallback
        ConnectionOptions connection;  // for every accepted connection
        // After this many connections the listener closes itself, as close()
        // would (connections accepted go on). Zero: no limit.
        std::uint64_t max_accepts = 0;
        // At most this many accept(2) calls per readiness of the listening
        // socket (Netty's 16; nginx's 1 without multi_accept). The socket
        // stays readable while clients wait, so the rest are accepted on the
        // next loop iterations, and the timers, ready callbacks and other
        // connections (clients that already left among them) run in between:
        // a connect storm cannot hold the loop, or pile up open files, for
        // longer than one batch. At least 1 (listen() refuses 0 with
        // std::invalid_argument).
        std::size_t accept_batch = 16;
        // The most connections this listener's accepted connections may
        // number at once (those still open: connections(), which a graceful
        // drain uses too). Beyond it, each new one is accepted and closed at
        // once, as nginx does when its worker_connections are all in use: the
        // client sees its connection end (EOF, or a reset if it had sent
        // data) promptly, rather than hanging in the backlog, and the
        // listener keeps taking the queue down (still accept_batch per
        // wake-up), so the backlog never holds sockets that clients already
        // left. Counted in turned_away() and reported (rate-limited, error
        // ECONNREFUSED) as accept trouble is; accepting goes on, and a
        // connection that closes makes room for the next client. A connection
        // moved to another ConnectionSet no longer counts. A server sets it
        // below its fd limit (RLIMIT_NOFILE, and FD_SETSIZE for select), so
        // clients that hold connections cannot take every fd. Zero: no limit.
        std::size_t max_connections = 0;
        // Set: what max_connections is compared with instead of
        // connections().size(), for a layer that keeps the count itself
        // (GroupListener: its connections across every loop, handed off or
        // moved to its own sets); called on this listener's loop before each
        // accepted socket is used. Unset with hand_off: max_connections does
        // not apply (only the layer that took the sockets knows how many are
        // still open).
        std::function<std::size_t()> open_count;
    };

    // Binds, listens and starts accepting. `address` may use port 0 (see
    // address() for the port picked) or be a Unix address: a stale socket file
    // at that path is replaced, and the file is removed again on close. Throws
    // std::system_error (e.g. EADDRINUSE) or std::invalid_argument (an
    // address that is not IP or Unix, Options::accept_batch 0).
    // Scheduler::live() names the listener, and every connection it accepts,
    // by `where`: the line that called listen().
    [[nodiscard]] static std::shared_ptr<Listener> listen(
        Scheduler& sched, const Address& address, AcceptCallback on_accept, Options options,
        std::source_location where = std::source_location::current());
    [[nodiscard]] static std::shared_ptr<Listener> listen(
        Scheduler& sched, const Address& address, AcceptCallback on_accept,
        std::source_location where = std::source_location::current()) {
        return listen(sched, address, std::move(on_accept), Options{}, where);
    }

    Listener(Passkey, Scheduler& sched, int fd, Address bound, AcceptCallback on_accept, Options options,
             std::source_location where);
    ~Listener();
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;

    void set_error_callback(ErrorCallback cb);

    // Stops listening and closes the fd. Safe from inside the accept callback;
    // idempotent. Later connection attempts are refused by the kernel.
    // Connections already accepted go on: see connections().
    void close();

    // ---- graceful shutdown (asyncio's Server.close_clients/abort_clients/wait_closed) ----
    // Every connection this listener accepted that is still open; for example
    // connections().close_all() after close(), then abort_all() if a drain
    // deadline passes.
    ConnectionSet& connections() noexcept { return *connections_; }
    // `cb` runs once, on a later iteration, when the listener is closed and
    // every connection it accepted has closed (after their close callbacks).
    // It runs even if the listener is destroyed first (destroying closes it).
    void wait_closed(std::function<void()> cb);
    bool is_listening() const noexcept { return fd_ >= 0; }
    // Why the listener closed itself (see ErrorCallback); empty if it did not.
    std::error_code failure() const noexcept { return failure_; }
    // The bound address, with the real port when port 0 was asked for.
    const Address& address() const noexcept { return address_; }
    int fd() const noexcept { return fd_; }

    // Counters for logs and tests.
    std::uint64_t accepted() const noexcept { return accepted_; }
    std::uint64_t refused() const noexcept { return refused_; }  // accepted, then closed (fd unwatchable)
    std::uint64_t accept_failures() const noexcept { return accept_failures_; }  // each one paused accepting
    std::uint64_t turned_away() const noexcept { return turned_away_; }  // closed at once: max_connections open

private:
    void on_unwatchable(int fd, std::error_code error) override;
    void close_with_loop() noexcept override;  // Scheduler::close(), ~Scheduler: see loop_sockets.hpp
    void describe(int fd, std::vector<LiveItem>& out) const override;
    void close_now();  // close() without the thread check: the destructor, the loop's end
    void start_accepting();
    void on_readable();
    void pause_accepting(int error);
    bool at_capacity() const;
    void turn_away(int fd);
    void report(ReportLimiter& limiter, int error, std::string_view what);
    void report_left_out(ReportLimiter& limiter, std::string_view what);

    Scheduler& sched_;
    int fd_;
    Address address_;
    std::source_location where_;  // the user's listen() call
    // What its connections share (their loop, line, marks and read size),
    // held from listen() on, so an accept finds it with no lookup.
    detail::HeldProfile profile_;
    // close() resets both, also from inside one of them: see callback_slot.hpp.
    CallbackSlot<void(const ConnectionPtr&)> on_accept_;
    CallbackSlot<void(Listener&, std::error_code, std::string_view)> on_error_;
    ConnectionSetPtr connections_;
    std::vector<std::function<void()>> close_waiters_;  // until close(): then the set's
    Options options_;
    Handle resume_timer_;
    bool owns_path_ = false;  // Unix: unlink the socket file on close if it is still ours
    dev_t path_dev_ = 0;
    ino_t path_ino_ = 0;
    std::uint64_t accepted_ = 0;
    std::uint64_t refused_ = 0;
    std::error_code failure_;
    std::uint64_t accept_failures_ = 0;
    std::uint64_t turned_away_ = 0;
    ReportLimiter accept_failure_reports_;
    ReportLimiter refusal_reports_;
    ReportLimiter turned_away_reports_;
};

using ListenerPtr = std::shared_ptr<Listener>;

}  // namespace reactor
