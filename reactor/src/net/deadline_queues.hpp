// SPDX-License-Identifier: MIT
// The deadlines of one loop's connections (read, write and idle timeouts:
// ConnectionOptions), a service of the loop (LoopService).
//
// Connections with the same three timeouts form a group (TimeoutGroup),
// shared, made when the first joins and freed when the last leaves. A group
// keeps one queue per kind of deadline, each in the order its clocks
// started: the connection whose clock started first is at the front, and
// its deadline is the earliest of the queue, because every member waits the
// same timeout. The group has one loop timer, for the earliest front.
// Traffic restarts a clock and moves the connection to the back of that
// queue: a few stores, no timer touched. A timer that finds its front moved
// away finds nothing due and is set again for the new front. This is
// libev's "timer trick" for many equal timeouts (ev.pod, "Be smart about
// timeouts", 4), and why a connection's deadlines cost it no timer of its
// own (issue 22, bench/results/memory.md).
//
// What a connection pays: its group's pointer, and per fd number the read
// and idle clocks with their links (DeadlineClocks, 32 bytes, in a table
// indexed by fd); the write clock and its links are in the output block,
// which exists only while output waits, the only time a write deadline runs.
//
// Every fd in a queue is an open connection of this loop, its fd's owner
// (Scheduler::fd_owner): a connection leaves every queue before it
// forgets its fd (Connection::release_fd). Loop thread only.
#pragma once

#include <cstddef>
#include <map>
#include <tuple>
#include <vector>

#include "reactor/handle.hpp"
#include "reactor/loop_service.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/net/detail/fd_queue.hpp"

namespace reactor::detail {

enum class DeadlineKind : unsigned char { write, read, idle };  // the order they are checked in

// The read and idle clocks of the connection that has an fd number: when
// each count (re)started, and the fd's place in its group's queues.
struct DeadlineClocks {
    TimePoint read_start{};  // bytes received, the timeout set, reading resumed
    TimePoint idle_start{};  // bytes either way, the timeout set
    FdLinks reads;
    FdLinks idles;
};

class DeadlineQueues;

// The connections of a loop with the same three timeouts (zero: none).
struct TimeoutGroup {
    DeadlineQueues* queues;
    Duration read, write, idle;
    FdQueue reads, writes, idles;
    std::size_t members = 0;
    Handle timer;                            // for the earliest front, or none
    TimePoint timer_at = TimePoint::max();  // its due time; max: none pending

    template <DeadlineKind K>
    Duration timeout() const noexcept {
        if constexpr (K == DeadlineKind::read) return read;
        if constexpr (K == DeadlineKind::write) return write;
        if constexpr (K == DeadlineKind::idle) return idle;
    }
    template <DeadlineKind K>
    FdQueue& queue() noexcept {
        if constexpr (K == DeadlineKind::read) return reads;
        if constexpr (K == DeadlineKind::write) return writes;
        if constexpr (K == DeadlineKind::idle) return idles;
    }
    bool nothing_queued() const noexcept { return reads.empty() && writes.empty() && idles.empty(); }
};

// The kind of deadline is a template argument throughout: touch() runs on
// every read and send, and knowing the kind at compile time leaves it a
// few loads and stores.
class DeadlineQueues final : public LoopService {
public:
    // Empty by the time the loop destroys it: every connection has left its
    // group as the loop ended (OpenConnections).
    explicit DeadlineQueues(Scheduler& sched) noexcept : LoopService(sched) {}

    // The group for these timeouts (not all zero), joined; may throw
    // (std::bad_alloc) with nothing changed.
    TimeoutGroup& join(Duration read, Duration write, Duration idle);
    void leave(TimeoutGroup& group) noexcept;  // freed with its last member

    // The clocks of `fd`, made for it (may throw std::bad_alloc), then,
    // once made, for as long as the fd is a connection's.
    DeadlineClocks& make_clocks(int fd);
    DeadlineClocks& clocks(int fd) noexcept { return clocks_[static_cast<std::size_t>(fd)]; }

    // `fd`'s place in the K queue of its group: put in start order (the
    // clock set first; not if K has no timeout), dropped, or moved to the
    // back as its clock restarts now. Dropping or moving one not in the
    // queue does nothing.
    template <DeadlineKind K>
    void link(TimeoutGroup& group, int fd) {
        FdQueue& queue = group.queue<K>();
        if (group.timeout<K>() == Duration::zero() || queue.contains(fd, links<K>())) return;
        queue.insert(fd, links<K>(), [this](int f) { return start<K>(f); });
        // Only a new front can be due before the timer.
        if (queue.front() == fd) arm_for(group, deadline<K>(group, fd));
    }
    template <DeadlineKind K>
    void unlink(TimeoutGroup& group, int fd) noexcept {
        FdQueue& queue = group.queue<K>();
        if (!queue.contains(fd, links<K>())) return;
        queue.remove(fd, links<K>());
        // Nothing left to time: a timer kept would hold run() back for nothing.
        if (group.nothing_queued()) end_timer(group);
    }
    template <DeadlineKind K>
    void touch(TimeoutGroup& group, int fd) noexcept {
        FdQueue& queue = group.queue<K>();
        if (queue.back() == fd || !queue.contains(fd, links<K>())) return;
        queue.move_to_back(fd, links<K>());
    }

private:
    using Key = std::tuple<Duration::rep, Duration::rep, Duration::rep>;
    std::map<Key, TimeoutGroup> groups_;  // a node each: a group never moves
    std::vector<DeadlineClocks> clocks_;  // indexed by fd

    Connection& connection(int fd) const noexcept;
    // What FdQueue asks for: the links of an fd in the K queue.
    template <DeadlineKind K>
    auto links() noexcept {
        return [this](int fd) -> FdLinks& {
            if constexpr (K == DeadlineKind::read) return clocks(fd).reads;
            if constexpr (K == DeadlineKind::idle) return clocks(fd).idles;
            if constexpr (K == DeadlineKind::write) return write_links(fd);
        };
    }
    template <DeadlineKind K>
    TimePoint start(int fd) noexcept {
        if constexpr (K == DeadlineKind::read) return clocks(fd).read_start;
        if constexpr (K == DeadlineKind::idle) return clocks(fd).idle_start;
        if constexpr (K == DeadlineKind::write) return write_start(fd);
    }
    template <DeadlineKind K>
    TimePoint deadline(TimeoutGroup& group, int fd) noexcept {
        return saturating_add(start<K>(fd), group.timeout<K>());
    }
    // The write clock and links are in the connection's output block.
    FdLinks& write_links(int fd) noexcept;
    TimePoint write_start(int fd) noexcept;

    void on_timer(TimeoutGroup& group);
    template <DeadlineKind K>
    void expire(TimeoutGroup& group, TimePoint now);
    template <DeadlineKind K>
    TimePoint front_deadline(TimeoutGroup& group) noexcept;
    void arm_for(TimeoutGroup& group, TimePoint due);  // if before the pending timer
    void set_timer(TimeoutGroup& group, TimePoint due);
    void end_timer(TimeoutGroup& group) noexcept;
};

}  // namespace reactor::detail
