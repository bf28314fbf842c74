// SPDX-License-Identifier: MIT
// The simulated world's one event heap: what the network does at a virtual
// time (a segment arriving, a host's timer coming due), ordered by (time,
// sequence) so that events of one instant run in the order they were
// scheduled, on every run of a seed (STYLE.md 5). Events never call user
// code: they change the network's state and mark hosts runnable; the World
// runs the hosts. Loop thread only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "reactor/clock.hpp"

namespace reactor::testing::sim::detail {

class EventQueue {
public:
    void push(TimePoint at, std::function<void()> action) {
        heap_.push_back(Entry{at, seq_++, std::move(action)});
        std::push_heap(heap_.begin(), heap_.end(), Later{});
    }
    bool empty() const noexcept { return heap_.empty(); }
    std::size_t size() const noexcept { return heap_.size(); }
    TimePoint next_time() const noexcept { return heap_.front().at; }
    // The earliest event's action, taken out of the heap (the caller runs it).
    std::function<void()> pop() {
        std::pop_heap(heap_.begin(), heap_.end(), Later{});
        std::function<void()> action = std::move(heap_.back().action);
        heap_.pop_back();
        return action;
    }

private:
    struct Entry {
        TimePoint at;
        std::uint64_t seq;
        std::function<void()> action;
    };
    struct Later {
        bool operator()(const Entry& a, const Entry& b) const noexcept {
            return a.at != b.at ? a.at > b.at : a.seq > b.seq;
        }
    };
    std::vector<Entry> heap_;
    std::uint64_t seq_ = 0;
};

}  // namespace reactor::testing::sim::detail
