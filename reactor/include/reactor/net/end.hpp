// SPDX-License-Identifier: MIT
// reactor::End: how a connection ended, the one answer every layer gives: the
// plain Connection's close callback (and so LineReader's and FrameReader's,
// which close it), tls::Connection's, and every futures::StreamError a
// stream's read or drain fails with. A reason has one kind, spelled the same
// at every layer: a read deadline under TLS under a stream is read_timeout
// all the way up. Made only when a connection ends: nothing open pays for it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "reactor/export.hpp"

namespace reactor {

enum class EndKind : std::uint8_t {
    local,  // close() or abort() on this side (and the flush, if any, succeeded)
    eof,    // the peer ended cleanly: its EOF (TLS: its close_notify), then a graceful close
    reset,  // the peer reset the connection (ECONNRESET, EPIPE, ECONNABORTED); a pipe's reader went away (EPIPE)
    error,  // any other socket error; `error` says which
    // A deadline passed (ConnectionOptions, tls::Options):
    read_timeout,       // nothing received for read_timeout (closed gracefully)
    write_timeout,      // buffered output made no progress for write_timeout (aborted)
    idle_timeout,       // nothing received or sent for idle_timeout (closed gracefully)
    scheduler_closed,   // Scheduler::close() ended the loop with the connection open (aborted)
    // A framing limit (LineReader, FrameReader), closing gracefully:
    line_too_long,      // a line longer than the LineReader's maximum
    frame_too_large,    // a frame whose length prefix is above the FrameReader's maximum
    // The peer's EOF cut short a unit the reader needed whole: a line or a
    // frame (a reader with no EOF callback), or the TLS session itself (a
    // TCP EOF without close_notify, after the handshake: an attacker or a
    // crash could have cut the data there; Asio's stream_truncated). One
    // kind, not two: both say "the bytes stop at the peer's EOF, and what
    // came last may be incomplete", the same thing to the program, and the
    // close callback that receives it already names the layer.
    truncated,
    // TLS (reactor/tls): `detail` has OpenSSL's text.
    handshake_failed,   // the handshake failed ("certificate verify failed: ...")
    tls_error,          // a TLS protocol error after the handshake (a bad record, an alert)
    handshake_timeout,  // tls::Options::handshake_timeout passed before the handshake finished (aborted)
    shutdown_timeout,   // tls::Options::shutdown_timeout passed after our close_notify (aborted)
};
// "local", "eof", "read timeout", "handshake failed", ...
REACTOR_API std::string_view to_string(EndKind kind) noexcept;

struct REACTOR_API End {
    End() = default;
    End(EndKind k, std::error_code e = {}, std::string d = {}) : kind(k), error(e), detail(std::move(d)) {}

    EndKind kind = EndKind::local;
    // Like the error of a connect, a listener or a UDP socket: in the generic
    // category (an errno) for reset and error, empty for the other kinds.
    // end.error == std::errc::connection_reset.
    std::error_code error;
    // Where one helps: OpenSSL's text for handshake_failed, tls_error and
    // truncated ("error:0A000086:SSL routines::certificate verify failed");
    // empty otherwise.
    std::string detail;

    // An orderly end (local, eof): anything else is a failure, or the loop's end.
    bool clean() const noexcept { return kind == EndKind::local || kind == EndKind::eof; }
    // "eof", "reset: Connection reset by peer", "handshake failed: error:...".
    std::string to_string() const;
};

// The plain connection's names, from before there was one End for every layer.
using CloseKind = EndKind;
using CloseReason = End;

}  // namespace reactor
