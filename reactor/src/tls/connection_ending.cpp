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
namespace {

using Phase = Connection::Phase;
using State = Connection::State;

// Where close(), abort(), a failure or a timeout moves a connection, and
// where the transport's close does: the shutting_down or closed phase that
// keeps how far it got.
constexpr Phase shutting_down_from(Phase from) noexcept {
    switch (Connection::state_of(from)) {
    case State::handshaking: return Phase::shutting_down_in_handshake;
    case State::open: return from == Phase::read_ended ? Phase::shutting_down_read_ended : Phase::shutting_down;
    case State::shutting_down:
    case State::closed: return from;
    }
    return from;
}

constexpr Phase closed_from(Phase from) noexcept {
    switch (shutting_down_from(from)) {
    case Phase::shutting_down_in_handshake: return Phase::closed_in_handshake;
    case Phase::shutting_down_read_ended: return Phase::closed_read_ended;
    case Phase::shutting_down: return Phase::closed;
    default: return from;  // closed already
    }
}

// The table of Connection::may_move (constexpr: the check below uses it).
constexpr bool moves(Phase from, Phase to) noexcept {
    using enum Connection::Phase;  // not the alias Phase: clang 15 (the fuzz build) refuses one
    if (from == to) return Connection::state_of(from) != State::closed;
    switch (from) {
    case handshaking:
        return to == handshaking_then_write_eof || to == handshaking_then_close || to == open ||
               to == shutting_down_in_handshake || to == closed_in_handshake;
    case handshaking_then_write_eof:
        return to == handshaking_then_close || to == handshaken_then_write_eof ||
               to == shutting_down_in_handshake || to == closed_in_handshake;
    case handshaking_then_close:
        return to == handshaken_then_close || to == shutting_down_in_handshake || to == closed_in_handshake;
    case handshaken_then_write_eof: return to == write_ended || to == shutting_down || to == closed;
    case handshaken_then_close: return to == shutting_down || to == closed;
    case open: return to == write_ended || to == read_ended || to == shutting_down || to == closed;
    case write_ended: return to == shutting_down_read_ended || to == shutting_down || to == closed;
    case read_ended: return to == shutting_down_read_ended || to == closed_read_ended;
    case shutting_down_in_handshake: return to == closed_in_handshake;
    case shutting_down: return to == closed;
    case shutting_down_read_ended: return to == closed_read_ended;
    default: return false;  // closed: the close callback ran
    }
}

// Every phase may move to its own: ending cannot be refused (on_abandoned is noexcept).
static_assert([] {
    for (int p = 0; p <= static_cast<int>(Phase::closed_read_ended); ++p)
        if (const auto from = static_cast<Phase>(p);
            Connection::state_of(from) != State::closed &&
            (!moves(from, closed_from(from)) || !moves(from, shutting_down_from(from))))
            return false;
    return true;
}());

}  // namespace

bool Connection::may_move(Phase from, Phase to) noexcept { return moves(from, to); }

void Connection::set_phase(Phase to) {
    if (!may_move(phase_, to)) [[unlikely]]
        throw std::logic_error(fmt::format("reactor::tls: a connection moved from {} to {}: a bug of reactor::tls",
                                           to_string(phase_), to_string(to)));
    phase_ = to;
    // The handshake is over (done, failed, abandoned): no HandshakeLimit counts it.
    if (state_of(to) != State::handshaking && handshaking_) handshaking_->token.reset();
}

void Connection::on_peer_close_notify() {
    if (phase_ == Phase::write_ended) {  // both sides said goodbye
        ending_ = End(EndKind::eof);
        set_phase(Phase::shutting_down_read_ended);
        transport_->close();
        return;
    }
    set_phase(Phase::read_ended);
    if (protocol_ && protocol_->on_eof()) return;  // it writes on, then write_eof() or close()
    if (phase_ != Phase::read_ended) return;  // it closed already
    ending_ = End(EndKind::eof);
    set_phase(Phase::shutting_down_read_ended);
    send_close_notify();
    transport_->close();
    if (transport_->state() == reactor::Connection::State::closing)
        arm_timer(options_.shutdown_timeout, EndKind::shutdown_timeout);
}


// Once, after the handshake: the caller has moved to a phase that says it
// was sent (write_ended, or shutting down), so what runs during the write
// (the high-water callback) sees it sent.
void Connection::send_close_notify() {
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
    if (!writable()) return;
    check_thread("tls::Connection::write_eof");
    if (phase_ == Phase::handshaking) {
        set_phase(Phase::handshaking_then_write_eof);  // done once the handshake is, after the pending plaintext
        return;
    }
    do_write_eof();
}

void Connection::do_write_eof() {
    if (phase_ == Phase::read_ended) {  // the peer said goodbye first: we are done
        set_phase(Phase::shutting_down_read_ended);
        send_close_notify();
        ending_ = End(EndKind::eof);
        transport_->close();
        return;
    }
    set_phase(Phase::write_ended);
    send_close_notify();
    transport_->write_eof();  // TCP's FIN after close_notify, once flushed
    // Reading goes on until the peer's close_notify: bounded.
    arm_timer(options_.shutdown_timeout, EndKind::shutdown_timeout);
}

