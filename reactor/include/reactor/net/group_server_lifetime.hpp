// SPDX-License-Identifier: MIT
// reactor::GroupServerLifetime: how a server spread over a LoopGroup (a
// GroupListener) ends, gracefully: ServerLifetime's end, across loops.
//
// On the first stop signal (SIGINT and SIGTERM by default) or shut_down(why)
// every loop stops accepting (GroupListener::close), the open connections
// get drain_time to finish by themselves, then every loop aborts what is
// still open on it. A second stop while draining aborts at once;
// max_run_time, a safety net for scripts and tests, aborts everything when
// it passes. The end comes once every listener is closed (by a stop, by
// Listener::Options::max_accepts, or by failing), every loop's last
// connection is gone (its close callbacks have run) and nothing holds any
// loop's gate (connections_on(i).gate(), server_gate.hpp: work a handler
// started, a futures::ServerScope's conversations and the continuations
// they queued): then one `ended` report, with each loop's counts and the
// total, and on_ended (where a program calls LoopGroup::request_stop()). A
// drain or run time that runs out aborts connections, never held work.
// It prints nothing: what happens is told to the report callback.
//
// Threads. A signal disposition is process-wide, so one loop owns the
// signals: the control loop (Options::control_loop, loop 0 by default: the
// one LoopGroup::run() gives to the thread that owns the group). The
// handlers, the timers, the reports and on_ended all run on the control
// loop's thread, and the state they share lives there. The other loops are
// reached only by posts (try_call_soon_threadsafe): each one counts and
// aborts its own connections, on its own thread, and posts back to the
// control loop when it has none left. Counts read across threads are
// atomics (GroupListener's live and handed counts, the aborted counts
// here). Construct it on the thread that owns the group, after
// GroupListener::listen and before LoopGroup::start() or run()
// (std::logic_error after); shut_down(), abort_all(), draining(), ended()
// and aborted() from any thread; destroy it when the control loop is not
// running (after LoopGroup::stop(), or when run() has returned). It must not
// outlive the group or the listener. A loop that has ended refuses posts,
// and what was posted to it is dropped: a group stopped before the end
// makes no `ended` report.
#pragma once

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reactor/clock.hpp"
#include "reactor/export.hpp"
#include "reactor/loop_group.hpp"
#include "reactor/net/group_listener.hpp"
#include "reactor/net/server_lifetime.hpp"

namespace reactor {

namespace detail {
class ServerEnd;
}

class REACTOR_API GroupServerLifetime {
public:
    struct Options {
        // How long open connections may take to finish after a stop.
        Duration drain_time = std::chrono::seconds(5);
        // Zero: no limit. Otherwise, when it passes, everything is aborted.
        Duration max_run_time = Duration::zero();
        // Each one starts the drain, and aborts at once while draining.
        // Empty: none (shut_down() only).
        std::vector<int> stop_signals{SIGINT, SIGTERM};
        // The loop that owns the signals, the timers and the reports.
        std::size_t control_loop = 0;
    };

    // One loop's share of the server.
    struct LoopCounts {
        std::uint64_t accepted = 0;  // connections it was given in all (GroupListener::handed)
        std::size_t open = 0;        // open (or on their way to it) when the report is made
        std::uint64_t aborted = 0;   // aborted because the end did not wait for them
    };

    struct Report {
        enum class Kind : std::uint8_t {
            draining,  // stopped accepting; the open connections have drain_time to finish
            aborting,  // aborting what is open (see `cause`)
            ended,     // every listener closed and every loop's last connection gone
        };
        using Cause = ServerLifetime::Report::Cause;
        Kind kind = Kind::draining;
        Cause cause = Cause::none;
        // draining and aborting: what stopped the server ("SIGINT", "SIGTERM",
        // shut_down's argument).
        std::string_view why;
        std::vector<LoopCounts> loops;  // index: the loop's index in the group

        LoopCounts total() const noexcept;
    };
    using ReportCallback = std::function<void(const Report&)>;

    GroupServerLifetime(LoopGroup& group, GroupListener& listener, Options options, ReportCallback on_report = {});
    GroupServerLifetime(LoopGroup& group, GroupListener& listener)
        : GroupServerLifetime(group, listener, Options{}) {}
    ~GroupServerLifetime();
    GroupServerLifetime(const GroupServerLifetime&) = delete;
    GroupServerLifetime& operator=(const GroupServerLifetime&) = delete;

    // Any thread: posts the orderly end to the control loop (a stop signal
    // does the same with its name). Again while draining: aborts at once.
    // After the end: nothing.
    void shut_down(std::string why);
    // Any thread: every loop stops accepting and aborts its connections now.
    void abort_all();

    // `cb` runs once, on the control loop, after the `ended` report. Before
    // the group starts.
    void on_ended(std::function<void()> cb);

    // Any thread.
    bool draining() const noexcept;
    bool ended() const noexcept;
    std::uint64_t aborted() const noexcept;  // over every loop

private:
    std::shared_ptr<detail::ServerEnd> end_;  // shared with the posts in flight (server_end.hpp)
};

}  // namespace reactor
