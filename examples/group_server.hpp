// SPDX-License-Identifier: MIT
// The example servers on several loops (--loops N, --spreading): a
// reactor::LoopGroup, a reactor::GroupListener spreading the connections, and
// a reactor::GroupServerLifetime ending them all, printed the way
// server_support.hpp prints a single loop's server (the same first line,
// drain lines, listener trouble and summary, one part per loop; SIGUSR1: a
// line per loop). One loop is a group of one: it prints exactly what a
// single-loop server does (SIGUSR1: the loop's stats block and live tasks).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <reactor/loop_group.hpp>
#include <reactor/loop_stats.hpp>
#include <reactor/net/group_listener.hpp>
#include <reactor/net/group_server_lifetime.hpp>
#include <reactor/net/report_limiter.hpp>

#include "server_support.hpp"

namespace examples {

// --loops and --spreading: how many loops serve, and how connections are
// spread over them (reactor::GroupListener).
struct GroupOptions {
    std::size_t loops = 1;
    reactor::Spreading spreading = reactor::Spreading::least_connections;
    // Once the server has ended, how long each loop may take to finish what
    // is left (LoopGroupOptions::drain): posts between loops under way.
    reactor::Duration loop_drain{};

    // --loops 0: one per CPU this process may run on.
    std::size_t loop_count() const { return loops == 0 ? reactor::LoopGroup::available_cpus() : loops; }
    // The spreading as a server's lines say it ("clients spread by ...").
    std::string_view spreading_name() const {
        switch (spreading) {
        case reactor::Spreading::round_robin: return "round robin";
        case reactor::Spreading::reuse_port: return "the kernel (SO_REUSEPORT)";
        case reactor::Spreading::least_connections: break;
        }
        return "least connections";
    }
};

inline void add_group_options(Cli& cli, GroupOptions& g) {
    cli.add_option("--loops", g.loops,
                   "event loops serving the connections, each on a thread of its own (1: one loop, on the main "
                   "thread; 0: one per CPU this process may use)")
        ->check(range(0, 1024));
    cli.add_option_function(
           "--spreading",
           [&g](const std::string& name) {
               g.spreading = name == "round_robin" ? reactor::Spreading::round_robin
                             : name == "reuse_port" ? reactor::Spreading::reuse_port
                                                    : reactor::Spreading::least_connections;
           },
           "with --loops above 1, how connections are spread: least_connections (to the loop with the fewest), "
           "round_robin, or reuse_port (one SO_REUSEPORT listener per loop, the kernel picks)")
        ->check(one_of({"least_connections", "round_robin", "reuse_port"}))
        ->default_str("least_connections");
}

// A server on several loops: the group (loop 0 is the main thread's, under
// run()), its listener, and its end, with the lines the single-loop
// ServerLifetime prints, the same --exit-after, --max-seconds and
// --drain-seconds, and the same exit status (exit_status(): 1 once a
// listener has failed for good). --exit-after with reuse_port counts the connections of
// every loop and closes the listeners at the Nth: a few more, accepted by
// other loops meanwhile, may be served too. Made, listened and run on the
// main thread.
class GroupServer {
public:
    // `unit` names what the drain lines count: "connection(s)", or
    // "client(s)" for echo_server_streams, as on one loop.
    GroupServer(const ServerOptions& o, const GroupOptions& g, std::string name, std::string unit = "connection(s)")
        : options_(o), spreading_(g.spreading), group_(group_options(o, g)), name_(std::move(name)),
          unit_(std::move(unit)) {}

    reactor::LoopGroup& group() { return group_; }
    // After listen().
    reactor::GroupListener& listener() { return *listener_; }
    // Any thread: the orderly end for a program's own reason (chat_server's
    // console at Ctrl-D), printed as a signal's; whether it has begun.
    void shut_down(std::string why) { lifetime_->shut_down(std::move(why)); }
    bool draining() const { return lifetime_->draining(); }
    // Before run(): `cb` runs on loop 0 once the server has ended, before
    // the loops are asked to stop (what loop 0 runs besides, ends there).
    void on_ended(std::function<void()> cb) { on_ended_ = std::move(cb); }
    // Before run(): what SIGUSR1 prints of loop i after "<name>: loop i: ",
    // said on loop i's thread (the default: its connections and stats()).
    void describe_loops(std::function<std::string(std::size_t)> describe) { describe_ = std::move(describe); }
    std::size_t size() const { return group_.size(); }

