// SPDX-License-Identifier: MIT
// The open connections of one loop: a service (LoopService) that ends them
// with the loop. A Connection owns itself while open (nobody else would free
// it), so the loop's end must reach it: Scheduler::close() aborts every open
// connection with CloseKind::scheduler_closed and then runs its close
// callback; abandonment (close()'s last phase, ~Scheduler) aborts what is
// still open and releases it, its callbacks destroyed unrun. live() lists
// each once, named by the line that accepted or connected it. Loop thread only.
#pragma once

#include "reactor/intrusive_list.hpp"
#include "reactor/loop_service.hpp"
#include "reactor/net/connection.hpp"

namespace reactor::detail {

class OpenConnections final : public LoopService {
public:
    explicit OpenConnections(Scheduler& sched) noexcept : LoopService(sched) {}

    // Open from adopt() on; a connection leaves as it closes (release_fd).
    void add(Connection& conn) noexcept { open_.push_back(conn); }

    // Those open now, oldest first; one opened by a close callback is
    // abandoned later, in close()'s abandon phase.
    void close() override {
        IntrusiveList<Connection> now = open_.take_all();
        while (Connection* c = now.pop_front()) c->end_with_loop_closing();
    }
    void abandon() noexcept override {
        while (Connection* c = open_.pop_front()) c->end_with_loop_abandoned();
    }
    void describe(std::vector<LiveItem>& out) const override {
        open_.for_each([&out](const Connection& c) { c.describe_for_live(out); });
    }

private:
    IntrusiveList<Connection> open_;
};

}  // namespace reactor::detail
