// SPDX-License-Identifier: MIT
// ServerLifetime: the one-loop front of the server-end mechanism
// (server_end.hpp), with what only a single listener has: its error
// callback (accept trouble, a listener that fails for good) and its report.
#include "reactor/net/server_lifetime.hpp"

#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "reactor/error_context.hpp"
#include "server_end.hpp"

namespace reactor {

namespace {

// One loop: the listener's.
class OneLoop final : public detail::ServedLoops {
public:
    OneLoop(Scheduler& sched, ListenerPtr l) : sched_(sched), listener_(std::move(l)) {}
    std::size_t size() const override { return 1; }
    Scheduler& loop(std::size_t) const override { return sched_; }
    ListenerPtr listener_on(std::size_t) const override { return listener_; }
    ConnectionSet& connections_on(std::size_t) const override { return listener_->connections(); }
    std::vector<std::size_t> live() const override { return {listener_->connections().size()}; }
    std::vector<std::uint64_t> handed() const override { return {listener_->accepted()}; }
    void close() override { listener_->close(); }

private:
    Scheduler& sched_;
    ListenerPtr listener_;
};

}  // namespace

ServerLifetime::ServerLifetime(Scheduler& sched, ListenerPtr listener, Options options, ReportCallback on_report)
    : sched_(sched), listener_(std::move(listener)), on_report_(std::move(on_report)),
      trouble_reports_(options.report_interval) {
    if (!listener_) throw std::invalid_argument("ServerLifetime: no listener");
    if (options.drain_time < Duration::zero() || options.max_run_time < Duration::zero())
        throw std::invalid_argument("ServerLifetime: negative drain_time or max_run_time");
    detail::ServerEnd::Options o{options.drain_time, options.max_run_time, std::move(options.stop_signals), 0};
    end_ = std::make_shared<detail::ServerEnd>(
        std::make_unique<OneLoop>(sched, listener_), std::move(o),
        [this](detail::ServerEnd::Kind kind, Report::Cause cause, std::string_view why) {
            switch (kind) {
            case detail::ServerEnd::Kind::draining:
                return report(Report::Kind::draining, cause, why, listener_->connections().size());
            case detail::ServerEnd::Kind::aborting:
                return report(Report::Kind::aborting, cause, why, listener_->connections().size());
            case detail::ServerEnd::Kind::ended: return report(Report::Kind::ended, cause, {}, 0);
            }
        },
        true);
    end_->start_watching();
    listener_->set_error_callback(
        [this](Listener& l, std::error_code error, std::string_view what) { on_listener_error(l, error, what); });
}

ServerLifetime::~ServerLifetime() {
    end_->stop_watching();
    listener_->set_error_callback({});
}

void ServerLifetime::shut_down(std::string_view why) { end_->stop(std::string(why)); }

void ServerLifetime::abort_all(Report::Cause cause) {
    if (cause == Report::Cause::max_run_time) return end_->run_time_over();
    end_->abort_everywhere();
}

void ServerLifetime::on_ended(std::function<void()> cb) { end_->on_ended = std::move(cb); }
bool ServerLifetime::draining() const noexcept { return end_->is_draining.load(); }
bool ServerLifetime::ended() const noexcept { return end_->is_ended.load(); }
std::uint64_t ServerLifetime::aborted() const noexcept { return end_->aborted_total(); }

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
