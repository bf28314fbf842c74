// SPDX-License-Identifier: MIT
// GroupServerLifetime: the drain and the end of a GroupListener's server,
// run from the control loop, each loop aborting and counting its own
// connections (see group_server_lifetime.hpp for the threads rules).
//
// How the end is found: each listener's wait_closed posts to the control
// loop; once none is left, no socket can be handed to a loop any more, but
// some may still be on their way (posted by the acceptor, already counted
// in GroupListener::live_connections). So each loop is asked to say when
// its set is empty, and the control loop takes a loop as done only when its
// live count is zero too; otherwise it asks that loop again.
#include "reactor/net/group_server_lifetime.hpp"

#include <atomic>
#include <stdexcept>
#include <utility>

#include "reactor/handle.hpp"
#include "stop_signal_name.hpp"

namespace reactor {

GroupServerLifetime::LoopCounts GroupServerLifetime::Report::total() const noexcept {
    LoopCounts sum;
    for (const LoopCounts& l : loops) {
        sum.accepted += l.accepted;
        sum.open += l.open;
        sum.aborted += l.aborted;
    }
    return sum;
}

struct GroupServerLifetime::State : std::enable_shared_from_this<State> {
    using Cause = Report::Cause;

    State(LoopGroup& g, GroupListener& l, Options o, ReportCallback r)
        : group(g), listener(l), options(std::move(o)),
          aborted(std::make_unique<std::atomic<std::uint64_t>[]>(g.size())), on_report(std::move(r)),
          loop_done(g.size(), false) {}

    LoopGroup& group;
    GroupListener& listener;
    const Options options;
    // Any thread.
    std::unique_ptr<std::atomic<std::uint64_t>[]> aborted;  // per loop, by that loop
    std::atomic<bool> is_draining{false};
    std::atomic<bool> is_ended{false};
    // Set once, by the control loop, before it asks the loops to abort: a
    // loop asked whether it is empty aborts what it still has (a socket that
    // was on its way when the others were aborted).
    std::atomic<bool> aborting{false};
    // The control loop only (and the owning thread before start).
    ReportCallback on_report;
    std::function<void()> on_ended;
    std::string why;
    Handle drain_timer, max_run_timer;
    std::size_t listeners_open = 0;
    std::vector<bool> loop_done;
    std::size_t loops_done = 0;
    bool alive = true;  // cleared by ~GroupServerLifetime, when the control loop is not running

    Scheduler& control() const { return group.loop(options.control_loop); }

    // Runs `fn` on loop `index` later; dropped if that loop has ended.
    template <class Fn>
    void post(std::size_t index, Fn fn) {
        (void)group.loop(index).try_call_soon_threadsafe(Callback(std::move(fn)));
    }
    template <class Fn>
    void post_control(Fn fn) {
        post(options.control_loop, std::move(fn));
    }

    // ---- on the control loop ----

    void stop(std::string reason) {
        if (!alive || is_ended.load()) return;
        if (is_draining.load()) {
            report(Report::Kind::aborting, Cause::stopped_again, reason);
            return abort_everywhere();
        }
        why = std::move(reason);
        is_draining.store(true);
        listener.close();
        report(Report::Kind::draining, Cause::none, why);
        // The connections' graceful ends are theirs (a protocol decides when
        // a conversation is over); the timer bounds how long the server
        // waits for them.
        drain_timer = control().call_later(options.drain_time, [self = shared_from_this()] {
            if (self->open_total() == 0) return;
            self->report(Report::Kind::aborting, Cause::drain_time_over, "drain time over");
            self->abort_everywhere();
        });
    }

    void run_time_over() {
        if (!alive || is_ended.load()) return;
        if (open_total() > 0) report(Report::Kind::aborting, Cause::max_run_time, "max run time");
        abort_everywhere();
    }

    void abort_everywhere() {
        listener.close();
        drain_timer.cancel();
        aborting.store(true);
        for (std::size_t i = 0; i < group.size(); ++i)
            post(i, [self = shared_from_this(), i] { self->abort_loop(i); });
    }

    void listener_closed() {
        if (listeners_open == 0 || --listeners_open > 0) return;
        for (std::size_t i = 0; i < group.size(); ++i) ask_when_empty(i);
    }

    void ask_when_empty(std::size_t i) {
        post(i, [self = shared_from_this(), i] {
            if (self->aborting.load()) self->abort_loop(i);
            self->listener.connections_on(i).when_empty([self, i] {
                self->post_control([self, i] { self->loop_empty(i); });
            });
        });
    }

