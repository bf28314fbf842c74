// SPDX-License-Identifier: MIT
// HandshakeLimit: the handshakes in progress, oldest first; the oldest is
// ended when a new one would make more than max (see handshake_limit.hpp).
#include "reactor/tls/handshake_limit.hpp"

#include <string>

#include <fmt/format.h>

namespace reactor::tls {

void HandshakeLimit::started(const ConnectionPtr& conn) {
    if (!conn || conn->state() != Connection::State::handshaking) return;
    while (started_.size() >= max_) {
        const ConnectionPtr oldest = started_.front()->shared_from_this();  // fail() may let it go
        started_.pop_front();
        ++evicted_;
        oldest->fail(EndKind::handshake_failed,
                     fmt::format("max_handshakes: {} handshakes were in progress; this one, the oldest, was ended to "
                                 "make room for a new one",
                                 max_),
                     true);
    }
    started_.push_back(*conn);
}

}  // namespace reactor::tls
