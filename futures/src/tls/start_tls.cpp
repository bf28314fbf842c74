// SPDX-License-Identifier: MIT
// start_tls: a TLS connection over a stream's plain connection, put in its
// place as the stream's transport (Stream::replace_transport), and a future
// of its handshake. The TLS connection's handshake waiter (not its handshake
// callback, which stays the user's) holds the only reference to that
// future's promise: it completes it, and if it is dropped unrun (the
// connection closed first, or the loop ended) it fails it with how the
// connection ended, or breaks it (cancelled, naming the user's line).
// Loop thread only.
#include <cerrno>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "futures/errors.hpp"
#include "futures/promise.hpp"
#include "futures/tls/stream.hpp"

namespace futures {
namespace {

namespace tls = reactor::tls;

// The handshake waiter. Moved from, it holds nothing.
class HandshakeWait {
public:
    HandshakeWait(Promise<void> promise, tls::Connection& conn) : promise_(std::move(promise)), conn_(&conn) {}
    HandshakeWait(HandshakeWait&&) noexcept = default;
    HandshakeWait& operator=(HandshakeWait&&) = delete;
    ~HandshakeWait() {
        if (!promise_.is_pending()) return;
        // Dropped unrun: the connection ended before its handshake was done.
        // Scheduler::close() or our own close()/abort() cancel the wait;
        // anything else fails it. No end: the loop was abandoned, and the
        // promise breaks as it goes.
        if (const reactor::End* end = conn_->end()) {
            if (end->kind == reactor::EndKind::scheduler_closed || end->kind == reactor::EndKind::local) {
                promise_.cancel();
            } else {
                try {
                    promise_.set_exception(StreamError(*end));
                } catch (...) {  // no memory for the error (a destructor must not throw): cancelled instead
                    promise_.cancel();
                }
            }
        }
    }

    void operator()(tls::Connection&) {
        if (promise_.is_pending()) promise_.set_value();
    }

private:
    Promise<void> promise_;
    tls::Connection* conn_;
};

}  // namespace

Future<void> start_tls(Stream stream, reactor::tls::ContextPtr context, std::string server_name,
                       reactor::tls::Options options, std::source_location where) {
    if (!stream.valid()) throw InvalidStateError("start_tls: empty Stream");
    if (stream.tls()) throw InvalidStateError("start_tls: the stream is already TLS");
    if (!context) throw std::invalid_argument("start_tls: no context");
    Promise<void> handshake(stream.scheduler(), where, "TLS handshake");
    Future<void> done = handshake.get_future();
    tls::ConnectionPtr started;
    stream.replace_transport([&](reactor::Transport& plain) -> reactor::TransportPtr {
        const reactor::ConnectionPtr conn = plain.socket().shared_from_this();
        tls::ConnectionPtr t = context->role() == tls::Context::Role::server
                                   ? tls::Connection::start_server(conn, context, options)
                                   : tls::Connection::start_client(conn, context, std::move(server_name), options);
        t->set_handshake_waiter(HandshakeWait(std::move(handshake), *t));
        started = t;
        return t;
    });
    // Cancelling the future aborts the connection. The connection (its
    // handshake waiter) holds the future's state, which holds it here: a
    // cycle the handshake's end breaks (the waiter runs or is dropped).
    done.add_done_callback(
        [started = std::move(started)](Future<void>& f) {
            if (f.cancelled() && started->is_open()) started->abort();
        },
        where);
    return done;
}

}  // namespace futures
