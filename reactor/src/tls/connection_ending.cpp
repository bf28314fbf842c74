// SPDX-License-Identifier: MIT
// reactor::tls::Connection, its ending: close_notify both ways, write_eof,
// close and abort, failures, the handshake and shutdown timeouts, and the
// close reason given once the transport has closed (reactor/tls/connection.hpp
// has the rules).
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "reactor/tls/connection.hpp"
#include "engine_bio.hpp"

namespace reactor::tls {

void Connection::set_state(State to) {
    if (!may_move(state_, to)) [[unlikely]]
        throw std::logic_error(fmt::format("reactor::tls: a connection moved from {} to {}: a bug of reactor::tls",
                                           to_string(state_), to_string(to)));
    state_ = to;
}

void Connection::on_peer_close_notify() {
    peer_closed_ = true;
    if (sent_close_notify_) {  // both sides said goodbye
        ending_ = End(EndKind::eof);
        set_state(State::shutting_down);
        transport_->close();
        return;
    }
    if (protocol_ && protocol_->on_eof()) return;  // it writes on, then write_eof() or close()
    if (state_ != State::open) return;  // it closed already
    ending_ = End(EndKind::eof);
    set_state(State::shutting_down);
    send_close_notify();
    transport_->close();
    if (transport_->state() == reactor::Connection::State::closing)
        arm_timer(options_.shutdown_timeout, EndKind::shutdown_timeout);
}


void Connection::send_close_notify() {
    if (sent_close_notify_ || !handshake_done_) return;
    sent_close_notify_ = true;
    ERR_clear_error();
    {
        InEngine engine(*this);
        SSL_shutdown(ssl_);  // 0: sent, the peer's not yet read; below 0: failed (no memory)
        // False: the transport's write failed and closed it (a reset): its
        // close reason is the end, as in the handshake (no alert of ours).
        if (!engine.flush()) transport_closed_by_engine_ = false;
    }
    ERR_clear_error();
    deliver_high_water();
}

void Connection::write_eof() {
    if (!is_open() || write_eof_wanted_ || close_wanted_) return;
    check_thread("tls::Connection::write_eof");
    write_eof_wanted_ = true;
    if (handshake_done_) do_write_eof();  // else once the handshake is done, after the pending plaintext
}

void Connection::do_write_eof() {
    send_close_notify();
    if (peer_closed_) {  // the peer said goodbye first: we are done
        ending_ = End(EndKind::eof);
        set_state(State::shutting_down);
        transport_->close();
        return;
    }
    transport_->write_eof();  // TCP's FIN after close_notify, once flushed
    // Reading goes on until the peer's close_notify: bounded.
    arm_timer(options_.shutdown_timeout, EndKind::shutdown_timeout);
}

void Connection::close() {
    check_thread("tls::Connection::close");
    if (state_ == State::shutting_down || state_ == State::closed || close_wanted_) return;
    if (!handshake_done_ && !pending_plaintext_.empty()) {
        close_wanted_ = true;  // the plaintext goes out once the handshake is done, then close_notify
        return;
    }
    do_close();
}

void Connection::do_close() {
    set_state(State::shutting_down);
    if (!ending_) ending_ = End(EndKind::local);
    send_close_notify();  // not during a handshake: there is no session to close
    transport_->close();
    if (transport_->state() == reactor::Connection::State::closing) {
        arm_timer(options_.shutdown_timeout, EndKind::shutdown_timeout);  // bounds the flush
    } else {
        timer_.cancel();
    }
}

void Connection::abort() {
    if (state_ == State::closed) return;
    check_thread("tls::Connection::abort");
    if (!ending_) ending_ = End(EndKind::local);
    set_state(State::shutting_down);
    pending_plaintext_.clear();
    timer_.cancel();
    transport_->abort();
}

// A failure of ours: the close reason is `kind`, unless the transport closed
// first for a reason of its own (then its reason is the truth). The alert the
// engine sent for this failure may have been what closed it (EPIPE after a
// truncation): that is still our failure. An alert the engine made is
// already with the transport: a graceful close flushes it.
void Connection::fail(EndKind kind, std::string detail, bool abortive) {
    if (state_ == State::closed) return;
    const bool transport_open = transport_->state() != reactor::Connection::State::closed;
    if (!ending_ && (transport_open || transport_closed_by_engine_)) ending_ = End(kind, {}, std::move(detail));
    set_state(State::shutting_down);
    pending_plaintext_.clear();
    if (abortive) {
        timer_.cancel();
        transport_->abort();
        return;
    }
    transport_->close();
    if (transport_->state() == reactor::Connection::State::closing) {
        arm_timer(options_.shutdown_timeout, EndKind::shutdown_timeout);
    } else {
        timer_.cancel();
    }
}

// The transport's write of a handshake flight failed and closed it (a
// reset, a socket error such as ENOBUFS) while the engine itself was fine:
// not a failure of ours, so no reason is set here; the transport's close
// callback brings its own (kind and errno), as the plain connection gives
// it. The handshake cannot go on: no longer in progress (max_handshakes).
void Connection::handshake_transport_lost() {
    transport_closed_by_engine_ = false;  // what closed it was no alert of ours
    if (state_ == State::closed) return;
    set_state(State::shutting_down);
    pending_plaintext_.clear();
    timer_.cancel();
}

// The transport threw while taking records the engine counted as sent (out
// of memory): the peer could not read past the gap, so nothing more may go.
void Connection::records_lost() {
    fail(EndKind::tls_error, "reactor::tls: the transport could not take the engine's records (out of memory)", true);
}

void Connection::arm_timer(std::chrono::milliseconds after, EndKind kind) {
    timer_.cancel();
    if (after <= std::chrono::milliseconds::zero()) return;
    timer_ = transport_->scheduler().call_later(after, [weak = weak_from_this(), kind] {
        auto self = weak.lock();
        if (!self || self->state_ == State::closed) return;
        if (kind == EndKind::handshake_timeout && self->handshake_done_) return;
        // A graceful end that could not finish becomes the timeout; a
        // failure keeps its own reason (the timeout only bounded its flush).
        if (!self->ending_ || self->ending_->clean() || kind == EndKind::handshake_timeout) self->ending_ = End(kind);
        self->set_state(State::shutting_down);
        self->pending_plaintext_.clear();
        self->transport_->abort();
    });
}

// The reason, in order: a failure of ours keeps its own; a graceful end of
// ours (local, eof) holds unless the transport failed first, whose own
// reason (reset, a deadline, the loop's end...) is then the reason, spelled
// as the transport spelled it. A peer that sent close_notify ended cleanly,
// so a reset or socket error met after it (our answer's write found the peer
// gone: EPIPE, ECONNRESET) is not a failure of the transport: the reason is
// what it would have been had that write succeeded.
void Connection::on_closed(const reactor::End& r) {
    const std::shared_ptr<Connection> keep = std::move(self_);  // released as we return
    set_state(State::closed);
    timer_.cancel();
    timer_ = Handle();  // never used again: we may outlive the Scheduler
    const bool peer_gone_after_close_notify =
        peer_closed_ && (r.kind == EndKind::reset || r.kind == EndKind::error);
    End reason = r;
    if (ending_ && (r.clean() || !ending_->clean() || peer_gone_after_close_notify)) {
        reason = std::move(*ending_);
    } else if (r.kind == EndKind::eof || peer_gone_after_close_notify) {
        // The transport closed by itself: our write side was shut (write_eof)
        // and TCP's EOF came, or the peer left after its close_notify while
        // the EOF callback's writes went on.
        reason = End(peer_closed_ ? EndKind::eof : EndKind::truncated);
    }
    ending_ = reason;  // end()
    unread_input_.clear();
    tell_end([&reason](reactor::Protocol& told) { told.on_closed(reason); });
}

// The loop ended before the transport could tell us how it closed: we tell
// ours the same, and let ourselves go (no user callback runs).
void Connection::on_abandoned() noexcept {
    const std::shared_ptr<Connection> keep = std::move(self_);
    if (state_ != State::closed) set_state(State::closed);  // allowed from any state: cannot throw
    ending_.reset();  // it did not end: end() stays null
    tell_end([](reactor::Protocol& told) { told.on_abandoned(); });
}

// The protocol is let go as it is told, the handshake callback dropped
// first (a wait on the handshake learns from end() that it will not come),
// and every callback after (whatever the told one set is never called).
template <class Tell>
void Connection::tell_end(Tell tell) {
    reactor::Protocol* told = std::exchange(protocol_, nullptr);
    struct DropAll {
        Connection& conn;
        ~DropAll() {
            conn.on_handshake_.reset();
            if (conn.callbacks_) conn.callbacks_->clear();
        }
    } drop_all{*this};
    on_handshake_.reset();
    if (told) tell(*told);
}

}  // namespace reactor::tls