    // Listens (exit 1 with the reason if it cannot), arranges the end and
    // SIGUSR1, and has loop 0 print the first line when run() starts it.
    // `on_accept` runs on the connection's loop, with that loop's index.
    void listen(const reactor::Address& address, reactor::GroupListener::AcceptCallback on_accept,
                reactor::Listener::Options listener_options) {
        reactor::GroupListener::Options lo;
        lo.spreading = spreading_;
        lo.listener = std::move(listener_options);
        const auto exit_after = static_cast<std::uint64_t>(options_.exit_after);
        if (spreading_ == reactor::Spreading::reuse_port && exit_after > 0) {
            lo.listener.max_accepts = 0;  // one count for every loop's listener, below
            on_accept = [this, exit_after, inner = std::move(on_accept)](const reactor::ConnectionPtr& c,
                                                                         std::size_t loop) {
                if (accepted_.fetch_add(1) + 1 == exit_after) listener_->close();
                inner(c, loop);
            };
        }
        try {
            listener_ = reactor::GroupListener::listen(group_, address, std::move(on_accept), std::move(lo));
        } catch (const std::exception& e) {
            fmt::print(stderr, "{}\n", e.what());
            std::exit(1);
        }
        reactor::GroupServerLifetime::Options lifetime;
        lifetime.drain_time = seconds_of(options_.drain_seconds);
        if (options_.max_seconds > 0) lifetime.max_run_time = seconds_of(options_.max_seconds);
        lifetime_.emplace(group_, *listener_, lifetime,
                          [this](const reactor::GroupServerLifetime::Report& r) { print(r); });
        lifetime_->on_ended([this] {
            if (on_ended_) on_ended_();
            group_.request_stop();
        });
        for (std::size_t i = 0; i < size(); ++i) {
            if (const reactor::ListenerPtr l = listener_->listener_on(i))
                l->set_error_callback([this, i](reactor::Listener& l, std::error_code error, std::string_view what) {
                    on_listener_error(i, l, error, what);
                });
        }
        if (size() == 1) {
            examples::print_stats_on_sigusr1(group_.loop(0), name_);  // the single-loop block
        } else {
            print_stats_on_sigusr1();
        }
        // Said by loop 0 once run() has started every loop's thread: a loop
        // that cannot start ends the server before it claims to listen.
        group_.loop(0).call_soon([this] { announce(group_.loop(0), listener_->address()); });
    }

    // Loop 0 on this thread, the others on theirs, until the end.
    void run() { group_.run(); }

    // After run(): the totals, and "; loop 0: 3 connections, 0 aborted; loop
    // 1: ..." with `extra(i)` after each loop's connections (", 120 bytes
    // echoed"), for the summary line.
    std::uint64_t connections() const { return ended_.total().accepted; }
    std::uint64_t aborted() const { return ended_.total().aborted; }
    // What main() returns, as ServerLifetime::exit_status(): 0 for an end
    // asked for, 1 if a listener failed (its line is on stderr).
    int exit_status() const { return failed_ ? 1 : 0; }
    template <class Extra>
    std::string per_loop(Extra extra) const {
        std::string out;
        for (std::size_t i = 0; i < ended_.loops.size(); ++i)
            out += fmt::format("; loop {}: {} connections{}, {} aborted", i, ended_.loops[i].accepted, extra(i),
                               ended_.loops[i].aborted);
        return out;
    }

private:
    static reactor::Duration seconds_of(double s) {
        return std::chrono::duration_cast<reactor::Duration>(std::chrono::duration<double>(s));
    }
    static reactor::LoopGroupOptions group_options(const ServerOptions& o, const GroupOptions& g) {
        reactor::LoopGroupOptions options;
        options.loops = g.loop_count();
        options.drain = g.loop_drain;
        options.loop_options = [backend = o.backend](std::size_t) { return on(backend); };
        return options;
    }

