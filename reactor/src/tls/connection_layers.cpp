// SPDX-License-Identifier: MIT
// reactor::tls::Connection between its layers: the protocol it tells above
// (set_protocol, or its callbacks: a detail::CallbackProtocol made when one
// is first set) and what the plain connection below tells it as its
// protocol (ciphertext, its water marks, its drain). The state machine is in
// connection.cpp, the ending in connection_ending.cpp.
#include "reactor/tls/connection.hpp"

#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace reactor::tls {

void Connection::set_protocol(reactor::Protocol* protocol) {
    check_thread("tls::Connection::set_protocol");
    if (state() == State::closed) return;  // its end was told, nothing more is
    protocol_ = protocol;
    transport_->set_protocol(this);  // wants_drained() may have changed
}

// The waiter lives in the handshake's side block (with a HandshakeLimit's
// token): an idle connection carries a null pointer for both.
void Connection::set_handshake_waiter(EventFunction waiter) {
    check_thread("tls::Connection::set_handshake_waiter");
    if (handshake_done()) throw std::logic_error("tls::Connection::set_handshake_waiter: the handshake is done");
    if (state() == State::closed) return;  // its end was told: dropped now, it sees end() as it would have then
    if (!handshaking_) handshaking_ = std::make_unique<Handshaking>();
    handshaking_->waiter = std::move(waiter);
}

void Connection::set_data_callback(DataFunction cb) {
    check_thread("tls::Connection::set_data_callback");
    Callbacks::set_data(*this, callbacks_, std::move(cb));
}
void Connection::set_close_callback(CloseFunction cb) {
    check_thread("tls::Connection::set_close_callback");
    Callbacks::set_close(*this, callbacks_, std::move(cb));
}
void Connection::set_eof_callback(EventFunction cb) {
    check_thread("tls::Connection::set_eof_callback");
    Callbacks::set_rare(*this, callbacks_, &Callbacks::Rare::eof, std::move(cb));
}
void Connection::set_drain_callback(EventFunction cb) {
    check_thread("tls::Connection::set_drain_callback");
    Callbacks::set_rare(*this, callbacks_, &Callbacks::Rare::drain, std::move(cb));
    if (state() != State::closed) transport_->set_protocol(this);  // wants_drained() may have changed
}
void Connection::set_high_water_callback(EventFunction cb) {
    check_thread("tls::Connection::set_high_water_callback");
    Callbacks::set_rare(*this, callbacks_, &Callbacks::Rare::high_water, std::move(cb));
}
void Connection::set_low_water_callback(EventFunction cb) {
    check_thread("tls::Connection::set_low_water_callback");
    Callbacks::set_rare(*this, callbacks_, &Callbacks::Rare::low_water, std::move(cb));
}

// What the plain connection tells us: ciphertext, its EOF (the engine
// decides what it means), its water marks and its drain (ours count the
// plaintext waiting for the handshake too).
void Connection::on_data(std::string_view ciphertext) {
    if (state() == State::closed || at_eof()) return;  // nothing may follow close_notify
    feed(ciphertext);
}

// The transport's drain costs it a loop turn after each write: asked for
// only while it may tell something. Above our high mark, a fall to the low
// one the transport's own marks do not show (plaintext that waited for the
// handshake counts too); or the protocol above wants its drain. Each time the
// answer may change (a mark crossed, a protocol or drain callback set), we
// set ourselves again as the transport's protocol: it reads the answer then.
bool Connection::wants_drained() const noexcept { return above_high_ || (protocol_ && protocol_->wants_drained()); }

void Connection::on_pause_writing() {
    high_water_deferred_ = true;
    if (in_engine_ == 0) deliver_high_water();
}

void Connection::on_drained() {
    check_low_water();
    if (state() == State::open && pending_plaintext_.empty() && protocol_ &&
        protocol_->wants_drained())
        protocol_->on_drained();
}

}  // namespace reactor::tls
