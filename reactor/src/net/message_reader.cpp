// SPDX-License-Identifier: MIT
// The base of LineReader and FrameReader: see reactor/net/detail/message_reader.hpp.
#include "reactor/net/detail/message_reader.hpp"

#include <stdexcept>

namespace reactor::detail {

namespace {
// An emptied buffer keeps this much for the next incomplete message; a larger
// one (a long message just handed over) goes back to the heap, so an idle
// connection does not keep it.
constexpr std::size_t kKeptBuffer = 4096;
}  // namespace

MessageReader::MessageReader(const ConnectionPtr& conn, MessageCallback on_message, EndKind too_large)
    : conn_(conn), on_message_(std::move(on_message)), too_large_(too_large) {
    if (!conn) throw std::invalid_argument("reader: null connection");
    if (!on_message_) throw std::invalid_argument("reader: empty message callback");
}

MessageReader::~MessageReader() = default;

void MessageReader::start(Connection& conn) {
    attached_ = true;
    // The connection's callbacks own the reader: it lives as long as they do
    // (until the connection has closed, or detach()).
    conn.set_data_callback([self = shared_from_this()](Connection& c, std::string_view data) { self->on_data(c, data); });
    conn.set_eof_callback([self = shared_from_this()](Connection& c) { self->on_eof(c); });
}

void MessageReader::on_data(Connection& conn, std::string_view data) {
    const std::shared_ptr<MessageReader> keep = shared_from_this();  // a callback may detach us
    if (!attached_) return;
    if (in_.empty()) {
        // The common case: messages are cut from the read's own bytes, and
        // only an incomplete one at the end is copied.
        std::string_view rest = data;
        try {
            deliver(conn, rest);
        } catch (...) {
            if (attached_) in_.append(rest);
            throw;
        }
        if (attached_ && conn.is_open()) in_.append(rest);
        return;
    }
    in_.append(data);
    std::string_view rest = in_.view();
    try {
        deliver(conn, rest);
    } catch (...) {
        if (attached_) keep_only(rest);
        throw;
    }
    if (attached_) {
        keep_only(rest);
    } else {
        in_.release();  // detach() returned what was left
    }
}

void MessageReader::keep_only(std::string_view rest) noexcept {
    in_.consume(in_.size() - rest.size());
    if (in_.empty() && in_.capacity() > kKeptBuffer) in_.release();
}

void MessageReader::deliver(Connection& conn, std::string_view& bytes) {
    delivering_ = true;
    struct Done {
        bool& flag;
        ~Done() { flag = false; }
    } done{delivering_};
    while (!bytes.empty() && may_deliver(conn)) {
        const Cut c = cut(bytes, scanned_);
        if (c.what == Cut::What::more) {
            scanned_ = bytes.size();
            return;
        }
        scanned_ = 0;
        if (c.what == Cut::What::too_large) {
            bytes = {};
            conn.close(too_large_);  // graceful: what the user wrote before still goes out
            return;
        }
        const std::string_view message = bytes.substr(c.offset, c.length);
        bytes.remove_prefix(c.consumed);
        pending_ = bytes;
        on_message_(conn, message);
    }
}

void MessageReader::on_eof(Connection& conn) {
    const std::shared_ptr<MessageReader> keep = shared_from_this();
    if (!attached_) return;
    // Every complete message was handed over (reading was paused otherwise):
    // what is left is the start of one that will never end.
    const std::string partial(in_.view());
    in_.release();
    scanned_ = 0;
    if (on_eof_) {
        on_eof_(conn, partial);
    } else {
        conn.close(partial.empty() ? EndKind::eof : EndKind::truncated);
    }
}

void MessageReader::pause() {
    if (paused_) return;
    paused_ = true;
    conn_->pause_reading();
}

void MessageReader::resume() {
    if (!paused_) return;
    paused_ = false;
    // Messages received before the pause go first, from the loop; reading
    // resumes only after them, so nothing new overtakes them.
    conn_->scheduler().call_soon([weak = weak_from_this()] {
        if (auto self = weak.lock()) self->deliver_buffered();
    });
}

void MessageReader::deliver_buffered() {
    if (!attached_ || paused_) return;
    std::string_view rest = in_.view();
    try {
        deliver(*conn_, rest);
    } catch (...) {
        if (attached_) keep_only(rest);
        throw;
    }
    if (!attached_) {
        in_.release();
        return;
    }
    keep_only(rest);
    if (!paused_ && conn_->is_open()) conn_->resume_reading();
}

std::string MessageReader::detach() {
    if (!attached_) return {};
    attached_ = false;
    // From a message callback, the rest of the bytes being cut is not in_
    // (or is in_ itself, released by the caller once the callback returns).
    std::string rest(delivering_ ? pending_ : in_.view());
    if (!delivering_) in_.release();
    scanned_ = 0;
    conn_->set_data_callback(nullptr);
    conn_->set_eof_callback(nullptr);
    if (paused_) conn_->resume_reading();  // the pause was ours; plain reads start as the user left them
    paused_ = false;
    return rest;
}

}  // namespace reactor::detail