    void loop_empty(std::size_t i) {
        if (loop_done[i]) return;
        if (listener.live_connections()[i] > 0) return ask_when_empty(i);  // a socket was on its way
        loop_done[i] = true;
        if (++loops_done == group.size()) end();
    }

    void end() {
        if (!alive || is_ended.exchange(true)) return;
        drain_timer.cancel();
        max_run_timer.cancel();
        report(Report::Kind::ended, Cause::none, why);
        if (on_ended) std::exchange(on_ended, {})();
    }

    // ---- on loop `i` ----

    void abort_loop(std::size_t i) {
        ConnectionSet& set = listener.connections_on(i);
        aborted[i].fetch_add(set.size());
        set.abort_all();
    }

    // ---- any thread ----

    std::size_t open_total() const {
        std::size_t n = 0;
        for (std::size_t open : listener.live_connections()) n += open;
        return n;
    }

    void report(Report::Kind kind, Cause cause, std::string_view reason) {
        if (!on_report) return;
        Report r;
        r.kind = kind;
        r.cause = cause;
        r.why = reason;
        const std::vector<std::size_t> live = listener.live_connections();
        const std::vector<std::uint64_t> handed = listener.handed();
        for (std::size_t i = 0; i < group.size(); ++i)
            r.loops.push_back({handed[i], kind == Report::Kind::ended ? 0 : live[i], aborted[i].load()});
        on_report(r);
    }
};

GroupServerLifetime::GroupServerLifetime(LoopGroup& group, GroupListener& listener, Options options,
                                         ReportCallback on_report) {
    if (group.started())
        throw std::logic_error("reactor: GroupServerLifetime made after the LoopGroup started (make it before start())");
    if (options.control_loop >= group.size())
        throw std::out_of_range("reactor: GroupServerLifetime control_loop out of the group");
    if (options.drain_time < Duration::zero() || options.max_run_time < Duration::zero())
        throw std::invalid_argument("GroupServerLifetime: negative drain_time or max_run_time");
    state_ = std::make_shared<State>(group, listener, std::move(options), std::move(on_report));
    State& s = *state_;
    Scheduler& control = s.control();
    // The group has not started: the loops' loop-thread-only members are the
    // owning thread's. Undo the signals already added if a later one is
    // refused, so a throwing constructor leaves nothing.
    std::size_t added = 0;
    try {
        for (int signo : s.options.stop_signals) {
            control.add_signal_handler(signo,
                                       [self = state_, signo] { self->stop(std::string(detail::stop_signal_name(signo))); });
            ++added;
        }
    } catch (...) {
        for (std::size_t i = 0; i < added; ++i) control.remove_signal_handler(s.options.stop_signals[i]);
        throw;
    }
    if (s.options.max_run_time > Duration::zero())
        s.max_run_timer = control.call_later(s.options.max_run_time, [self = state_] { self->run_time_over(); });
    for (std::size_t i = 0; i < group.size(); ++i) {
        ListenerPtr l = listener.listener_on(i);
        if (!l) continue;
        ++s.listeners_open;
        // Runs on loop i; the count is the control loop's.
        l->wait_closed([self = state_] { self->post_control([self] { self->listener_closed(); }); });
    }
    // No listener at all (closed already): the end is when the loops are empty.
    if (s.listeners_open == 0) {
        s.listeners_open = 1;
        s.post_control([self = state_] { self->listener_closed(); });
    }
}

GroupServerLifetime::~GroupServerLifetime() {
    State& s = *state_;
    s.alive = false;
    s.drain_timer.cancel();
    s.max_run_timer.cancel();
    for (int signo : s.options.stop_signals) s.control().remove_signal_handler(signo);
    s.on_report = {};
    s.on_ended = {};
}

void GroupServerLifetime::shut_down(std::string why) {
    state_->post_control([self = state_, why = std::move(why)]() mutable { self->stop(std::move(why)); });
}

void GroupServerLifetime::abort_all() {
    state_->post_control([self = state_] {
        if (self->alive && !self->is_ended.load()) self->abort_everywhere();
    });
}

void GroupServerLifetime::on_ended(std::function<void()> cb) { state_->on_ended = std::move(cb); }

bool GroupServerLifetime::draining() const noexcept { return state_->is_draining.load(); }
bool GroupServerLifetime::ended() const noexcept { return state_->is_ended.load(); }

std::uint64_t GroupServerLifetime::aborted() const noexcept {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < state_->group.size(); ++i) n += state_->aborted[i].load();
    return n;
}

}  // namespace reactor
