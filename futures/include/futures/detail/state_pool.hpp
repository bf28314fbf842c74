// SPDX-License-Identifier: MIT
// futures::detail state pool: recycles the memory of future states, per thread.
//
// Every future is one heap block (its state), made when the future is made and
// freed when its last handle goes, so a then() chain or a fan-out allocates and
// frees at the rate the loop runs them. Freed blocks are kept on a free list per
// size class (16 bytes apart, each sized to fill a malloc chunk, up to
// kMaxPooledSize) and handed out again by the next state of that class: a pop
// instead of malloc, a push instead of free. Bigger states go straight to
// operator new/delete. Futures are loop-thread only, so each thread has its own
// pool and needs no lock. A thread keeps at most kMaxCachedBytes of free
// blocks; beyond that, freed blocks go back to the allocator. So the pool holds
// on to the memory of the largest burst of futures so far, as the Scheduler
// keeps its largest ready queue, up to a bound that a library may pin per
// thread without surprising anyone (64 MiB: half a million 128-byte states).
// A burst beyond it works as before the pool, through
// operator new and delete, and pays what the allocator pays (glibc may hand
// the overflow back to the kernel and fault it in again next time). The
// pool is emptied when its thread exits. Under AddressSanitizer a cached block
// is poisoned, so touching a state after it was freed is still reported, as
// with plain malloc/free.
//
// It also keeps one spare waiter vector (the storage of a state's second and
// later waiters, see futures/detail/waiters.hpp), the largest one freed: a fan-out (one future,
// many waiters) then regrows no vector in the steady state, and the memory
// malloc would have handed back to the kernel (to fault it in again next time)
// stays mapped.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <reactor/export.hpp>

namespace futures::detail {

class Waiter;
using WaiterVector = std::vector<Waiter>;

inline constexpr std::size_t kMaxPooledSize = 256;
inline constexpr std::size_t kMaxCachedBytes = std::size_t{64} << 20;

// A block of at least `size` bytes, aligned for any type with fundamental alignment.
REACTOR_API void* allocate_state(std::size_t size);
// Returns a block from allocate_state(size), with the same size.
REACTOR_API void free_state(void* block, std::size_t size) noexcept;

// An empty waiter vector: the spare one (with its capacity) if there is one.
REACTOR_API std::unique_ptr<WaiterVector> take_waiter_vector();
// Keeps `v` (emptied) as the spare if it holds more than the current one.
REACTOR_API void recycle_waiter_vector(std::unique_ptr<WaiterVector> v) noexcept;

// Introspection for tests: the free blocks this thread holds, and their bytes.
REACTOR_API std::size_t pooled_state_blocks() noexcept;
REACTOR_API std::size_t pooled_state_bytes() noexcept;

}  // namespace futures::detail
