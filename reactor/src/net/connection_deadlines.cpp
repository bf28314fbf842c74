// SPDX-License-Identifier: MIT
// Connection deadlines: read, write and idle timeouts (see ConnectionOptions).
//
// Their state (Connection::Deadlines) is made when a timeout is first set,
// so a connection that never has one pays a pointer for it. Receiving and
// sending only store the loop's cached now() (note_read, note_written);
// nothing is cancelled or re-armed per byte. One timer per connection is set
// for the earliest deadline: the fd owner's timer of the loop
// (Scheduler::set_owner_timer), a heap entry with no slot or callback. When
// it fires, a deadline that has really passed closes the connection;
// otherwise activity moved them all, and the timer is set again for the new
// earliest one. A deadline that comes nearer than the timer (output queued
// with a short write timeout, a shorter timeout set) moves the timer earlier
// at once; the entry it replaces is dropped by the loop when it comes up (or
// in a purge), so moving it often leaves no trail.
#include <algorithm>
#include <optional>

#include "connection_parts.hpp"

namespace reactor {
namespace {

void keep_earliest(std::optional<TimePoint>& earliest, TimePoint t) {
    if (!earliest || t < *earliest) earliest = t;
}

}  // namespace

Connection::Deadlines& Connection::deadlines() {
    if (!deadlines_) deadlines_ = std::make_unique<Deadlines>();
    return *deadlines_;
}

void Connection::note_read_time() { deadlines_->read_start = deadlines_->idle_start = sched_.now(); }
void Connection::note_write_time() { deadlines_->write_start = deadlines_->idle_start = sched_.now(); }

TimePoint Connection::read_deadline() const noexcept {
    return deadlines_->read_start + deadlines_->read_timeout;
}
TimePoint Connection::write_deadline() const noexcept {
    return deadlines_->write_start + deadlines_->write_timeout;
}
TimePoint Connection::idle_deadline() const noexcept {
    return deadlines_->idle_start + deadlines_->idle_timeout;
}

void Connection::set_read_timeout(Duration t) {
    check_thread("Connection::set_read_timeout");
    t = std::max(t, Duration::zero());
    if (t == Duration::zero() && !deadlines_) return;  // none, and none wanted
    deadlines().read_timeout = t;
    if (state_ == State::closed) return;  // nothing to time; the loop may be gone
    deadlines_->read_start = sched_.now();
    arm_deadline_timer();
}

void Connection::set_write_timeout(Duration t) {
    check_thread("Connection::set_write_timeout");
    t = std::max(t, Duration::zero());
    if (t == Duration::zero() && !deadlines_) return;
    deadlines().write_timeout = t;
    if (state_ == State::closed) return;
    deadlines_->write_start = sched_.now();
    arm_deadline_timer();
}

void Connection::set_idle_timeout(Duration t) {
    check_thread("Connection::set_idle_timeout");
    t = std::max(t, Duration::zero());
    if (t == Duration::zero() && !deadlines_) return;
    deadlines().idle_timeout = t;
    if (state_ == State::closed) return;
    deadlines_->idle_start = sched_.now();
    arm_deadline_timer();
}

void Connection::arm_deadline_timer() {
    if (state_ == State::closed || !deadlines_) return;
    Deadlines& d = *deadlines_;
    std::optional<TimePoint> earliest;
    // Reading is watched only while open, not paused and before EOF: the
    // same condition as update_reader's.
    if (d.read_timeout > Duration::zero() && reader_registered_) keep_earliest(earliest, read_deadline());
    if (d.write_timeout > Duration::zero() && has_output()) keep_earliest(earliest, write_deadline());
    if (d.idle_timeout > Duration::zero() && state_ == State::open) keep_earliest(earliest, idle_deadline());
    if (!earliest) return;  // a pending timer finds nothing due and lapses
    if (sched_.owner_timer_pending(fd_) && d.timer_at <= *earliest) return;
    sched_.set_owner_timer(fd_, *earliest);  // ended by forget_fd as it closes
    d.timer_at = *earliest;                  // after: the loop tells the entry it replaces by the old time
}

void Connection::on_owner_timer(int /*fd*/) {
    if (state_ != State::closed) on_deadline_timer();
}

TimePoint Connection::owner_timer_due(int /*fd*/) const noexcept {
    return deadlines_ ? deadlines_->timer_at : TimePoint::max();
}

void Connection::on_deadline_timer() {
    const TimePoint now = sched_.now();
    const Deadlines& d = *deadlines_;
    if (d.write_timeout > Duration::zero() && has_output() && now >= write_deadline()) {
        drop_output();  // the peer does not read: it cannot be flushed
        return finish_close({CloseKind::write_timeout, {}}, true);
    }
    if (state_ == State::open) {
        if (d.read_timeout > Duration::zero() && reader_registered_ && now >= read_deadline())
            return begin_close(CloseKind::read_timeout);
        if (d.idle_timeout > Duration::zero() && now >= idle_deadline()) return begin_close(CloseKind::idle_timeout);
    }
    arm_deadline_timer();
}

}  // namespace reactor
