// SPDX-License-Identifier: MIT
// group_lifetime.hpp: how chat_server ends when its clients are spread over
// a LoopGroup (--loops N): what server_support.hpp's ServerLifetime does for
// one loop, with the same lines. On SIGINT or SIGTERM, or shut_down(why): stop
// accepting, give the open connections --drain-seconds, abort the rest; a
// second signal aborts at once; --max-seconds aborts everything; after
// --exit-after connections it stops accepting. Once no connection is left anywhere and none
// can come, every loop is asked to stop.
//
// It lives on loop 0, which owns the signals (a disposition is process-wide,
// so one Scheduler takes them), accepts, and is told by every room, in a
// post, when its clients come and go. It counts clients with the
// GroupListener's per-loop counts, which any thread may read and which count
// a connection from its hand-off on: one on its way to a loop is not missed.
// The other loops' rooms are only posted to. Loop 0 thread only.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <reactor/loop_group.hpp>
#include <reactor/net/group_listener.hpp>

#include "loop_room.hpp"
#include "server_support.hpp"

namespace examples {

class GroupLifetime {
public:
    GroupLifetime(reactor::LoopGroup& group, reactor::GroupListener& listener, std::vector<LoopRoom*> rooms,
                  const ServerOptions& o, std::string name)
        : group_(group), loop_(group.loop(0)), listener_(listener), rooms_(std::move(rooms)), name_(std::move(name)),
          exit_after_(static_cast<std::uint64_t>(o.exit_after)), drain_seconds_(o.drain_seconds) {
        for (int signo : {SIGINT, SIGTERM})
            loop_.add_signal_handler(signo, [this, signo] { shut_down(signo == SIGINT ? "SIGINT" : "SIGTERM"); });
        if (o.max_seconds > 0) max_run_timer_ = loop_.call_later(as_duration(o.max_seconds), [this] { abort_all(); });
        // Each room calls this on its own loop: it only posts to loop 0.
        // Refused only once loop 0 has ended, and then nothing is left to count.
        for (LoopRoom* room : rooms_)
            room->on_membership_change([this] { (void)loop_.try_call_soon_threadsafe([this] { check(); }); });
    }
    GroupLifetime(const GroupLifetime&) = delete;
    GroupLifetime& operator=(const GroupLifetime&) = delete;
    ~GroupLifetime() {
        for (int signo : {SIGINT, SIGTERM}) loop_.remove_signal_handler(signo);
    }

    // The orderly end for any reason (a signal, the console's end of input):
    // `why` begins the line it prints. Again while draining: abort at once.
    void shut_down(std::string_view why) {
        if (ended_) return;
        if (draining_) {
            fmt::print("{}: {} again: aborting {} connection(s)\n", name_, why, open());
            std::fflush(stdout);
            return abort_all();
        }
        draining_ = true;
        stop_accepting();
        fmt::print("{}: {}: stopped accepting; draining {} connection(s) for up to {}s\n", name_, why, open(),
                   drain_seconds_);
        std::fflush(stdout);
        // Chat clients do not end by themselves: the timer bounds the wait.
        drain_timer_ = loop_.call_later(as_duration(drain_seconds_), [this] { abort_all(); });
    }

    // `cb` runs once, when the server has ended, before the loops are asked
    // to stop: what loop 0 runs besides the clients (the console) ends there.
    void on_ended(std::function<void()> cb) { on_ended_ = std::move(cb); }

    // Whether the listener still accepts (not after --exit-after, a signal).
    bool accepting() const noexcept { return accepting_; }
    // Connections handed to a loop and not closed yet, over all loops.
    std::size_t open() const {
        const std::vector<std::size_t> live = listener_.live_connections();
        return std::accumulate(live.begin(), live.end(), std::size_t{0});
    }

private:
    static reactor::Duration as_duration(double seconds) {
        return std::chrono::duration_cast<reactor::Duration>(std::chrono::duration<double>(seconds));
    }

    // The listener closes on its loop, this one, in a post: the post made
    // after it runs after it (FIFO per sender), once nothing more can be
    // handed over. Until then the server has not ended, whatever the counts.
    void stop_accepting() {
        accepting_ = false;
        listener_.close();
        (void)loop_.try_call_soon_threadsafe([this] {
            listener_closed_ = true;
            check();
        });
    }

    // A room said its clients changed. --exit-after: stop accepting once
    // that many were handed to the loops; the end: nothing open, nothing to come.
    void check() {
        if (ended_) return;
        if (accepting_ && exit_after_ > 0) {
            const std::vector<std::uint64_t> handed = listener_.handed();
            // The acceptor's Listener does not apply max_accepts to the sockets
            // it hands off, so the group closes it here. Clients already
            // waiting in the accept queue by then may still get in.
            if (std::accumulate(handed.begin(), handed.end(), std::uint64_t{0}) >= exit_after_) stop_accepting();
        }
        if (!listener_closed_ || open() > 0) return;
        ended_ = true;
        max_run_timer_.cancel();
        drain_timer_.cancel();
        if (on_ended_) std::exchange(on_ended_, {})();
        group_.request_stop();
    }

    // Every loop aborts its clients (and any handed to it from now on).
    void abort_all() {
        if (accepting_) stop_accepting();
        drain_timer_.cancel();
        for (LoopRoom* room : rooms_)
            (void)room->loop().try_call_soon_threadsafe([room] { room->abort_all(); });
    }

    reactor::LoopGroup& group_;
    reactor::Scheduler& loop_;
    reactor::GroupListener& listener_;
    std::vector<LoopRoom*> rooms_;
    std::string name_;
    std::uint64_t exit_after_;
    double drain_seconds_;
    reactor::Handle max_run_timer_, drain_timer_;
    std::function<void()> on_ended_;
    bool accepting_ = true;
    bool listener_closed_ = false;
    bool draining_ = false;
    bool ended_ = false;
};

}  // namespace examples