    // On loop 0: the same lines as ServerLifetime's, and the end's counts.
    void print(const reactor::GroupServerLifetime::Report& r) {
        using Kind = reactor::GroupServerLifetime::Report::Kind;
        using Cause = reactor::GroupServerLifetime::Report::Cause;
        switch (r.kind) {
        case Kind::draining:
            fmt::print("{}: {}: stopped accepting; draining {} {} for up to {}s\n", name_, r.why, r.total().open,
                       unit_, options_.drain_seconds);
            break;
        case Kind::aborting:
            if (r.cause != Cause::stopped_again) return;  // the drain or run time is over: quietly
            fmt::print("{}: {} again: aborting {} {}\n", name_, r.why, r.total().open, unit_);
            break;
        case Kind::ended: ended_ = {r.kind, r.cause, {}, r.loops}; return;
        }
        std::fflush(stdout);
    }

    // A loop's listener, on that loop (ServerLifetime's lines): accept
    // trouble (out of fds; accepting resumes by itself) is one stderr line,
    // at most one per 10 s per loop; a listener that fails for good (the loop
    // cannot watch it) is one line, then the orderly end, and exit status 1.
    void on_listener_error(std::size_t i, reactor::Listener& l, std::error_code error, std::string_view what) {
        std::uint64_t left_out = 0;
        if (l.is_listening() && !trouble_reports_[i].admit(group_.loop(i).now(), left_out)) return;
        fmt::print(stderr, "{}: {} ({}){}\n", name_, what, error.message(),
                   left_out == 0 ? std::string() : fmt::format("; {} more since the last report", left_out));
        std::fflush(stderr);
        if (l.is_listening()) return;
        failed_ = true;
        shut_down("the listener failed");
    }

    // What a loop says of itself by default, on its own thread.
    std::string describe(std::size_t i) {
        const reactor::LoopStats st = group_.loop(i).stats();
        return fmt::format("{} live connection(s), {} accepted, {} iterations, {} callbacks run, {} io events, {} "
                           "timers fired, {} posts taken, {} wake-up writes",
                           listener_->connections_on(i).size(), listener_->handed()[i], st.iterations,
                           st.callbacks_run, st.io_events, st.timers_fired, st.posts_taken, st.wakeup_writes);
    }

    // `kill -USR1 <pid>`: one line per loop, "<name>: loop I: " and what the
    // loop says of itself on its own thread, gathered on loop 0 and printed
    // there in loop order.
    void print_stats_on_sigusr1() {
        group_.loop(0).add_signal_handler(SIGUSR1, [this] {
            struct Gathered {
                std::vector<std::string> lines;
                std::size_t left;
            };
            auto gathered = std::make_shared<Gathered>(Gathered{std::vector<std::string>(size()), size()});
            for (std::size_t i = 0; i < size(); ++i) {
                (void)group_.loop(i).try_call_soon_threadsafe([this, i, gathered] {
                    std::string line = fmt::format("{}: loop {}: {}\n", name_, i, describe_(i));
                    (void)group_.loop(0).try_call_soon_threadsafe([i, gathered, line = std::move(line)]() mutable {
                        gathered->lines[i] = std::move(line);
                        if (--gathered->left > 0) return;
                        for (const std::string& l : gathered->lines) fmt::print("{}", l);
                        std::fflush(stdout);
                    });
                });
            }
        });
    }

    const ServerOptions& options_;
    reactor::Spreading spreading_;
    reactor::LoopGroup group_;
    std::string name_;
    std::string unit_;
    std::unique_ptr<reactor::GroupListener> listener_;
    std::optional<reactor::GroupServerLifetime> lifetime_;
    std::function<void()> on_ended_;
    std::function<std::string(std::size_t)> describe_ = [this](std::size_t i) { return describe(i); };
    std::atomic<std::uint64_t> accepted_{0};  // --exit-after with reuse_port: every loop counts here
    std::vector<reactor::ReportLimiter> trouble_reports_ =
        std::vector<reactor::ReportLimiter>(size(), reactor::ReportLimiter(std::chrono::seconds(10)));
    std::atomic<bool> failed_{false};  // a listener failed for good (set on its loop)
    reactor::GroupServerLifetime::Report ended_;
};

}  // namespace examples
