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

#include <reactor/export.hpp>
#include <reactor/net/connection.hpp>

namespace reactor::tls {
class Connection;
}

namespace futures {

// How a transport ended, as its stream sees it: what a pending read or drain
// (and every later one) fails with.
struct REACTOR_API StreamTransportEnd {
    // 0: an orderly end (a local close, a peer's clean close); ECANCELED:
    // Scheduler::close() ended it (pending reads and drains are cancelled,
    // not failed); any other errno: a failure (ETIMEDOUT for a deadline).
    int error = 0;
    // What reads and drains fail with when `error` is a failure; null: a
    // std::system_error made from `error` ("stream: connection reset").
    std::exception_ptr exception;

    // The plain connection's reason: reset and error give their errno, the
    // read/write/idle deadlines ETIMEDOUT, Scheduler::close() ECANCELED, a
    // local close or the peer's EOF 0.
    static StreamTransportEnd from(const reactor::CloseReason& reason) noexcept;
};

class REACTOR_API StreamTransport {
public:
    // The stream, as the transport sees it. Calls arrive on the loop thread,
    // one at a time, from the connection's callbacks. It is also a layer
    // over the connection (reactor::Connection::LayerEvents): a transport
    // that passes the connection's EOF and low-water events on unchanged
    // (the plain one) hands the receiver itself to set_layer_events, rather
    // than an object of its own that every stream would pay for.
    class Receiver : public reactor::Connection::LayerEvents {
    public:
        virtual void on_data(std::string_view bytes) = 0;
        // The peer's orderly end of its data (a FIN; TLS: its close_notify).
        // The transport stays open for writing.
        virtual void on_eof() = 0;
        // The output fell to the low-water mark.
        virtual void on_low_water() = 0;
        // Once, when the connection has closed.
        virtual void on_closed(const StreamTransportEnd& end) = 0;
        // The loop ended before on_closed could come: it never will. Only
        // from a transport that reports_abandonment().
        virtual void on_abandoned() noexcept = 0;

        // LayerEvents: the connection's EOF, low water and the loop's end
        // before its close, as on_eof(), on_low_water() and on_abandoned().
        void on_eof(reactor::Connection&) final { on_eof(); }
        void on_low_water(reactor::Connection&) final { on_low_water(); }
        void on_abandoned(reactor::Connection&) noexcept final { on_abandoned(); }

    protected:
        ~Receiver() = default;
    };

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
    // does (its connection says so: reactor::Connection::LayerEvents); for
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
