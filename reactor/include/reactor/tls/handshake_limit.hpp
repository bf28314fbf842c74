// SPDX-License-Identifier: MIT
// reactor::tls::HandshakeLimit: a bound on the server handshakes in progress
// at once, what tls::Options::max_handshakes asks of tls::listen and of
// futures' TLS start_server (each keeps one; a program that starts server
// handshakes itself, tls::Connection::start_server on connections it
// accepted, may keep one too).
//
// Beyond the bound, the OLDEST handshake still in progress is aborted (its
// close reason handshake_failed, `detail` naming max_handshakes), and the
// new one goes on. Refusing the new one instead would let clients that
// start handshakes and never finish them (a slow or half-sent ClientHello)
// hold every slot until their handshake_timeout, and keep every real client
// out meanwhile, for as long as they keep coming. Ending the oldest, a real
// client (whose handshake takes a few round trips) is only ended if
// max_handshakes others start after it before it finishes. It sees each
// connection by a token the connection drops as its handshake ends (done,
// failed, or the connection gone): it keeps no connection alive, and may be
// dropped from any thread (a GroupListener's accept callback goes with
// whichever loop lets go of it last). The count is kept lazily: a handshake
// that ended leaves it at the next started() (amortised O(1); at most max
// entries are kept). Loop thread only otherwise (the connections' loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

#include "reactor/export.hpp"
#include "reactor/tls/connection.hpp"

namespace reactor::tls {

class REACTOR_API HandshakeLimit {
public:
    // At most `max` handshakes in progress at once (at least 1: 0 counts as 1).
    explicit HandshakeLimit(std::size_t max) noexcept : max_(max == 0 ? 1 : max) {}

    // `conn` has just started its handshake: counted; if max() were already
    // in progress, the oldest of them is aborted first.
    void started(const ConnectionPtr& conn);

    // Handshakes in progress now (started, not finished, not failed).
    std::size_t in_progress();
    std::size_t max() const noexcept { return max_; }
    // Handshakes aborted to make room.
    std::uint64_t evicted() const noexcept { return evicted_; }

private:
    void compact();

    std::size_t max_;
    // In start order; some may have ended (their token expired).
    std::deque<std::weak_ptr<Connection* const>> started_;
    std::uint64_t evicted_ = 0;
};

}  // namespace reactor::tls
