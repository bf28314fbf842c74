// SPDX-License-Identifier: MIT
// reactor::detail::DebugState: a Scheduler's debug mode (Options::debug,
// REACTOR_DEBUG; docs/debugging.md): whether it is on, its thresholds, and
// the thread running the loop while a run is under way, which other threads
// read to find they are not it (atomic). Part of scheduler.hpp; not API.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "reactor/clock.hpp"

namespace reactor::detail {

struct DebugState {
    bool on = false;
    Duration slow_threshold{};
    Duration late_threshold{};
    std::atomic<std::thread::id> loop_thread{};
    std::atomic<std::uint64_t> wrong_thread_calls{0};
};

}  // namespace reactor::detail
