// Connection deadlines: read, write and idle timeouts (see ConnectionOptions).
//
// Receiving and sending only store the loop's cached now() (note_read,
// note_written); nothing is cancelled or re-armed per byte. One timer per
// connection is set for the earliest deadline. When it fires, a deadline that
// has really passed closes the connection; otherwise activity moved them
// all, and the timer is set again for the new earliest one. A deadline that
// comes nearer than the timer (output queued with a short write timeout, a
// shorter timeout set) moves the timer earlier at once.
#include <algorithm>
#include <optional>

#include "reactor/net/connection.hpp"

namespace reactor {
namespace {

void keep_earliest(std::optional<TimePoint>& earliest, TimePoint t) {
    if (!earliest || t < *earliest) earliest = t;
}

}  // namespace

TimePoint Connection::read_deadline() const noexcept { return std::max(last_read_, read_from_) + read_timeout_; }
TimePoint Connection::write_deadline() const noexcept { return std::max(last_written_, write_from_) + write_timeout_; }
TimePoint Connection::idle_deadline() const noexcept {
    return std::max({last_read_, last_written_, idle_from_}) + idle_timeout_;
}

void Connection::update_has_deadlines() noexcept {
    has_deadlines_ = read_timeout_ > Duration::zero() || write_timeout_ > Duration::zero() || idle_timeout_ > Duration::zero();
}

void Connection::set_read_timeout(Duration d) {
    read_timeout_ = std::max(d, Duration::zero());
    if (state_ == State::closed) return;  // nothing to time; the loop may be gone
    read_from_ = sched_.now();
    update_has_deadlines();
    arm_deadline_timer();
}

void Connection::set_write_timeout(Duration d) {
    write_timeout_ = std::max(d, Duration::zero());
    if (state_ == State::closed) return;  // nothing to time; the loop may be gone
    write_from_ = sched_.now();
    update_has_deadlines();
    arm_deadline_timer();
}

void Connection::set_idle_timeout(Duration d) {
    idle_timeout_ = std::max(d, Duration::zero());
    if (state_ == State::closed) return;  // nothing to time; the loop may be gone
    idle_from_ = sched_.now();
    update_has_deadlines();
    arm_deadline_timer();
}

void Connection::arm_deadline_timer() {
    if (state_ == State::closed) return;
    std::optional<TimePoint> earliest;
    // Reading is watched only while open, not paused and before EOF: the
    // same condition as update_reader's.
    if (read_timeout_ > Duration::zero() && reader_registered_) keep_earliest(earliest, read_deadline());
    if (write_timeout_ > Duration::zero() && !out_.empty()) keep_earliest(earliest, write_deadline());
    if (idle_timeout_ > Duration::zero() && state_ == State::open) keep_earliest(earliest, idle_deadline());
    if (!earliest) return;  // a pending timer finds nothing due and lapses
    if (deadline_timer_.is_pending() && deadline_at_ <= *earliest) return;
    deadline_timer_.cancel();
    deadline_at_ = *earliest;
    deadline_timer_ = sched_.call_at(*earliest, [this] { on_deadline_timer(); }, where_);  // cancelled as it closes
}

void Connection::on_deadline_timer() {
    const TimePoint now = sched_.now();
    if (write_timeout_ > Duration::zero() && !out_.empty() && now >= write_deadline()) {
        out_.clear();  // the peer does not read: it cannot be flushed
        return finish_close({CloseKind::write_timeout, {}}, true);
    }
    if (state_ == State::open) {
        if (read_timeout_ > Duration::zero() && reader_registered_ && now >= read_deadline())
            return begin_close(CloseKind::read_timeout);
        if (idle_timeout_ > Duration::zero() && now >= idle_deadline()) return begin_close(CloseKind::idle_timeout);
    }
    arm_deadline_timer();
}

}  // namespace reactor
