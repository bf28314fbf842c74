// SPDX-License-Identifier: MIT
#include "reactor/net/server_lifetime.hpp"

#include <cstring>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "reactor/error_context.hpp"
#include "stop_signal_name.hpp"

namespace reactor {

ServerLifetime::ServerLifetime(Scheduler& sched, ListenerPtr listener, Options options, ReportCallback on_report)
    : sched_(sched), listener_(std::move(listener)), options_(std::move(options)), on_report_(std::move(on_report)),
      trouble_reports_(options_.report_interval), self_(std::make_shared<ServerLifetime*>(this)) {
    if (!listener_) throw std::invalid_argument("ServerLifetime: no listener");
    if (options_.drain_time < Duration::zero() || options_.max_run_time < Duration::zero())
        throw std::invalid_argument("ServerLifetime: negative drain_time or max_run_time");
    // Signal numbers are checked by add_signal_handler; undo the ones already
    // added if a later one is refused, so a throwing constructor leaves nothing.
    std::size_t added = 0;
    try {
        for (int signo : options_.stop_signals) {
            sched_.add_signal_handler(signo, [this, signo] { shut_down(detail::stop_signal_name(signo)); });
            ++added;
        }
    } catch (...) {
        for (std::size_t i = 0; i < added; ++i) sched_.remove_signal_handler(options_.stop_signals[i]);
        throw;
    }
    if (options_.max_run_time > Duration::zero())
        max_run_timer_ = sched_.call_later(options_.max_run_time, [this] { abort_all(Report::Cause::max_run_time); });
    listener_->set_error_callback(
        [this](Listener& l, std::error_code error, std::string_view what) { on_listener_error(l, error, what); });
    listener_->wait_closed([self = std::weak_ptr<ServerLifetime*>(self_)] {
        auto alive = self.lock();
        if (!alive) return;
        ServerLifetime& me = **alive;
        me.ended_ = true;
        // Once nothing is left, no timer of ours may keep run() going.
        me.max_run_timer_.cancel();
        me.drain_timer_.cancel();
        me.report(Report::Kind::ended, Report::Cause::none, {}, 0);
        if (me.on_ended_) std::exchange(me.on_ended_, {})();
    });
}

ServerLifetime::~ServerLifetime() {
    self_.reset();
    max_run_timer_.cancel();
    drain_timer_.cancel();
    for (int signo : options_.stop_signals) sched_.remove_signal_handler(signo);
    listener_->set_error_callback({});
}

void ServerLifetime::shut_down(std::string_view why) {
    if (ended_) return;
    if (draining_) {
        report(Report::Kind::aborting, Report::Cause::stopped_again, why, listener_->connections().size());
        return abort_all(Report::Cause::stopped_again);
    }
    draining_ = true;
    listener_->close();
    report(Report::Kind::draining, Report::Cause::none, why, listener_->connections().size());
    // Finishing may need nothing more than the close: the connections'
    // graceful ends are theirs (a protocol decides when a conversation is
    // over); the timer bounds how long the server waits for them.
    drain_timer_ = sched_.call_later(options_.drain_time, [this] {
        if (!listener_->connections().size()) return;
        report(Report::Kind::aborting, Report::Cause::drain_time_over, "drain time over", listener_->connections().size());
        abort_all(Report::Cause::drain_time_over);
    });
}

void ServerLifetime::abort_all(Report::Cause cause) {
    listener_->close();
    const std::size_t open = listener_->connections().size();
    if (cause == Report::Cause::max_run_time && open > 0)
        report(Report::Kind::aborting, cause, "max run time", open);
    aborted_ += open;
    listener_->connections().abort_all();
    drain_timer_.cancel();
}

void ServerLifetime::on_listener_error(Listener& l, std::error_code error, std::string_view what) {
    if (l.is_listening()) {
        if (on_report_) return report(Report::Kind::accept_trouble, Report::Cause::none, what, 0, error);
        std::uint64_t left_out = 0;
        if (!trouble_reports_.admit(sched_.now(), left_out)) return;
        ErrorContext ctx;
        ctx.message = fmt::format("listener {}: {} ({})", l.address().to_string(), what, error.message());
        if (left_out > 0) ctx.message += fmt::format("; {} more since the last report", left_out);
        return sched_.call_exception_handler(ctx);
    }
    failed_ = true;
    if (on_report_) {
        report(Report::Kind::listener_failed, Report::Cause::none, what, 0, error);
    } else {
        ErrorContext ctx;
        ctx.message = fmt::format("listener {}: {} ({}); shutting the server down", l.address().to_string(), what,
                                  error.message());
        sched_.call_exception_handler(ctx);
    }
    shut_down("the listener failed");
}

void ServerLifetime::report(Report::Kind kind, Report::Cause cause, std::string_view why, std::size_t connections,
                            std::error_code error) {
    if (!on_report_) return;
    Report r;
    r.kind = kind;
    r.cause = cause;
    r.why = why;
    r.connections = connections;
    r.error = error;
    on_report_(r);
}

}  // namespace reactor
