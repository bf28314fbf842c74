// SPDX-License-Identifier: MIT
// reactor::Transport and reactor::Protocol: the one contract between the
// layers of a connection (asyncio's transports and protocols, in C++).
//
//   reactor::Connection            the socket: a Transport
//     └─ its Protocol:             your own class, the callback adapter
//                                  (Connection::set_data_callback & co.),
//                                  a futures::Stream, or a TLS connection:
//        reactor::tls::Connection  a Protocol to the socket below, a
//          └─ its Protocol          Transport to the protocol above it
//
// A transport is what a layer offers the one above it (write, close,
// pause_reading...); a protocol is what a layer is told by the one below
// (on_data, on_eof, on_closed...). A transport holds one Protocol*, set with
// set_protocol: it does not own it, and tells it everything from the loop
// thread, never synchronously from one of its own members, except write(),
// which may call on_pause_writing before it returns (as asyncio's
// pause_writing()). The protocol must stay valid until it is replaced or
// cleared (set_protocol(nullptr)), or until on_closed or on_abandoned has
// been called: the transport then lets go of it. docs/networking.md draws
// the stack and says who holds each object.
#pragma once

#include <cstddef>
#include <string_view>

#include "reactor/export.hpp"
#include "reactor/net/end.hpp"
#include "reactor/ref.hpp"

namespace reactor {

class Connection;
namespace tls {
class Connection;
}

class Protocol {
public:
    // Bytes received, valid only during the call: copy what you keep.
    virtual void on_data(std::string_view data) = 0;
    // The peer ended its data: a FIN, or under TLS its close_notify. Return
    // true to stay open for writing (finish with write_eof() or close()),
    // false to let the transport close itself gracefully (flushing what is
    // buffered; the end is eof).
    virtual bool on_eof() { return false; }
    // buffered() grew above the high-water mark (from write(): the one call
    // made from inside a member), and later fell to the low-water mark
    // (from the loop). Each crossing once; pause and resume alternate.
    virtual void on_pause_writing() {}
    virtual void on_resume_writing() {}
    // The output buffer became empty: everything written so far was handed
    // on, told on a later iteration than the write. Only to a protocol that
    // wants it: a transport reads wants_drained() as the protocol is set (a
    // drain costs a loop turn per write) and keeps that answer; a protocol
    // whose answer changes sets itself again (tls::Connection does).
    virtual bool wants_drained() const noexcept { return false; }
    virtual void on_drained() {}
    // Once, on a later iteration than the event that closed the transport:
    // how it ended. The transport lets go of the protocol as it is called.
    virtual void on_closed(const End& end) = 0;
    // The loop ended (~Scheduler without close(), or a close callback
    // destroyed unrun) before on_closed could be called: it never will be.
    // Break what waits on the transport (no user callback should run here);
    // the transport lets go of the protocol as it is called.
    virtual void on_abandoned() noexcept {}

protected:
    ~Protocol() = default;
};

// Owned through reactor::Ref handles (reactor/ref.hpp): an open transport
// holds one count itself, released as its close is told.
class REACTOR_API Transport : public RefCounted {
public:
    // The protocol told of what happens from now on, or none (nullptr): then
    // received data is discarded and the peer's EOF closes the transport.
    // Setting one after the transport's close was reported does nothing:
    // nothing will be told any more.
    virtual void set_protocol(Protocol* protocol) = 0;

    // Sends or buffers `data`, in order; false, dropping it, once closing or
    // closed or after write_eof(), or if the transport failed (it then
    // closes: on_closed says why).
    virtual bool write(std::string_view data) = 0;
    // Half-close once the buffered output is out; reading goes on.
    virtual void write_eof() = 0;
    // Graceful: stop reading, flush what is buffered, then close.
    virtual void close() = 0;
    // The same graceful close, reporting `kind` as the End's kind (when the
    // flush succeeds, as close()'s local): for a layer that ends the
    // transport for a reason of its own (LineReader: line_too_long). Both
    // connections override it; a transport of your own that does not closes
    // as close() does.
    virtual void close(EndKind /*kind*/) { close(); }
    // Immediate: what is buffered is dropped; the peer sees a reset.
    virtual void abort() = 0;
    virtual void pause_reading() = 0;
    virtual void resume_reading() = 0;

    // What is written but not yet handed to the kernel (under TLS: with the
    // plaintext waiting for the handshake), and the marks it is held to.
    virtual std::size_t buffered() const noexcept = 0;
    virtual void set_water_marks(std::size_t high, std::size_t low) = 0;
    virtual bool above_high_water() const noexcept = 0;
    // Open for use: not closing, not closed.
    virtual bool is_open() const noexcept = 0;
    // The peer's orderly end of its data arrived.
    virtual bool at_eof() const noexcept = 0;
    // The socket at the bottom of the stack (the plain connection itself):
    // its addresses, deadlines, fd and loop.
    virtual Connection& socket() const noexcept = 0;
    // The TLS layer this transport is (reactor/tls/connection.hpp), or null:
    // what futures::Stream::tls() answers, without a link to OpenSSL.
    virtual tls::Connection* tls() noexcept { return nullptr; }

protected:
    ~Transport() override = default;
};

using TransportPtr = Ref<Transport>;

}  // namespace reactor