void Connection::close() { close(EndKind::local); }

// close(kind): the End reports `kind` where close() reports local, so a
// graceful close of ours is ending_ local, whatever its kind (a failure or a
// timeout under it then wins as it would over close()'s), and close_kind_
// names it once the transport has closed (on_closed).
void Connection::close(EndKind kind) {
    check_thread("tls::Connection::close");
    if (!is_open() || phase_ == Phase::handshaking_then_close || phase_ == Phase::handshaken_then_close) return;
    close_kind_ = kind;
    if (state() == State::handshaking && !pending_plaintext_.empty()) {
        set_phase(Phase::handshaking_then_close);  // the plaintext goes out once the handshake is done, then close_notify
        return;
    }
    do_close();
}

void Connection::do_close() {
    // Not during a handshake (there is no session to close), nor twice.
    const bool send = handshake_done() && phase_ != Phase::write_ended;
    set_phase(shutting_down_from(phase_));
    if (!ending_) ending_ = End(EndKind::local);
    if (send) send_close_notify();
    transport_->close();
    if (transport_->state() == reactor::Connection::State::closing) {
        arm_timer(options_.shutdown_timeout, EndKind::shutdown_timeout);  // bounds the flush
    } else {
        timer_.cancel();
    }
}

void Connection::abort() {
    if (state() == State::closed) return;
    check_thread("tls::Connection::abort");
    if (!ending_) ending_ = End(EndKind::local);
    close_kind_ = EndKind::local;  // aborted: a reason given to close() before no longer holds
    set_phase(shutting_down_from(phase_));
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
    if (state() == State::closed) return;
    const bool transport_open = transport_->state() != reactor::Connection::State::closed;
    if (!ending_ && (transport_open || transport_closed_by_engine_)) ending_ = End(kind, {}, std::move(detail));
    set_phase(shutting_down_from(phase_));
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
    if (state() == State::closed) return;
    set_phase(shutting_down_from(phase_));
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
    // The timer holds us until it runs or is cancelled (on_closed cancels it).
    timer_ = transport_->scheduler().call_later(after, [self = shared_from_this(), kind] {
        if (self->state() == State::closed) return;
        if (kind == EndKind::handshake_timeout && self->handshake_done()) return;
        // A graceful end that could not finish becomes the timeout; a
        // failure keeps its own reason (the timeout only bounded its flush).
        if (!self->ending_ || self->ending_->clean() || kind == EndKind::handshake_timeout) self->ending_ = End(kind);
        self->set_phase(shutting_down_from(self->phase_));
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
    const ConnectionPtr keep = ConnectionPtr::adopt(this);  // our own count (attach): released as we return
    set_phase(closed_from(phase_));
    timer_.cancel();
    timer_ = Handle();  // never used again: we may outlive the Scheduler
    const bool peer_gone_after_close_notify = at_eof() && (r.kind == EndKind::reset || r.kind == EndKind::error);
    End reason = r;
    if (ending_ && (r.clean() || !ending_->clean() || peer_gone_after_close_notify)) {
        reason = std::move(*ending_);
        if (reason.kind == EndKind::local) reason.kind = close_kind_;  // close(kind)
    } else if (r.kind == EndKind::eof || peer_gone_after_close_notify) {
        // The transport closed by itself: our write side was shut (write_eof)
        // and TCP's EOF came, or the peer left after its close_notify while
        // the EOF callback's writes went on.
        reason = End(at_eof() ? EndKind::eof : EndKind::truncated);
    }
    ending_ = reason;  // end()
    unread_input_.clear();
    tell_end([&reason](reactor::Protocol& told) { told.on_closed(reason); });
}

// The loop ended before the transport could tell us how it closed: we tell
// ours the same, and let ourselves go (no user callback runs).
void Connection::on_abandoned() noexcept {
    const ConnectionPtr keep = ConnectionPtr::adopt(this);
    if (state() != State::closed) set_phase(closed_from(phase_));  // allowed from every phase: cannot throw
    ending_.reset();  // it did not end: end() stays null
    tell_end([](reactor::Protocol& told) { told.on_abandoned(); });
}

// The protocol is let go as it is told, the handshake waiter and callback
// dropped first (a wait on the handshake learns from end() that it will not
// come), and every callback after (whatever the told one set is never called).
template <class Tell>
void Connection::tell_end(Tell tell) {
    reactor::Protocol* told = std::exchange(protocol_, nullptr);
    struct DropAll {
        Connection& conn;
        ~DropAll() {  // (no waiter can come back: a closed connection refuses one)
            conn.on_handshake_.reset();
            if (conn.callbacks_) conn.callbacks_->clear();
        }
    } drop_all{*this};
    handshaking_.reset();
    on_handshake_.reset();
    if (told) tell(*told);
}

}  // namespace reactor::tls
