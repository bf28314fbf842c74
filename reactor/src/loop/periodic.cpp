// SPDX-License-Identifier: MIT
// Periodic timers (call_every): one slot per timer, kept for its whole life.
// The slot goes periodic (armed in the sleeping heap) -> periodic_due (moved
// to the ready queue by move_due_timers) -> back to periodic here, after its
// callback returned, with the next deadline of its drift policy. Ticking
// therefore allocates nothing: the heap and the ready queue reuse their
// capacity, and the callable moves between the slot and the run phase's local
// as bytes. Loop thread only.
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "reactor/scheduler.hpp"

namespace reactor {
namespace {

// fixed_rate: the first grid point deadline + k * interval (k >= 1) that is
// not before `t`. Skipping to it in one step, rather than adding `interval`
// until it is reached, keeps a long stall (a suspended laptop) from costing
// one pass per missed tick.
TimePoint next_on_grid(TimePoint deadline, Duration interval, TimePoint t) {
    const TimePoint next = detail::saturating_add(deadline, interval);
    if (next >= t) return next;
    const std::int64_t behind = (t - deadline).count();
    const std::int64_t step = interval.count();
    const std::int64_t k = behind / step + (behind % step != 0 ? 1 : 0);  // ceil(behind / step)
    if (k > (TimePoint::max() - deadline).count() / step) return TimePoint::max();
    return deadline + Duration(k * step);
}

}  // namespace

Handle Scheduler::call_every_checked(Duration interval, Callback cb, Periodic policy, std::source_location where) {
    require_loop_thread("call_every", &where);
    if (!cb) throw std::invalid_argument("reactor: empty callback");
    if (policy != Periodic::fixed_rate && policy != Periodic::fixed_delay) {
        throw std::invalid_argument("reactor: call_every: unknown Periodic policy");
    }
    const TimePoint first = detail::saturating_add(timer_base(), interval);
    Ref r = alloc_slot(std::move(cb), where, SlotKind::periodic);
    periodic_[r.slot] = PeriodicTiming{policy, interval, first};
    arm_timer(first, r);
    return Handle(this, r.slot, r.gen);
}

// After the tick's callback returned, its slot still live (not cancelled).
// The time is read afresh here, not taken from now(), which is the start of
// the iteration: fixed_delay counts from the callback's end by definition,
// and fixed_rate must see how long the callback took to know which ticks it
// has missed.
void Scheduler::rearm_periodic(Ref r) {
    PeriodicTiming& p = periodic_.at(r.slot);
    const TimePoint t = read_clock();
    p.deadline = p.policy == Periodic::fixed_delay ? detail::saturating_add(t, p.interval)
                                                   : next_on_grid(p.deadline, p.interval, t);
    slots_[r.slot].kind = SlotKind::periodic;
    arm_timer(p.deadline, r);
}

}  // namespace reactor
