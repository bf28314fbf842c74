// SPDX-License-Identifier: MIT
// Connection deadlines: read, write and idle timeouts (see ConnectionOptions).
//
// The loop times them (detail::DeadlineQueues, deadline_queues.hpp): a
// connection with a timeout joins the group of its loop's connections with
// the same three timeouts, and sits in one of the group's queues for each
// deadline that runs now: the read deadline while reading (open, not
// paused, before EOF), the write deadline while output waits, the idle
// deadline while open. Traffic restarts a clock and moves the connection to
// the back of that queue; setting a timeout starts its clock now, as does
// resuming reading for the read deadline. Nothing is allocated or timed
// per connection: the group's one timer ends the connections whose
// deadlines have passed.
#include <algorithm>

#include "deadline_queues.hpp"

namespace reactor {

using detail::DeadlineKind;

// Ours while the fd is: `timeouts_` is set.
detail::DeadlineQueues& Connection::deadline_queues() const noexcept { return *timeouts_->queues; }

// The group for (read, write, idle), not all zero, joined; the clocks made
// first if we had no group. May throw (std::bad_alloc) with nothing changed.
detail::TimeoutGroup& Connection::join_timeouts(Duration read, Duration write, Duration idle) {
    if (timeouts_) return deadline_queues().join(read, write, idle);
    auto& queues = scheduler().service<detail::DeadlineQueues>();
    detail::DeadlineClocks& clocks = queues.make_clocks(fd_);
    clocks.read_start = clocks.idle_start = scheduler().now();
    if (out_) out_->write_start = scheduler().now();
    return queues.join(read, write, idle);
}

// Each deadline that runs now, in its queue.
void Connection::start_deadlines() {
    if (!timeouts_) return;
    detail::DeadlineQueues& queues = deadline_queues();
    if (reader_registered_) queues.link<DeadlineKind::read>(*timeouts_, fd_);
    if (has_output()) queues.link<DeadlineKind::write>(*timeouts_, fd_);
    if (state_ == State::open) queues.link<DeadlineKind::idle>(*timeouts_, fd_);
}

// Out of every queue and the group: before the fd is forgotten (the queues
// find their connections through it).
void Connection::leave_deadlines() noexcept {
    if (!timeouts_) return;
    detail::DeadlineQueues& queues = deadline_queues();
    queues.unlink<DeadlineKind::read>(*timeouts_, fd_);
    queues.unlink<DeadlineKind::idle>(*timeouts_, fd_);
    if (out_) queues.unlink<DeadlineKind::write>(*timeouts_, fd_);
    queues.leave(*std::exchange(timeouts_, nullptr));
}

void Connection::change_timeout(DeadlineKind kind, Duration t) {
    t = std::max(t, Duration::zero());
    if (state_ == State::closed) return;  // nothing to time; the loop may be gone
    const Duration zero = Duration::zero();
    Duration read = timeouts_ ? timeouts_->read : zero;
    Duration write = timeouts_ ? timeouts_->write : zero;
    Duration idle = timeouts_ ? timeouts_->idle : zero;
    (kind == DeadlineKind::read ? read : kind == DeadlineKind::write ? write : idle) = t;
    if (read == zero && write == zero && idle == zero) return leave_deadlines();
    detail::TimeoutGroup& next = join_timeouts(read, write, idle);
    leave_deadlines();
    timeouts_ = &next;
    detail::DeadlineClocks& clocks = deadline_queues().clocks(fd_);
    switch (kind) {  // its count starts now
    case DeadlineKind::read: clocks.read_start = scheduler().now(); break;
    case DeadlineKind::write:
        if (out_) out_->write_start = scheduler().now();
        break;
    case DeadlineKind::idle: clocks.idle_start = scheduler().now(); break;
    }
    start_deadlines();
}

void Connection::set_read_timeout(Duration t) {
    check_thread("Connection::set_read_timeout");
    change_timeout(DeadlineKind::read, t);
}

void Connection::set_write_timeout(Duration t) {
    check_thread("Connection::set_write_timeout");
    change_timeout(DeadlineKind::write, t);
}

void Connection::set_idle_timeout(Duration t) {
    check_thread("Connection::set_idle_timeout");
    change_timeout(DeadlineKind::idle, t);
}

void Connection::note_read_time() noexcept {
    detail::DeadlineQueues& queues = deadline_queues();
    detail::DeadlineClocks& clocks = queues.clocks(fd_);
    clocks.read_start = clocks.idle_start = scheduler().now();
    queues.touch<DeadlineKind::read>(*timeouts_, fd_);
    queues.touch<DeadlineKind::idle>(*timeouts_, fd_);
}

void Connection::note_write_time() noexcept {
    detail::DeadlineQueues& queues = deadline_queues();
    queues.clocks(fd_).idle_start = scheduler().now();
    queues.touch<DeadlineKind::idle>(*timeouts_, fd_);
    if (out_) note_output_time(queues);
}

// Apart from note_write_time, whose common case (everything sent, no
// output waiting) then needs fewer registers.
void Connection::note_output_time(detail::DeadlineQueues& queues) noexcept {
    out_->write_start = scheduler().now();
    queues.touch<DeadlineKind::write>(*timeouts_, fd_);
}

void Connection::output_queued() {
    note_write_time();  // the write timeout counts from here
    deadline_queues().link<DeadlineKind::write>(*timeouts_, fd_);
}

// The reader was registered (the read timeout counts from here) or dropped.
void Connection::reading_started() {
    deadline_queues().clocks(fd_).read_start = scheduler().now();
    deadline_queues().link<DeadlineKind::read>(*timeouts_, fd_);
}

void Connection::reading_stopped() noexcept { deadline_queues().unlink<DeadlineKind::read>(*timeouts_, fd_); }

// From the group's timer: our `kind` deadline has passed (the queue has let
// go of us already).
void Connection::on_deadline(DeadlineKind kind) {
    switch (kind) {
    case DeadlineKind::write:
        drop_output();  // the peer does not read: it cannot be flushed
        return finish_close({EndKind::write_timeout, {}}, true);
    case DeadlineKind::read: return begin_close(EndKind::read_timeout);
    case DeadlineKind::idle: return begin_close(EndKind::idle_timeout);
    }
}

void Connection::drop_output() noexcept {
    if (out_ && timeouts_) deadline_queues().unlink<DeadlineKind::write>(*timeouts_, fd_);
    out_.reset();
}

}  // namespace reactor
