// Internal: the Scheduler's bookkeeping records. Every scheduled callable
// lives in one slot of a slab (Scheduler::slots_); the ready queue, the
// sleeping heap, the fd waiters and the signal handlers hold references into
// it (Ref), each live only while the slot's generation matches, so cancelling
// is O(1) and a stale reference is harmless. Not part of the API: the names
// may change with any release.
#pragma once

#include <cstdint>
#include <source_location>

#include "reactor/callback.hpp"
#include "reactor/clock.hpp"
#include "reactor/periodic.hpp"

namespace reactor {

class FdOwner;

namespace detail {

inline constexpr std::uint32_t kNoSlot = UINT32_MAX;

// periodic: armed in the sleeping heap; periodic_due: in the ready queue
// or running (re-armed after its callback returns).
enum class SlotKind : std::uint8_t {
    free,
    soon,
    timer,
    oneshot_waiter,
    persistent_waiter,
    periodic,
    periodic_due,
    signal_handler,
};

struct Slot {
    Callback cb;
    std::source_location where;
    std::uint32_t gen = 0;
    std::uint32_t next_free = 0;
    SlotKind kind = SlotKind::free;
    int fd = -1;  // fd waiters: the fd; signal handlers: the signal number
    bool is_read = false;
    Periodic policy = Periodic::fixed_rate;  // periodic timers only, with the two below
    Duration interval{};
    TimePoint deadline{};  // when the current tick was due
};

// A reference into the slot table, live only while gen matches.
struct Ref {
    std::uint32_t slot = kNoSlot;
    std::uint32_t gen = 0;
};

// An entry of the sleeping heap, ordered by (deadline, seq): equal deadlines
// fire in scheduling order.
struct Timer {
    TimePoint deadline;
    std::uint64_t seq;
    Ref ref;
};

// The read and write waiters of one fd (Scheduler::waiting_ is indexed by fd).
struct FdWaiters {
    Ref read, write;
    FdOwner* owner = nullptr;  // set_fd_owner, until forget_fd
    int unwatchable = 0;       // errno to tell the owner (tell_owner_unwatchable), 0: none
};

}  // namespace detail
}  // namespace reactor
