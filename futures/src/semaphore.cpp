// SPDX-License-Identifier: MIT
// Semaphore: the count of free permits and the FIFO of waiters, shared with
// the Permits out there (so a Permit can outlive its Semaphore).
#include "futures/semaphore.hpp"

#include <stdexcept>
#include <string>

#include "futures/detail/parked.hpp"
#include "futures/leaves.hpp"

namespace futures {
namespace detail {

struct SemaphoreCore {
    SemaphoreCore(reactor::Scheduler& s, std::size_t permits, std::source_location where, const char* kind)
        : sched(s), total(permits), available(permits), waiters(s, primitive_name(kind, where)) {}

    // A permit came back: the first waiter still waiting gets it, or it is
    // free again. Invariant: waiters wait only while no permit is free.
    static void give_back(std::shared_ptr<SemaphoreCore> self) noexcept {
        SemaphoreCore& core = *self;
        if (auto waiter = core.waiters.pop()) {
            waiter->finish_value(Permit(std::move(self)));
        } else {
            ++core.available;
        }
    }
    static Permit take(std::shared_ptr<SemaphoreCore> self) noexcept {
        --self->available;
        return Permit(std::move(self));
    }

    reactor::Scheduler& sched;
    std::size_t total;
    std::size_t available;
    ParkedList<Permit> waiters;
};

}  // namespace detail

void Permit::release() noexcept {
    if (core_) detail::SemaphoreCore::give_back(std::move(core_));
}

Semaphore::Semaphore(reactor::Scheduler& sched, std::size_t permits, std::source_location where)
    : Semaphore(sched, permits, where, "Semaphore") {}

Semaphore::Semaphore(reactor::Scheduler& sched, std::size_t permits, std::source_location where, const char* kind) {
    if (permits == 0)
        throw std::invalid_argument(
            "Semaphore: needs at least 1 permit (with none every acquire() would wait forever: only a Permit gives "
            "one back)");
    core_ = std::make_shared<detail::SemaphoreCore>(sched, permits, where, kind);
}

Semaphore::~Semaphore() { core_->waiters.abandon_all("was destroyed"); }

Future<Permit> Semaphore::acquire(std::source_location where) {
    if (core_->available > 0) return make_ready_future(core_->sched, detail::SemaphoreCore::take(core_), where);
    return core_->waiters.park(where);
}

std::optional<Permit> Semaphore::try_acquire() {
    if (core_->available == 0) return std::nullopt;
    return detail::SemaphoreCore::take(core_);
}

std::size_t Semaphore::available() const noexcept { return core_->available; }
std::size_t Semaphore::permits() const noexcept { return core_->total; }
std::size_t Semaphore::waiting() const noexcept { return core_->waiters.size(); }

}  // namespace futures
