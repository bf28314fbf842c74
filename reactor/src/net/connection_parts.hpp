// SPDX-License-Identifier: MIT
// Internal: the parts of a Connection that most connections never use, each
// made on first use (see the members of Connection): an idle connection with
// neither pays one pointer for each.
#pragma once

#include "reactor/net/connection.hpp"

namespace reactor {

struct Connection::RareCallbacks {
    CallbackSlot<void(Connection&)> on_eof;
    CallbackSlot<void(Connection&)> on_drain;
    CallbackSlot<void(Connection&)> on_high_water;
    CallbackSlot<void(Connection&)> on_low_water;
    int restore_flags = -1;  // adopt_stdio: file status flags to put back when closing
};

// The three timeouts and when each count (re)started (connection_deadlines.cpp).
// A count restarts with the traffic it watches and when its timeout is set
// (or, for reads, when reading resumes): the latest of those is all a
// deadline needs, so one time point each.
struct Connection::Deadlines {
    Duration read_timeout{};
    Duration write_timeout{};
    Duration idle_timeout{};
    TimePoint read_start{};   // bytes received, the timeout set, reading resumed
    TimePoint write_start{};  // bytes sent or output queued, the timeout set
    TimePoint idle_start{};   // bytes either way, the timeout set
    // The loop's timer for the earliest deadline (Scheduler::set_owner_timer):
    // its time, while the loop says it is pending; set again when it fires,
    // or to move it earlier.
    TimePoint timer_at = TimePoint::max();
};

}  // namespace reactor
