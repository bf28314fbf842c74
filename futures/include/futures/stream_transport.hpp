// SPDX-License-Identifier: MIT
// futures/stream_transport.hpp: what a Stream reads from and writes to. A
// Stream is made over a reactor::Connection (the plain transport, built in:
// Stream::from) or over any StreamTransport; reactor::futures_tls
// (futures/tls/stream.hpp) makes one over a reactor::tls::Connection, so the
// streams library itself knows nothing of TLS and links no OpenSSL (asyncio's
// streams over any transport; its SSL transport is one of them). Implementing
// one is for layers like that: a program uses Stream.
//
// The transport owns the link to its connection; the stream owns the
// transport. The transport calls the stream's Receiver from its connection's
// callbacks, never synchronously from a member the stream called (except as
// reactor::Connection::write may), on the loop thread only.
#pragma once

#include <exception>
#include <memory>
#include <string_view>
#include <system_error>

#include <reactor/export.hpp>
#include <reactor/net/connection.hpp>

namespace reactor::tls {
class Connection;
}

namespace futures {

// What a stream's pending read or drain (and every later one) fails with
// once its transport ended for any reason but an orderly one (End::clean())
// or the loop's end (Scheduler::close() cancels them instead). A
// std::system_error, so code that catches a connection's error still does:
// its code is the End's errno for reset and error (ECONNRESET, EPIPE...),
// ETIMEDOUT for a deadline, EPROTO for a TLS failure; what() says which
// ("stream: connection reset: Connection reset by peer", "stream: read_timeout
// passed (nothing received for that long): Connection timed out", "stream: TLS
// handshake failed: error:0A000086:SSL routines::certificate verify failed:
// ...: Protocol error"). `end` is the End itself, kind and OpenSSL's text.
class REACTOR_API StreamError : public std::system_error {
public:
    explicit StreamError(reactor::End end);
    reactor::End end;
};

class REACTOR_API StreamTransport {
public:
    // The stream, as the transport sees it: a reactor::Protocol (its
    // on_eof() keeps the transport open for writing). Calls arrive on the
    // loop thread, one at a time.
    using Receiver = reactor::Protocol;

    virtual ~StreamTransport();

    // Starts delivering to `receiver`, which stays valid until detach(): the
    // stream detaches before it goes. A connection looks its close callback
    // up when the queued close runs, not when it queues it, so a close
    // reported after detach() reaches nobody. Once attached, the connection
    // stays open for writing after the peer's EOF.
    virtual void attach(StreamTransport::Receiver* receiver) = 0;
    // Stops delivering anything; the connection is left as it is (open or not).
    virtual void detach() noexcept = 0;
    // The loop ends (~Scheduler, or the last phase of Scheduler::close())
    // before the connection's close was reported: break any promise the
    // transport holds (its waiters may hold the stream: a cycle otherwise).
    virtual void abandon() noexcept {}
    // Whether, once attached, the transport tells its receiver on_abandoned()
    // when the loop ends before the close could be reported. The plain one
    // does (its connection tells its protocol: reactor::Protocol); for
    // any other (TLS, a transport of your own) the stream watches the loop's
    // end itself, at the cost of a block, so returning false is always safe.
    virtual bool reports_abandonment() const noexcept { return false; }

    // As reactor::Connection's members of the same names.
    virtual bool write(std::string_view data) = 0;
    virtual void write_eof() = 0;
    virtual void close() = 0;
    virtual void abort() = 0;
    virtual bool is_open() const = 0;
    virtual bool at_eof() const = 0;  // the peer's orderly end arrived
    virtual bool above_high_water() const = 0;
    virtual void pause_reading() = 0;
    virtual void resume_reading() = 0;

    // The socket (or pipe) underneath: its addresses and deadlines. Under a
    // layer such as TLS, its callbacks and writes are the layer's.
    virtual reactor::Connection& connection() const = 0;
    // The TLS connection this transport is, or null (the plain one).
    virtual reactor::tls::Connection* tls() const noexcept { return nullptr; }
};

// The built-in transport: a plain reactor::Connection.
REACTOR_API std::unique_ptr<StreamTransport> plain_transport(reactor::ConnectionPtr conn);

}  // namespace futures
