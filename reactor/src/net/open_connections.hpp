// SPDX-License-Identifier: MIT
// The open connections of one loop: a service (LoopService) that ends them
// with the loop. A Connection owns itself while open (nobody else would free
// it), so the loop's end must reach it: Scheduler::close() aborts every open
// connection with EndKind::scheduler_closed and then runs its close
// callback; abandonment (close()'s last phase, ~Scheduler) aborts what is
// still open and releases it, its callbacks destroyed unrun. live() lists
// each once, named by the line that accepted or connected it. Loop thread only.
//
// An open connection is its fd's owner in the loop (Scheduler::fd_owner), so
// the service keeps one bit per fd number, set while that fd is an open
// connection's, and finds the connection through the loop: a connection
// pays for its place here one bit, not the links of a list (issue 22,
// bench/results/memory.md). The loop's end takes them in fd order.
#pragma once

#include <cstddef>
#include <vector>

#include "reactor/loop_service.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/scheduler.hpp"

namespace reactor::detail {

class OpenConnections final : public LoopService {
public:
    explicit OpenConnections(Scheduler& sched) noexcept : LoopService(sched) {}

    // From start() on, once the connection owns its fd in the loop; may throw
    // (std::bad_alloc), before the connection owns itself.
    void add(int fd) {
        const auto index = static_cast<std::size_t>(fd);
        if (index >= open_.size()) open_.resize(index + 1);
        open_[index] = true;
    }
    // As the connection closes (release_fd), before it forgets its fd.
    void remove(int fd) noexcept {
        if (is_open(fd)) open_[static_cast<std::size_t>(fd)] = false;
    }

    // Those open now; one opened by a close callback is abandoned later, in
    // close()'s abandon phase (close callbacks run after this returns).
    void close() override {
        std::vector<int> now;
        for (int fd = 0; fd < size(); ++fd)
            if (is_open(fd)) now.push_back(fd);
        for (int fd : now)
            if (is_open(fd)) connection(fd).end_with_loop_closing();
    }
    void abandon() noexcept override {
        for (int fd = 0; fd < size(); ++fd) {
            if (!is_open(fd)) continue;
            Connection& c = connection(fd);
            remove(fd);  // as release_fd does: this loop ends whatever happens
            c.end_with_loop_abandoned();
        }
    }
    // Each open connection, in fd order (ConnectionSet finds its members so).
    template <class F>
    void for_each(F&& f) const {
        for (int fd = 0; fd < size(); ++fd)
            if (is_open(fd)) f(connection(fd));
    }
    void describe(std::vector<LiveItem>& out) const override {
        for (int fd = 0; fd < size(); ++fd)
            if (is_open(fd)) connection(fd).describe_for_live(out);
    }

private:
    std::vector<bool> open_;  // indexed by fd: the fd is an open connection's

    int size() const noexcept { return static_cast<int>(open_.size()); }
    bool is_open(int fd) const noexcept {
        const auto index = static_cast<std::size_t>(fd);
        return index < open_.size() && open_[index];
    }
    Connection& connection(int fd) const noexcept {
        return static_cast<Connection&>(*scheduler().fd_owner(fd));  // the bit is set only while it is
    }
};

}  // namespace reactor::detail
