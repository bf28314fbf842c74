// SPDX-License-Identifier: MIT
// reactor::tls::LineReader and reactor::tls::FrameReader: line mode and
// length-prefixed frames over a TLS connection, with the contract of the
// plain ones (reactor/net/line_reader.hpp, frame_reader.hpp): line ends, the
// maximum (closing gracefully, with close_notify, reason line_too_long or
// frame_too_large), the peer's end inside a message (here its close_notify:
// the EOF callback, or EndKind::truncated), pause, resume and detach. The
// same reader (BasicLineReader, BasicFrameReader), over a tls::Connection:
// its callbacks take a reactor::tls::Connection&.
//
//     auto tls = reactor::tls::Connection::start_server(conn, context);
//     reactor::tls::LineReader::attach(tls, [](reactor::tls::Connection& c, std::string_view line) {
//         c.write(fmt::format("Got: {}\n", line));
//     });
//
// Attach right after start_server/start_client, or at any time while the
// connection is open: lines come once the handshake is done. To send frames,
// reactor::write_frame takes any reactor::Transport, a TLS connection too.
#pragma once

#include "reactor/net/frame_reader.hpp"
#include "reactor/net/line_reader.hpp"
#include "reactor/tls/connection.hpp"

namespace reactor::tls {

using LineReader = reactor::BasicLineReader<Connection>;
using FrameReader = reactor::BasicFrameReader<Connection>;

}  // namespace reactor::tls
