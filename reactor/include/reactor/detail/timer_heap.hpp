// SPDX-License-Identifier: MIT
// reactor::detail::TimerHeap: a Scheduler's sleeping timers, a binary
// min-heap on (deadline, sequence): equal deadlines fire in the order they
// were armed. A cancelled timer's entry stays until it comes up, or until the
// dead outnumber the live (Scheduler::purge_if_mostly_dead): `live` and `dead`
// count them, kept by the Scheduler, which alone knows which entry is live.
// Part of scheduler.hpp; not API.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "reactor/detail/scheduler_slots.hpp"

namespace reactor::detail {

class TimerHeap {
public:
    std::size_t live = 0;  // armed and not cancelled
    std::size_t dead = 0;  // cancelled or replaced, still in the heap

    bool empty() const noexcept { return entries_.empty(); }
    std::size_t size() const noexcept { return entries_.size(); }
    const Timer& earliest() const noexcept { return entries_.front(); }
    // May throw (memory): the heap is as it was.
    void push(TimePoint deadline, Ref r) {
        entries_.push_back(Timer{deadline, seq_++, r});
        std::push_heap(entries_.begin(), entries_.end(), LaterFirst{});
    }
    void pop() noexcept {
        std::pop_heap(entries_.begin(), entries_.end(), LaterFirst{});
        entries_.pop_back();
    }
    // Drops the entries `dead_entry` names and rebuilds the heap.
    template <class DeadEntry>
    void remove_if(DeadEntry dead_entry) {
        std::erase_if(entries_, dead_entry);
        std::make_heap(entries_.begin(), entries_.end(), LaterFirst{});
    }
    void clear() noexcept { entries_.clear(); }
    auto begin() const noexcept { return entries_.begin(); }
    auto end() const noexcept { return entries_.end(); }

private:
    // std's heap algorithms build max-heaps: invert for the earliest on top.
    struct LaterFirst {
        bool operator()(const Timer& a, const Timer& b) const noexcept {
            return a.deadline != b.deadline ? a.deadline > b.deadline : a.seq > b.seq;
        }
    };
    std::vector<Timer> entries_;
    std::uint64_t seq_ = 0;
};

}  // namespace reactor::detail
