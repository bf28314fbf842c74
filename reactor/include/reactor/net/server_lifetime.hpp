// SPDX-License-Identifier: MIT
// reactor::ServerLifetime: how a callback server ends, gracefully. What
// Go's http.Server.Shutdown and asyncio's Server.close() + wait_closed() with
// a grace period give, and what every production server otherwise writes by
// hand. It is the one-loop front of the mechanism GroupServerLifetime fronts
// for a LoopGroup (one loop is a group of one).
//
// Given a listener, it ends the server on the first stop signal (SIGINT and
// SIGTERM by default), on shut_down(why), or when the listener fails for good:
// it stops accepting, lets the open connections finish by themselves for
// drain_time (a request under way is answered, buffered output is flushed),
// then aborts what is still open. A second stop while draining aborts at
// once. max_run_time, a safety net for scripts and tests, aborts everything
// when it passes. The end comes once the listener is closed, its last
// connection is gone (every close callback has run) and nothing holds the
// server's gate (gate(): work a handler started and the server must wait
// for, Seastar's with_gate; a futures::ServerScope's conversations): then the
// `ended` report and on_ended, and nothing the lifetime armed (timers, signal
// handlers) keeps Scheduler::run() going. A drain or run time that runs out
// aborts connections, never held work. So a server's main is: listen, make a
// ServerLifetime, sched.run().
//
// It prints nothing. What happens is told to the report callback, if there is
// one: a server prints it or logs it. It takes over the listener's error
// callback: accept trouble (out of fds) is reported to it with the listener's
// words (or, without a report callback, to the exception handler, at most one
// per report_interval, as the listener does); the listener failing for good is
// reported, then shuts the server down, and failed() is true from then on.
//
// Loop thread only. Not copyable or movable (its callbacks point at it).
// Destroying it removes its signal handlers and timers, and the listener's
// error callback; the listener and its connections go on as they are.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/handle.hpp"
#include "reactor/net/listener.hpp"
#include "reactor/net/report_limiter.hpp"
#include "reactor/net/server_gate.hpp"
#include "reactor/scheduler.hpp"

namespace reactor {

namespace detail {
class ServerEnd;
}

class REACTOR_API ServerLifetime {
public:
    struct Options {
        // How long open connections may take to finish after a stop.
        Duration drain_time = std::chrono::seconds(5);
        // Zero: no limit. Otherwise, when it passes, everything is aborted.
        Duration max_run_time = Duration::zero();
        // Each one starts the drain, and aborts at once while draining.
        // Empty: none (shut_down() only).
        std::vector<int> stop_signals{SIGINT, SIGTERM};
        // Without a report callback: the least time between two reports of
        // accept trouble to the exception handler.
        Duration report_interval = std::chrono::seconds(10);
    };

    struct Report {
        enum class Kind : std::uint8_t {
            draining,         // stopped accepting; `connections` have drain_time to finish
            aborting,         // aborting `connections` (see `cause`)
            accept_trouble,   // the listener paused accepting or refused one (`error`), and goes on
            listener_failed,  // the listener closed itself (`error`); the drain follows
            ended,            // the listener is closed, its last connection gone, its gate free
        };
        enum class Cause : std::uint8_t {
            none,
            stopped_again,   // a second stop while draining
            drain_time_over,
            max_run_time,
        };
        Kind kind = Kind::draining;
        Cause cause = Cause::none;
        // draining and aborting: what stopped the server ("SIGINT", "SIGTERM",
        // shut_down's argument, "the listener failed"); accept_trouble and
        // listener_failed: the listener's words.
        std::string_view why;
        std::size_t connections = 0;  // open when the report is made
        std::error_code error;        // accept_trouble and listener_failed
    };
    using ReportCallback = std::function<void(const Report&)>;

    ServerLifetime(Scheduler& sched, ListenerPtr listener, Options options, ReportCallback on_report = {});
    ServerLifetime(Scheduler& sched, ListenerPtr listener) : ServerLifetime(sched, std::move(listener), Options{}) {}
    ~ServerLifetime();
    ServerLifetime(const ServerLifetime&) = delete;
    ServerLifetime& operator=(const ServerLifetime&) = delete;

    // The orderly end, for any reason (a stop signal comes here with its
    // name): stop accepting, give the open connections drain_time, then abort
    // them. Called again while draining, it aborts at once. Safe from any
    // callback on the loop thread; after the end it does nothing.
    void shut_down(std::string_view why);
    // Stops accepting and aborts every open connection now.
    void abort_all(Report::Cause cause = Report::Cause::none);

    // `cb` runs once, when the listener is closed and its last connection is
    // gone and nothing holds the gate (after the `ended` report). Replaces
    // an earlier one.
    void on_ended(std::function<void()> cb);

    bool draining() const noexcept;
    bool ended() const noexcept;
    // The listener failed for good (the loop could not watch it).
    bool failed() const noexcept { return failed_; }
    // Connections aborted because the end did not wait for them.
    std::uint64_t aborted() const noexcept;
    const ListenerPtr& listener() const noexcept { return listener_; }
    // The server's gate (the listener's connections().gate()): a Hold taken
    // from it keeps the end waiting until released.
    ServerGate& gate() const noexcept { return listener_->connections().gate(); }

private:
    void on_listener_error(Listener& l, std::error_code error, std::string_view what);
    void report(Report::Kind kind, Report::Cause cause, std::string_view why, std::size_t connections,
                std::error_code error = {});

    Scheduler& sched_;
    ListenerPtr listener_;
    ReportCallback on_report_;
    ReportLimiter trouble_reports_;
    bool failed_ = false;
    // The end's state, shared with what it armed (server_end.hpp).
    std::shared_ptr<detail::ServerEnd> end_;
};

}  // namespace reactor
