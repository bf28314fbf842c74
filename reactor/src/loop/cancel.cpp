// SPDX-License-Identifier: MIT
// Cancellation: a Handle names a slot by (slot, generation); cancel frees the
// slot and its callable now (what the callable captured is released at once,
// not when its time comes) and leaves the queue entry behind, to be skipped
// when reached: removing it from the middle of a heap or a queue would cost
// more than skipping it. The sleeping heap is rebuilt once it is mostly dead.
// Loop thread only; a stale Handle is a harmless no-op.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

#include "reactor/scheduler.hpp"

namespace reactor {
namespace {

// Rebuild the sleeping heap once cancelled timers outnumber live ones (and
// there are enough of them to be worth an O(n) pass).
constexpr std::size_t kPurgeMinDeadTimers = 256;

}  // namespace

bool Handle::cancel() { return sched_ && sched_->cancel(slot_, gen_); }

bool Handle::is_pending() const {
    if (!sched_ || slot_ >= sched_->slots_.size()) return false;
    const auto& s = sched_->slots_[slot_];
    using Kind = Scheduler::SlotKind;
    return s.gen == gen_ &&
           (s.kind == Kind::soon || s.kind == Kind::timer || s.kind == Kind::periodic || s.kind == Kind::periodic_due);
}

std::optional<TimePoint> Handle::deadline() const {
    if (!sched_ || slot_ >= sched_->slots_.size()) return std::nullopt;
    const auto& s = sched_->slots_[slot_];
    if (s.gen != gen_ || s.kind != Scheduler::SlotKind::timer) return std::nullopt;
    for (const Scheduler::Timer& t : sched_->timers_)
        if (t.ref.slot == slot_ && t.ref.gen == gen_) return t.deadline;
    return std::nullopt;
}

bool Scheduler::cancel(std::uint32_t slot, std::uint32_t gen) {
    require_loop_thread("Handle::cancel");
    if (slot >= slots_.size()) return false;
    Slot& s = slots_[slot];
    const bool cancellable = s.kind == SlotKind::soon || s.kind == SlotKind::timer || s.kind == SlotKind::periodic ||
                             s.kind == SlotKind::periodic_due;
    if (s.gen != gen || !cancellable) return false;
    // The queue entry stays behind and is skipped when reached (its gen no
    // longer matches); the callable is released now. A periodic timer that is
    // due or running is in no heap: once its slot is free it is not re-armed.
    const bool in_heap = s.kind == SlotKind::timer || s.kind == SlotKind::periodic;
    free_slot(slot);
    if (in_heap) {
        --timers_.live;
        ++timers_.dead;
        purge_if_mostly_dead(0);
    }
    return true;
}

// `more` dead entries are about to be left behind (set_owner_timer purges
// before its owner's time changes, while the entry it replaces is still
// told live).
void Scheduler::purge_if_mostly_dead(std::size_t more) noexcept {
    const std::size_t dead = timers_.dead + more;
    if (dead >= kPurgeMinDeadTimers && dead > timers_.live) purge_cancelled_timers();
}

void Scheduler::purge_cancelled_timers() noexcept {
    timers_.remove_if([this](const Timer& t) { return !timer_live(t); });
    timers_.dead = 0;
}

}  // namespace reactor
