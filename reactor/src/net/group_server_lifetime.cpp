// SPDX-License-Identifier: MIT
// GroupServerLifetime: the front of the one server-end mechanism
// (server_end.hpp) for a GroupListener, and its per-loop report.
#include "reactor/net/group_server_lifetime.hpp"

#include <stdexcept>
#include <utility>

#include "server_end.hpp"

namespace reactor {

namespace {

class GroupLoops final : public detail::ServedLoops {
public:
    GroupLoops(LoopGroup& g, GroupListener& l, std::size_t control) : group_(g), listener_(l), control_(control) {}
    std::size_t size() const override { return group_.size(); }
    Scheduler& loop(std::size_t i) const override { return group_.loop(i); }
    ListenerPtr listener_on(std::size_t i) const override { return listener_.listener_on(i); }
    ConnectionSet& connections_on(std::size_t i) const override { return listener_.connections_on(i); }
    std::vector<std::size_t> live() const override { return listener_.live_connections(); }
    std::vector<std::uint64_t> handed() const override { return listener_.handed(); }
    // On the control loop: its own listener (the acceptor, unless
    // reuse_port) closes now, so the `draining` report that follows is true
    // of it (a group of one accepts nothing more, as ServerLifetime's server);
    // the other loops' closes are posted.
    void close() override {
        if (const ListenerPtr l = listener_.listener_on(control_)) l->close();
        listener_.close();
    }

private:
    LoopGroup& group_;
    GroupListener& listener_;
    std::size_t control_;
};

}  // namespace

GroupServerLifetime::LoopCounts GroupServerLifetime::Report::total() const noexcept {
    LoopCounts sum;
    for (const LoopCounts& l : loops) {
        sum.accepted += l.accepted;
        sum.open += l.open;
        sum.aborted += l.aborted;
    }
    return sum;
}

GroupServerLifetime::GroupServerLifetime(LoopGroup& group, GroupListener& listener, Options options,
                                         ReportCallback on_report) {
    if (group.started())
        throw std::logic_error("reactor: GroupServerLifetime made after the LoopGroup started (make it before start())");
    if (options.control_loop >= group.size())
        throw std::out_of_range("reactor: GroupServerLifetime control_loop out of the group");
    if (options.drain_time < Duration::zero() || options.max_run_time < Duration::zero())
        throw std::invalid_argument("GroupServerLifetime: negative drain_time or max_run_time");
    detail::ServerEnd::Options o{options.drain_time, options.max_run_time, std::move(options.stop_signals),
                                 options.control_loop};
    end_ = std::make_shared<detail::ServerEnd>(std::make_unique<GroupLoops>(group, listener, options.control_loop), std::move(o),
                                               detail::ServerEnd::ReportFn{}, false);
    if (on_report) {
        // On the control loop; reads what any thread may read.
        end_->report = [end = end_.get(), cb = std::move(on_report)](detail::ServerEnd::Kind kind, Report::Cause cause,
                                                                     std::string_view why) {
            Report r;
            r.kind = static_cast<Report::Kind>(kind);
            r.cause = cause;
            r.why = why;
            const std::vector<std::size_t> live = end->served().live();
            const std::vector<std::uint64_t> handed = end->served().handed();
            for (std::size_t i = 0; i < live.size(); ++i)
                r.loops.push_back({handed[i], kind == detail::ServerEnd::Kind::ended ? 0 : live[i], end->aborted_on(i)});
            cb(r);
        };
    }
    // The group has not started: the loops' loop-thread-only members are the
    // owning thread's.
    end_->start_watching();
}

GroupServerLifetime::~GroupServerLifetime() { end_->stop_watching(); }

void GroupServerLifetime::shut_down(std::string why) {
    end_->post_control([end = end_, why = std::move(why)]() mutable { end->stop(std::move(why)); });
}

void GroupServerLifetime::abort_all() {
    end_->post_control([end = end_] {
        if (end->alive && !end->is_ended.load()) end->abort_everywhere();
    });
}

void GroupServerLifetime::on_ended(std::function<void()> cb) { end_->on_ended = std::move(cb); }

bool GroupServerLifetime::draining() const noexcept { return end_->is_draining.load(); }
bool GroupServerLifetime::ended() const noexcept { return end_->is_ended.load(); }
std::uint64_t GroupServerLifetime::aborted() const noexcept { return end_->aborted_total(); }

}  // namespace reactor
