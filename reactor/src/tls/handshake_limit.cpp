// SPDX-License-Identifier: MIT
// HandshakeLimit: the handshakes in progress, oldest first; the oldest is
// ended when a new one would make more than max (see handshake_limit.hpp).
#include "reactor/tls/handshake_limit.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace reactor::tls {
namespace {

using Token = std::weak_ptr<Connection* const>;

bool ended(const Token& token) noexcept { return token.expired(); }  // the connection dropped it

}  // namespace

// Keeps only those still in progress, in order.
void HandshakeLimit::compact() { std::erase_if(started_, ended); }

std::size_t HandshakeLimit::in_progress() {
    compact();
    return started_.size();
}

// Between calls, at most max entries are kept: below max, one more fits;
// at max, compacting leaves exactly those in progress, and the oldest of
// them go until there is room.
void HandshakeLimit::started(const ConnectionPtr& conn) {
    if (!conn || conn->state() != Connection::State::handshaking) return;
    while (!started_.empty() && ended(started_.front())) started_.pop_front();
    if (started_.size() >= max_) compact();
    while (started_.size() >= max_) {
        const auto token = started_.front().lock();
        started_.pop_front();
        if (!token) continue;
        const ConnectionPtr oldest = (*token)->shared_from_this();  // fail() may let it go
        ++evicted_;
        oldest->fail(EndKind::handshake_failed,
                     fmt::format("max_handshakes: {} handshakes were in progress; this one, the oldest, was ended to "
                                 "make room for a new one",
                                 max_),
                     true);
    }
    if (!conn->handshaking_) conn->handshaking_ = std::make_unique<Connection::Handshaking>();
    conn->handshaking_->token = std::make_shared<Connection* const>(conn.get());
    started_.push_back(conn->handshaking_->token);
}

}  // namespace reactor::tls
