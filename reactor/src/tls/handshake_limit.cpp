// SPDX-License-Identifier: MIT
// HandshakeLimit: the handshakes in progress, oldest first; the oldest is
// ended when a new one would make more than max (see handshake_limit.hpp).
#include "reactor/tls/handshake_limit.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace reactor::tls {
namespace {

bool in_handshake(const std::weak_ptr<Connection>& weak) {
    auto conn = weak.lock();
    return conn && conn->state() == Connection::State::handshaking;
}

}  // namespace

// Keeps only those still in progress, in order.
void HandshakeLimit::compact() {
    std::erase_if(started_, [](const std::weak_ptr<Connection>& c) { return !in_handshake(c); });
}

std::size_t HandshakeLimit::in_progress() {
    compact();
    return started_.size();
}

// Between calls, at most max entries are kept: below max, one more fits;
// at max, compacting leaves exactly those in progress, and the oldest of
// them go until there is room.
void HandshakeLimit::started(const ConnectionPtr& conn) {
    while (!started_.empty() && !in_handshake(started_.front())) started_.pop_front();
    if (started_.size() >= max_) compact();
    while (started_.size() >= max_) {
        ConnectionPtr oldest = started_.front().lock();
        started_.pop_front();
        if (!oldest) continue;
        ++evicted_;
        oldest->fail(EndKind::handshake_failed,
                     fmt::format("max_handshakes: {} handshakes were in progress; this one, the oldest, was ended to "
                                 "make room for a new one",
                                 max_),
                     true);
    }
    started_.push_back(conn);
}

}  // namespace reactor::tls
