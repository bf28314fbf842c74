// SPDX-License-Identifier: MIT
// The listeners and UDP sockets of one loop: a service (LoopService) that
// closes them when the loop ends, so that they may outlive it like every
// loop-bound object (docs/scheduler.md, "What outlives what"). The user owns
// them (a shared_ptr); the loop only ends their use of it: Scheduler::close()
// and the loop's abandonment close each one still open, as its close() would
// (a listener's wait_closed callbacks are queued; in the abandonment they
// are destroyed unrun). A closed socket never touches its Scheduler again,
// so it may be destroyed after it. Loop thread only.
#pragma once

#include "reactor/intrusive_list.hpp"
#include "reactor/loop_service.hpp"
#include "reactor/net/detail/loop_socket.hpp"

namespace reactor::detail {

class LoopSockets final : public LoopService {
public:
    explicit LoopSockets(Scheduler& sched) noexcept : LoopService(sched) {}
    void add(LoopSocket& s) noexcept { open_.push_back(s); }
    void close() override { close_all(); }
    void abandon() noexcept override { close_all(); }

private:
    void close_all() noexcept {
        while (LoopSocket* s = open_.pop_front()) s->close_with_loop();
    }
    IntrusiveList<LoopSocket> open_;
};

}  // namespace reactor::detail
