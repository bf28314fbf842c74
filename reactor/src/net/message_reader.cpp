// SPDX-License-Identifier: MIT
// The reading of the line and frame readers, over any connection: see
// reactor/net/detail/message_reader.hpp.
#include "reactor/net/detail/message_reader.hpp"

#include <stdexcept>

#include "reactor/net/connection.hpp"  // the transport's socket, for its loop

namespace reactor::detail {

namespace {
// An emptied buffer keeps this much for the next incomplete message; a larger
// one (a long message just handed over) goes back to the heap, so an idle
// connection does not keep it.
constexpr std::size_t kKeptBuffer = 4096;
}  // namespace

MessageReader::MessageReader(Transport* transport, EndKind too_large)
    : transport_(transport), too_large_(too_large) {
    if (!transport) throw std::invalid_argument("reader: null connection");
}

MessageReader::~MessageReader() = default;

void MessageReader::on_data(Transport& conn, std::string_view data) {
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

void MessageReader::deliver(Transport& conn, std::string_view& bytes) {
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
        tell_message(conn, message);
    }
}

void MessageReader::on_eof(Transport& conn) {
    const std::shared_ptr<MessageReader> keep = shared_from_this();
    if (!attached_) return;
    // Every complete message was handed over (reading was paused otherwise):
    // what is left is the start of one that will never end.
    const std::string partial(in_.view());
    in_.release();
    scanned_ = 0;
    if (!tell_eof(conn, partial)) conn.close(partial.empty() ? EndKind::eof : EndKind::truncated);
}

void MessageReader::pause() {
    if (paused_) return;
    paused_ = true;
    transport_->pause_reading();
}

void MessageReader::resume() {
    if (!paused_) return;
    paused_ = false;
    // Messages received before the pause go first, from the loop; reading
    // resumes only after them, so nothing new overtakes them.
    transport_->socket().scheduler().call_soon([weak = weak_from_this()] {
        if (auto self = weak.lock()) self->deliver_buffered();
    });
}

void MessageReader::deliver_buffered() {
    if (!attached_ || paused_) return;
    std::string_view rest = in_.view();
    try {
        deliver(*transport_, rest);
    } catch (...) {
        if (attached_) keep_only(rest);
        throw;
    }
    if (!attached_) {
        in_.release();
        return;
    }
    keep_only(rest);
    if (!paused_ && transport_->is_open()) transport_->resume_reading();
}

std::string MessageReader::detach() {
    if (!attached_) return {};
    attached_ = false;
    // From a message callback, the rest of the bytes being cut is not in_
    // (or is in_ itself, released by the caller once the callback returns).
    std::string rest(delivering_ ? pending_ : in_.view());
    if (!delivering_) in_.release();
    scanned_ = 0;
    release_callbacks();
    if (paused_) transport_->resume_reading();  // the pause was ours; plain reads start as the user left them
    paused_ = false;
    return rest;
}

}  // namespace reactor::detail
