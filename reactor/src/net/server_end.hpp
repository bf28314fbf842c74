// SPDX-License-Identifier: MIT
// Internal: the one mechanism behind ServerLifetime (one loop) and
// GroupServerLifetime (a LoopGroup): a server on N loops, one loop being a
// group of one. It drains and aborts, each loop its own connections, and
// finds the end, run from the control loop (group_server_lifetime.hpp has
// the thread rules; with one loop every "post" is a plain call).
//
// How the end is found: each listener's wait_closed tells the control loop;
// once none is left, no socket can be handed to a loop any more, but some
// may still be on their way (posted by the acceptor, already counted in the
// loop's live count). So each loop is asked to say when its set is empty,
// and the control loop takes a loop's connections as gone only when its
// live count is zero too; otherwise it asks that loop again. Then that
// loop's gate (ServerGate) is closed: its close hooks run (a server's scope
// closes there), and once nothing holds it, the loop is done. The end comes
// when every loop is done.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reactor/callback.hpp"
#include "reactor/clock.hpp"
#include "reactor/handle.hpp"
#include "reactor/net/connection_set.hpp"
#include "reactor/net/listener.hpp"
#include "reactor/net/server_lifetime.hpp"
#include "reactor/scheduler.hpp"

namespace reactor::detail {

// What the end needs of the listening side.
class ServedLoops {
public:
    virtual ~ServedLoops() = default;
    virtual std::size_t size() const = 0;
    virtual Scheduler& loop(std::size_t i) const = 0;
    // Loop i's thread (or the owning thread before the loops run).
    virtual ListenerPtr listener_on(std::size_t i) const = 0;
    virtual ConnectionSet& connections_on(std::size_t i) const = 0;
    // Any thread.
    virtual std::vector<std::size_t> live() const = 0;
    virtual std::vector<std::uint64_t> handed() const = 0;
    // The control loop: stop accepting, everywhere.
    virtual void close() = 0;
};

class ServerEnd : public std::enable_shared_from_this<ServerEnd> {
public:
    using Cause = ServerLifetime::Report::Cause;
    enum class Kind : std::uint8_t { draining, aborting, ended };
    using ReportFn = std::function<void(Kind, Cause, std::string_view why)>;

    struct Options {
        Duration drain_time;
        Duration max_run_time;
        std::vector<int> stop_signals;
        std::size_t control_loop = 0;
    };

    // `single`: one loop, driven from its own thread: posts are plain calls.
    ServerEnd(std::unique_ptr<ServedLoops> loops, Options options, ReportFn report, bool single);

    // The owning thread (the loop's, with one loop), once: signals, the run
    // timer, the listeners' wait_closed. Undone by stop_watching.
    void start_watching();
    // The destructor of the front: nothing more is told or armed.
    void stop_watching();

    // The control loop (posted there from any thread by the group's front).
    void stop(std::string reason);
    void run_time_over();
    void abort_everywhere();
    template <class Fn>
    void post_control(Fn fn) {
        post(options.control_loop, std::move(fn));
    }

    // Any thread.
    std::size_t open_total() const;
    std::uint64_t aborted_total() const;
    std::uint64_t aborted_on(std::size_t i) const { return aborted_[i].load(); }

    ServedLoops& served() const { return *loops_; }
    Scheduler& control() const { return loops_->loop(options.control_loop); }

    const Options options;
    std::atomic<bool> is_draining{false};
    std::atomic<bool> is_ended{false};
    // The control loop only (and the owning thread before start).
    ReportFn report;
    std::function<void()> on_ended;
    std::string why;
    bool alive = true;

private:
    template <class Fn>
    void post(std::size_t index, Fn fn) {
        if (single_) return fn();
        (void)loops_->loop(index).try_call_soon_threadsafe(Callback(std::move(fn)));
    }
    void listener_closed();
    void ask_when_empty(std::size_t i);
    void loop_empty(std::size_t i);
    void close_gate(std::size_t i);
    void gate_done(std::size_t i);
    void end();
    void abort_loop(std::size_t i);

    std::unique_ptr<ServedLoops> loops_;
    const bool single_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> aborted_;  // per loop, by that loop
    // Set once, by the control loop, before it asks the loops to abort: a
    // loop asked whether it is empty aborts what it still has (a socket that
    // was on its way when the others were aborted).
    std::atomic<bool> aborting_{false};
    // The control loop only.
    Handle drain_timer_, max_run_timer_;
    std::size_t listeners_open_ = 0;
    std::vector<bool> connections_gone_, loop_done_;
    std::size_t loops_done_ = 0;
};

}  // namespace reactor::detail
