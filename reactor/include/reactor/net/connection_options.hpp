// SPDX-License-Identifier: MIT
// reactor::ConnectionOptions: what a Connection is given when it is made
// (Connection::adopt, a Listener's Options::connection, connect()): its
// water marks, its read size and its deadlines. A Listener's connections
// share one copy of the marks and read size (detail::ConnectionProfile).
// Part of reactor/net/connection.hpp.
#pragma once

#include <cstddef>

#include "reactor/clock.hpp"

namespace reactor {

struct ConnectionOptions {
    // Output buffer water marks (asyncio's defaults): the high-water callback
    // runs when buffered() grows above `high_water`, the low-water callback
    // when it then falls to `low_water` or below. Requires low <= high.
    std::size_t high_water = 64 * 1024;
    std::size_t low_water = 16 * 1024;
    // Backpressure with no callback, for servers that answer what they read
    // (echo, proxies, request/response): reading pauses when buffered()
    // grows above `high_water` and resumes when it falls to `low_water`, so
    // a peer that does not read its answers is held back by TCP and the
    // buffer stays bounded. The same as a high-water callback calling
    // pause_reading() and a low-water one calling resume_reading() (the
    // water-mark callbacks still run), but it costs no callback storage and
    // leaves pause_reading()/resume_reading() to the user: reading happens
    // only while neither pauses it. Off by default (as asyncio, libuv and Asio,
    // where a buffer grows until the application acts).
    bool pause_reading_above_high_water = false;
    // Most bytes one recv(2) may return; one recv per readiness, so no
    // connection can starve the others. The bytes land in a buffer shared by
    // all connections of the thread, hence no per-connection cost.
    std::size_t read_size = 256 * 1024;  // large enough that a typical message takes one recv()
    // Deadlines, zero for none (libevent's bufferevent_set_timeouts, Netty's
    // idle handler). The close reason names the one that passed.
    //  - read_timeout: nothing received for this long while reading (not
    //    paused, no EOF yet): closed gracefully, flushing buffered output.
    //  - write_timeout: buffered output made no progress for this long (the
    //    peer does not read): aborted, since it cannot be flushed. Also bounds
    //    the flush of a graceful close().
    //  - idle_timeout: nothing received and nothing written for this long:
    //    closed gracefully (an idle keep-alive connection, say).
    // Cheap: no timer work per byte. Each connection has one timer, set for
    // the earliest deadline and moved only when it fires (libuv and nginx
    // re-arm lazily the same way), or earlier when a nearer deadline starts;
    // it takes an entry of the loop's timer heap and no slot.
    Duration read_timeout{};
    Duration write_timeout{};
    Duration idle_timeout{};
};

}  // namespace reactor
