// SPDX-License-Identifier: MIT
// reactor::tls::CloseReason: why a TLS connection closed, as given to its
// close callback. TLS tells apart what TCP cannot: a peer that ended cleanly
// (its close_notify alert) and one whose data stopped at a TCP EOF without it
// (truncation: an attacker or a crash could have cut the data short; Asio's
// stream_truncated, OpenSSL 3's "unexpected eof while reading").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "reactor/export.hpp"
#include "reactor/net/connection.hpp"

namespace reactor::tls {

enum class CloseKind : std::uint8_t {
    local,              // close() or abort() on this side (close() sent close_notify first)
    close_notify,       // the peer ended cleanly: its close_notify arrived (even if our answer then met a reset)
    truncated,          // TCP EOF without the peer's close_notify, after the handshake
    handshake_failed,   // the handshake failed: `detail` has OpenSSL's text ("certificate verify failed: ...")
    tls_error,          // a TLS protocol error after the handshake (a bad record...): `detail` says which
    handshake_timeout,  // Options::handshake_timeout passed before the handshake finished (aborted)
    shutdown_timeout,   // Options::shutdown_timeout passed after our close_notify (aborted)
    transport,          // the TCP connection closed for its own reason: see `transport`
};
REACTOR_API std::string_view to_string(CloseKind kind) noexcept;

struct REACTOR_API CloseReason {
    CloseKind kind = CloseKind::local;
    // The underlying connection's reason when kind is transport (reset,
    // error, read/write/idle timeout, scheduler closed); else what it was,
    // for the curious.
    reactor::CloseReason transport;
    // OpenSSL's text for handshake_failed and tls_error ("error:0A000086:SSL
    // routines::certificate verify failed: hostname mismatch"); empty otherwise.
    std::string detail;
    // "close_notify", "truncated", "handshake failed: error:...",
    // "transport: reset: Connection reset by peer", ...
    std::string to_string() const;
};

}  // namespace reactor::tls
