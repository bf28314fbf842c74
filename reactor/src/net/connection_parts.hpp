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
};

// The three timeouts and what they count from (connection_deadlines.cpp).
struct Connection::Deadlines {
    Duration read_timeout{};
    Duration write_timeout{};
    Duration idle_timeout{};
    TimePoint last_read{};     // last bytes received
    TimePoint last_written{};  // last bytes sent, or output queued
    TimePoint read_from{};     // when the read timeout was set, or reading resumed
    TimePoint write_from{};
    TimePoint idle_from{};
    Handle timer;              // for the earliest deadline, re-armed only when it fires
    TimePoint timer_at{};
};

}  // namespace reactor
