// SPDX-License-Identifier: MIT
// reactor::Handle: names one callback scheduled on a Scheduler, to cancel it.
#pragma once

#include <cstdint>
#include <optional>

#include <reactor/clock.hpp>
#include <reactor/export.hpp>

namespace reactor {

class Scheduler;

// Identifies one scheduled callback by (slot, generation), so a stale Handle
// (its callback ran, was cancelled, or its slot was reused) is a harmless no-op.
// Loop thread only; must not be used after its Scheduler is destroyed.
class REACTOR_API Handle {
public:
    Handle() = default;
    // Prevents the callback from running and releases it (and its captures) now.
    // Returns true if it was pending. Safe from inside any callback, including
    // the one this handle names (then it returns false: it is already running;
    // but true for a periodic timer, whose next ticks it cancels).
    bool cancel();
    // True while the callback is scheduled and not yet started or cancelled;
    // for a periodic timer (call_every), until it is cancelled.
    bool is_pending() const;
    // A one-shot timer (call_later, call_at) not yet due: when it is due;
    // otherwise empty. Scans the loop's timers: for diagnostics (what
    // Scheduler::live() says a sleep waits on), not for a hot path.
    std::optional<TimePoint> deadline() const;

private:
    friend class Scheduler;
    Handle(Scheduler* s, std::uint32_t slot, std::uint32_t gen) : sched_(s), slot_(slot), gen_(gen) {}
    Scheduler* sched_ = nullptr;
    std::uint32_t slot_ = 0;
    std::uint32_t gen_ = 0;
};

}  // namespace reactor
