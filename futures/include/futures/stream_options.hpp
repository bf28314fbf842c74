// SPDX-License-Identifier: MIT
// futures::StreamOptions: what a Stream, open_connection and start_server
// are given (the stream's limit, its connection's water marks and
// deadlines, the connect timeout, the server's connection limit). Part of
// futures/stream.hpp.
#pragma once

#include <cstddef>

#include <reactor/clock.hpp>
#include <reactor/net/connection_options.hpp>

namespace futures {

struct StreamOptions {
    // The most read_until() may take, and the read-buffer size: while no
    // read waits, reading from the socket pauses once more than 2 x limit
    // bytes wait unread.
    std::size_t limit = 64 * 1024;
    // Water marks and deadlines of the connection. drain() waits while more
    // than connection.high_water bytes are buffered, until at most low_water
    // are. While no read waits and the output is above high_water, reading
    // from the socket pauses too (a peer that does not read what it is sent
    // is held back by TCP, not by the stream's memory); a read that needs
    // more bytes resumes it, and so does the output falling to low_water. connection.read_timeout is the streams' read deadline: when
    // nothing arrives for that long while a read could, the connection closes
    // and the pending read (and every later one) fails with std::system_error
    // ETIMEDOUT, with no with_timeout around each read. write_timeout and
    // idle_timeout likewise (see reactor::ConnectionOptions).
    reactor::ConnectionOptions connection;
    // open_connection only: how long the whole attempt may take (the name's
    // lookup, every address tried, and the TLS handshake for a TLS
    // connection) before its future fails with ConnectTimeoutError. Zero: no
    // bound but the kernel's (minutes, for an address that never answers).
    // A reactor::Duration (it was std::chrono::milliseconds: any std::chrono
    // duration still assigns, and reactor::from_seconds(2.5) does too).
    reactor::Duration connect_timeout{0};
    // start_server only: the most client connections open at once
    // (reactor::Listener::Options::max_connections: beyond it, a new client
    // is accepted and closed at once, and its handler never runs; over TLS,
    // handshakes in progress count too). Zero: no limit.
    std::size_t max_connections = 0;
};

}  // namespace futures
