// SPDX-License-Identifier: MIT
// reactor::RunStatus: why Scheduler::run_for() returned.
#pragma once

#include <cstdint>

namespace reactor {

enum class RunStatus : std::uint8_t {
    idle,       // nothing was ready, sleeping or waiting (run() would have returned too)
    timed_out,  // the duration elapsed with work left
    stopped,    // stop() was called
};

}  // namespace reactor
