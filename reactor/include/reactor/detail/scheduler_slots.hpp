// SPDX-License-Identifier: MIT
// Internal: the Scheduler's bookkeeping records. Every scheduled callable
// lives in one slot of a slab (Scheduler::slots_); the ready queue, the
// sleeping heap, the fd waiters and the signal handlers hold references into
// it (Ref), each live only while the slot's generation matches, so cancelling
// is O(1) and a stale reference is harmless. Not part of the API: the names
// may change with any release.
#pragma once

#include <cstddef>
#include <cstdint>
#include <source_location>

#include "reactor/callback.hpp"
#include "reactor/detail/cache_line.hpp"
#include "reactor/clock.hpp"
#include "reactor/periodic.hpp"
#include "reactor/selector.hpp"

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
    bool is_read = false;  // fd waiters: the read side
    bool unlisted = false;  // timers: Scheduler::call_at_unlisted, not in live()
    int fd = -1;           // fd waiters: the fd; signal handlers: the signal number
};
// One slot per reader and per timer, so every byte here is paid per
// connection; a periodic timer's schedule is kept aside (PeriodicTiming).

// A periodic timer's schedule (Scheduler::periodic_, by slot).
struct PeriodicTiming {
    Periodic policy = Periodic::fixed_rate;
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

// What the loop keeps per fd number for the fd's owner (FdTable::waiting
// is indexed by fd). An idle connection pays for this entry and nothing
// else, so the callback waiters, which owners rarely use, are kept aside
// (FdCallbacks).
struct FdWaiters {
    FdOwner* owner = nullptr;  // set_fd_owner, until forget_fd
    std::uint32_t owner_gen = 0;  // bumped by set_fd_owner and forget_fd: see OwnerReady
    std::int16_t unwatchable = 0;  // errno to tell the owner (tell_owner_unwatchable), 0: none
    Interest watched = Interest::none;  // Scheduler::watch: the owner's own readiness
    bool owner_timer = false;  // Scheduler::set_owner_timer: one entry of the heap is the owner's, not yet due
};

// The callback waiters of one fd (add_reader, add_writer, read_wait,
// write_wait): FdTable::callbacks, indexed by fd, grown only to
// the largest fd given one, so a program whose fds all have owners never
// grows it. An fd beyond its end has none.
struct FdCallbacks {
    Ref read, write;
};

// A ready-queue entry for an owner's readiness (Scheduler::watch) holds no
// slot: its `slot` is kOwnerReady | (kOwnerWrite for the write side) | fd,
// its `gen` the fd's owner_gen when it was queued, so an entry queued for an
// owner that has since forgotten the fd (and maybe handed the number to a
// new owner) is skipped. An owner's timer (Scheduler::set_owner_timer) is
// kOwnerReady | kOwnerTimer | fd, with the same `gen`, both in the sleeping
// heap and, once due, in the ready queue. Slot indexes stay below
// kMaxSlots, so kOwnerReady tells the two apart; fd numbers stay at or
// below kOwnerFdMask (set_fd_owner refuses larger ones).
inline constexpr std::uint32_t kOwnerReady = 1u << 31;
inline constexpr std::uint32_t kOwnerWrite = 1u << 30;
inline constexpr std::uint32_t kOwnerTimer = 1u << 29;
inline constexpr std::uint32_t kOwnerFdMask = kOwnerTimer - 1;
inline constexpr std::uint32_t kMaxSlots = kOwnerWrite;
static_assert((kOwnerFdMask & (kOwnerReady | kOwnerWrite | kOwnerTimer)) == 0);
static_assert(kMaxSlots <= kOwnerReady);

inline constexpr bool is_owner_entry(Ref r) noexcept { return r.slot != kNoSlot && (r.slot & kOwnerReady) != 0; }
inline constexpr bool is_owner_timer(Ref r) noexcept { return is_owner_entry(r) && (r.slot & kOwnerTimer) != 0; }
inline constexpr int owner_fd(Ref r) noexcept { return static_cast<int>(r.slot & kOwnerFdMask); }

// The ready-queue entry standing for the batch of cross-thread posts the
// loop took (Scheduler::drain_threadsafe): they run in its place, in the
// order they were posted, straight from the batch, with no slot each.
inline constexpr Ref kPostedBatch{kNoSlot, 1};
inline constexpr bool is_posted_batch(Ref r) noexcept { return r.slot == kNoSlot && r.gen == kPostedBatch.gen; }

}  // namespace detail
}  // namespace reactor
