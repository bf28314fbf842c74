// SPDX-License-Identifier: MIT
// DeadlineQueues: see deadline_queues.hpp.
#include "deadline_queues.hpp"

#include <algorithm>

#include "connection_parts.hpp"
#include "reactor/scheduler.hpp"

namespace reactor::detail {
namespace {

// start + timeout, or TimePoint::max() where that would not fit.
TimePoint add_saturated(TimePoint start, Duration timeout) noexcept {
    return timeout >= TimePoint::max() - start ? TimePoint::max() : start + timeout;
}

}  // namespace

Duration TimeoutGroup::timeout(DeadlineKind kind) const noexcept {
    switch (kind) {
    case DeadlineKind::read: return read;
    case DeadlineKind::write: return write;
    case DeadlineKind::idle: return idle;
    }
    return Duration::zero();
}

FdQueue& TimeoutGroup::queue(DeadlineKind kind) noexcept {
    switch (kind) {
    case DeadlineKind::read: return reads;
    case DeadlineKind::write: return writes;
    case DeadlineKind::idle: break;
    }
    return idles;
}

TimeoutGroup& DeadlineQueues::join(Duration read, Duration write, Duration idle) {
    auto [it, made] = groups_.try_emplace(Key{read.count(), write.count(), idle.count()});
    TimeoutGroup& group = it->second;
    if (made) {
        group.queues = this;
        group.read = read;
        group.write = write;
        group.idle = idle;
    }
    ++group.members;
    return group;
}

void DeadlineQueues::leave(TimeoutGroup& group) noexcept {
    if (--group.members > 0) return;
    end_timer(group);
    groups_.erase(Key{group.read.count(), group.write.count(), group.idle.count()});
}

DeadlineClocks& DeadlineQueues::make_clocks(int fd) {
    const auto index = static_cast<std::size_t>(fd);
    if (index >= clocks_.size()) clocks_.resize(index + 1);
    return clocks_[index] = DeadlineClocks{};
}

Connection& DeadlineQueues::connection(int fd) const noexcept {
    return static_cast<Connection&>(*scheduler().fd_owner(fd));  // see the header: every queued fd is one's
}

FdLinks& DeadlineQueues::links(DeadlineKind kind, int fd) noexcept {
    switch (kind) {
    case DeadlineKind::read: return clocks(fd).reads;
    case DeadlineKind::write: return connection(fd).out_->writes;
    case DeadlineKind::idle: break;
    }
    return clocks(fd).idles;
}

TimePoint DeadlineQueues::start(DeadlineKind kind, int fd) noexcept {
    switch (kind) {
    case DeadlineKind::read: return clocks(fd).read_start;
    case DeadlineKind::write: return connection(fd).out_->write_start;
    case DeadlineKind::idle: break;
    }
    return clocks(fd).idle_start;
}

TimePoint DeadlineQueues::deadline(TimeoutGroup& group, DeadlineKind kind, int fd) noexcept {
    return add_saturated(start(kind, fd), group.timeout(kind));
}

bool DeadlineQueues::is_linked(TimeoutGroup& group, DeadlineKind kind, int fd) noexcept {
    return group.queue(kind).contains(fd, [this, kind](int f) -> FdLinks& { return links(kind, f); });
}

void DeadlineQueues::link(TimeoutGroup& group, DeadlineKind kind, int fd) {
    if (group.timeout(kind) == Duration::zero() || is_linked(group, kind, fd)) return;
    FdQueue& queue = group.queue(kind);
    queue.insert(fd, [this, kind](int f) -> FdLinks& { return links(kind, f); },
                 [this, kind](int f) { return start(kind, f); });
    if (queue.front() != fd) return;  // a front earlier than ours has the timer's attention already
    const TimePoint due = deadline(group, kind, fd);
    if (due < group.timer_at) set_timer(group, due);
}

void DeadlineQueues::unlink(TimeoutGroup& group, DeadlineKind kind, int fd) noexcept {
    if (!is_linked(group, kind, fd)) return;
    group.queue(kind).remove(fd, [this, kind](int f) -> FdLinks& { return links(kind, f); });
    // Nothing left to time: a timer kept would hold run() back for nothing.
    if (group.reads.empty() && group.writes.empty() && group.idles.empty()) end_timer(group);
}

void DeadlineQueues::touch(TimeoutGroup& group, DeadlineKind kind, int fd) noexcept {
    if (!is_linked(group, kind, fd)) return;
    group.queue(kind).move_to_back(fd, [this, kind](int f) -> FdLinks& { return links(kind, f); });
}

// The group's timer: every front whose deadline has come is ended, write
// deadlines first (as a connection due for several reports the write one),
// then the timer is set for what is left.
void DeadlineQueues::on_timer(TimeoutGroup& group) {
    group.timer_at = TimePoint::max();  // it has fired
    ++group.members;                     // closing its last connection must not free it under us
    struct Release {
        DeadlineQueues& queues;
        TimeoutGroup& group;
        ~Release() { queues.leave(group); }
    } release{*this, group};
    const TimePoint now = scheduler().now();
    for (DeadlineKind kind : {DeadlineKind::write, DeadlineKind::read, DeadlineKind::idle}) expire(group, kind, now);
    arm(group);
}

void DeadlineQueues::expire(TimeoutGroup& group, DeadlineKind kind, TimePoint now) {
    FdQueue& queue = group.queue(kind);
    while (!queue.empty() && deadline(group, kind, queue.front()) <= now) {
        const int fd = queue.front();
        // Out of the queue first, so the loop ends whatever the connection does.
        queue.remove(fd, [this, kind](int f) -> FdLinks& { return links(kind, f); });
        connection(fd).on_deadline(kind);
    }
}

void DeadlineQueues::arm(TimeoutGroup& group) {
    TimePoint earliest = TimePoint::max();
    for (DeadlineKind kind : {DeadlineKind::write, DeadlineKind::read, DeadlineKind::idle}) {
        const FdQueue& queue = group.queue(kind);
        if (!queue.empty()) earliest = std::min(earliest, deadline(group, kind, queue.front()));
    }
    if (earliest == TimePoint::max()) return end_timer(group);
    if (earliest < group.timer_at) set_timer(group, earliest);
}

void DeadlineQueues::set_timer(TimeoutGroup& group, TimePoint due) {
    end_timer(group);  // an earlier due time replaces it
    group.timer = scheduler().call_at_unlisted(due, [&group] { group.queues->on_timer(group); },
                                               std::source_location::current());
    group.timer_at = due;
}

void DeadlineQueues::end_timer(TimeoutGroup& group) noexcept {
    group.timer.cancel();
    group.timer = Handle();
    group.timer_at = TimePoint::max();
}

}  // namespace reactor::detail
