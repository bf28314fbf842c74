// SPDX-License-Identifier: MIT
// Internal: the part of a Connection that most connections never use, made
// on first use (see the members of Connection): an idle connection without
// it pays one pointer for it.
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

}  // namespace reactor
