// SPDX-License-Identifier: MIT
// ServerEnd: the drain and the end of a server on one loop or many, run from
// the control loop, each loop aborting and counting its own connections and
// closing its own gate (see server_end.hpp for how the end is found).
#include "server_end.hpp"

#include <utility>

#include "stop_signal_name.hpp"

namespace reactor::detail {

ServerEnd::ServerEnd(std::unique_ptr<ServedLoops> loops, Options o, ReportFn r, bool single)
    : options(std::move(o)), report(std::move(r)), loops_(std::move(loops)), single_(single),
      aborted_(std::make_unique<std::atomic<std::uint64_t>[]>(loops_->size())),
      connections_gone_(loops_->size(), false), loop_done_(loops_->size(), false) {}

void ServerEnd::start_watching() {
    Scheduler& ctl = control();
    // Undo the signals already added if a later one is refused, so a
    // throwing constructor leaves nothing.
    std::size_t added = 0;
    try {
        for (int signo : options.stop_signals) {
            ctl.add_signal_handler(signo, [self = shared_from_this(), signo] {
                self->stop(std::string(stop_signal_name(signo)));
            });
            ++added;
        }
    } catch (...) {
        for (std::size_t i = 0; i < added; ++i) ctl.remove_signal_handler(options.stop_signals[i]);
        throw;
    }
    if (options.max_run_time > Duration::zero())
        max_run_timer_ = ctl.call_later(options.max_run_time, [self = shared_from_this()] { self->run_time_over(); });
    for (std::size_t i = 0; i < loops_->size(); ++i) {
        ListenerPtr l = loops_->listener_on(i);
        if (!l) continue;
        ++listeners_open_;
        // Runs on loop i; the count is the control loop's.
        l->wait_closed([self = shared_from_this()] { self->post_control([self] { self->listener_closed(); }); });
    }
    // No listener at all (closed already): the end is when the loops are empty.
    if (listeners_open_ == 0) {
        listeners_open_ = 1;
        post_control([self = shared_from_this()] { self->listener_closed(); });
    }
}

void ServerEnd::stop_watching() {
    alive = false;
    drain_timer_.cancel();
    max_run_timer_.cancel();
    for (int signo : options.stop_signals) control().remove_signal_handler(signo);
    report = {};
    on_ended = {};
}

// ---- on the control loop ----

void ServerEnd::stop(std::string reason) {
    if (!alive || is_ended.load()) return;
    if (is_draining.load()) {
        if (report) report(Kind::aborting, Cause::stopped_again, reason);
        return abort_everywhere();
    }
    why = std::move(reason);
    is_draining.store(true);
    loops_->close();
    if (report) report(Kind::draining, Cause::none, why);
    // The connections' graceful ends are theirs (a protocol decides when a
    // conversation is over); the timer bounds how long the server waits for
    // them. Work held at the gate is not aborted: the end waits for it.
    drain_timer_ = control().call_later(options.drain_time, [self = shared_from_this()] {
        if (self->open_total() == 0) return;
        if (self->report) self->report(Kind::aborting, Cause::drain_time_over, "drain time over");
        self->abort_everywhere();
    });
}

void ServerEnd::run_time_over() {
    if (!alive || is_ended.load()) return;
    if (open_total() > 0 && report) report(Kind::aborting, Cause::max_run_time, "max run time");
    abort_everywhere();
}

void ServerEnd::abort_everywhere() {
    loops_->close();
    drain_timer_.cancel();
    aborting_.store(true);
    for (std::size_t i = 0; i < loops_->size(); ++i) post(i, [self = shared_from_this(), i] { self->abort_loop(i); });
}

void ServerEnd::listener_closed() {
    if (listeners_open_ == 0 || --listeners_open_ > 0) return;
    for (std::size_t i = 0; i < loops_->size(); ++i) ask_when_empty(i);
}

void ServerEnd::ask_when_empty(std::size_t i) {
    post(i, [self = shared_from_this(), i] {
        if (self->aborting_.load()) self->abort_loop(i);
        self->loops_->connections_on(i).when_empty([self, i] {
            self->post_control([self, i] { self->loop_empty(i); });
        });
    });
}

void ServerEnd::loop_empty(std::size_t i) {
    if (connections_gone_[i]) return;
    if (loops_->live()[i] > 0) return ask_when_empty(i);  // a socket was on its way
    connections_gone_[i] = true;
    post(i, [self = shared_from_this(), i] { self->close_gate(i); });
}

// ---- on loop `i` ----

void ServerEnd::close_gate(std::size_t i) {
    loops_->connections_on(i).gate().close([self = shared_from_this(), i] {
        self->post_control([self, i] { self->gate_done(i); });
    });
}

void ServerEnd::abort_loop(std::size_t i) {
    ConnectionSet& set = loops_->connections_on(i);
    aborted_[i].fetch_add(set.size());
    set.abort_all();
}

// ---- on the control loop ----

void ServerEnd::gate_done(std::size_t i) {
    if (loop_done_[i]) return;
    loop_done_[i] = true;
    if (++loops_done_ == loops_->size()) end();
}

void ServerEnd::end() {
    if (!alive || is_ended.exchange(true)) return;
    drain_timer_.cancel();
    max_run_timer_.cancel();
    if (report) report(Kind::ended, Cause::none, why);
    if (on_ended) std::exchange(on_ended, {})();
}

// ---- any thread ----

std::size_t ServerEnd::open_total() const {
    std::size_t n = 0;
    for (std::size_t open : loops_->live()) n += open;
    return n;
}

std::uint64_t ServerEnd::aborted_total() const {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < loops_->size(); ++i) n += aborted_[i].load();
    return n;
}

}  // namespace reactor::detail
