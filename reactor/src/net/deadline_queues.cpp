// SPDX-License-Identifier: MIT
// DeadlineQueues: see deadline_queues.hpp.
#include "deadline_queues.hpp"

#include <algorithm>

#include "reactor/scheduler.hpp"

namespace reactor::detail {

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

FdLinks& DeadlineQueues::write_links(int fd) noexcept { return connection(fd).out_->writes; }
TimePoint DeadlineQueues::write_start(int fd) noexcept { return connection(fd).out_->write_start; }

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
    expire<DeadlineKind::write>(group, now);
    expire<DeadlineKind::read>(group, now);
    expire<DeadlineKind::idle>(group, now);
    arm_for(group, std::min({front_deadline<DeadlineKind::write>(group), front_deadline<DeadlineKind::read>(group),
                             front_deadline<DeadlineKind::idle>(group)}));
}

template <DeadlineKind K>
void DeadlineQueues::expire(TimeoutGroup& group, TimePoint now) {
    FdQueue& queue = group.queue<K>();
    while (!queue.empty() && deadline<K>(group, queue.front()) <= now) {
        const int fd = queue.front();
        // Out of the queue first, so the loop ends whatever the connection does.
        queue.remove(fd, links<K>());
        connection(fd).on_deadline(K);
    }
}

template <DeadlineKind K>
TimePoint DeadlineQueues::front_deadline(TimeoutGroup& group) noexcept {
    const FdQueue& queue = group.queue<K>();
    return queue.empty() ? TimePoint::max() : deadline<K>(group, queue.front());
}

void DeadlineQueues::arm_for(TimeoutGroup& group, TimePoint due) {
    if (due < group.timer_at) set_timer(group, due);  // max: nothing to time
}

// The new timer first: if arming it throws (std::bad_alloc), the one it
// would replace still stands, and the deadlines end late rather than never.
void DeadlineQueues::set_timer(TimeoutGroup& group, TimePoint due) {
    Handle timer = scheduler().call_at_unlisted(due, [&group] { group.queues->on_timer(group); },
                                                std::source_location::current());
    end_timer(group);  // the later due time it replaces
    group.timer = timer;
    group.timer_at = due;
}

void DeadlineQueues::end_timer(TimeoutGroup& group) noexcept {
    group.timer.cancel();
    group.timer = Handle();
    group.timer_at = TimePoint::max();
}

}  // namespace reactor::detail
