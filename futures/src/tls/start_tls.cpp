// SPDX-License-Identifier: MIT
// The TLS stream transport: a reactor::tls::Connection whose callbacks call
// the stream (futures/stream_transport.hpp), and start_tls, which puts one in
// place of a stream's plain transport. The transport owns the promise of the
// handshake's future; the TLS connection's close callback refers to it
// weakly, so a stream dropped mid-handshake breaks it (cancelled, naming the
// user's line). Loop thread only.
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

class TlsTransport final : public StreamTransport {
public:
    TlsTransport(tls::ConnectionPtr conn, std::shared_ptr<Promise<void>> handshake)
        : conn_(std::move(conn)), handshake_(std::move(handshake)) {}

    // As the plain transport: the callbacks hold plain pointers, cleared by
    // detach() before the receiver or this transport goes (the TLS
    // connection, too, takes its close callback out of the slot when it
    // runs). The handshake's promise may outlive us: held weakly.
    void attach(Receiver* receiver) override {
        conn_->set_data_callback([receiver](tls::Connection&, std::string_view d) { receiver->on_data(d); });
        conn_->set_eof_callback([receiver](tls::Connection&) { receiver->on_eof(); });
        conn_->set_low_water_callback([receiver](tls::Connection&) { receiver->on_resume_writing(); });
        TlsTransport* self = this;
        conn_->set_handshake_callback([self](tls::Connection&) {
            if (self->handshake_ && self->handshake_->is_pending()) self->handshake_->set_value();
        });
        conn_->set_close_callback([receiver, handshake = std::weak_ptr<Promise<void>>(handshake_)](
                                      tls::Connection&, const reactor::End& end) {
            if (auto h = handshake.lock(); h && h->is_pending()) fail_handshake(*h, end);
            receiver->on_closed(end);
        });
    }
    void detach() noexcept override {
        conn_->set_data_callback(nullptr);
        conn_->set_eof_callback(nullptr);
        conn_->set_low_water_callback(nullptr);
        conn_->set_handshake_callback(nullptr);
        conn_->set_close_callback(nullptr);
    }
    void abandon() noexcept override {
        handshake_.reset();  // breaks it if still pending
    }

    bool write(std::string_view data) override { return conn_->write(data); }
    void write_eof() override { conn_->write_eof(); }
    void close() override { conn_->close(); }
    void abort() override { conn_->abort(); }
    bool is_open() const override { return conn_->is_open(); }
    bool at_eof() const override { return conn_->at_eof(); }
    bool above_high_water() const override { return conn_->above_high_water(); }
    void pause_reading() override { conn_->pause_reading(); }
    void resume_reading() override { conn_->resume_reading(); }
    reactor::Connection& connection() const override { return conn_->transport(); }
    tls::Connection* tls() const noexcept override { return conn_.get(); }

private:
    // The connection closed before the handshake was done: Scheduler::close()
    // or our own close()/abort() cancel it; anything else fails it.
    static void fail_handshake(Promise<void>& handshake, const reactor::End& end) {
        if (end.kind == reactor::EndKind::scheduler_closed || end.kind == reactor::EndKind::local) {
            handshake.cancel();
        } else {
            handshake.set_exception(StreamError(end));
        }
    }

    tls::ConnectionPtr conn_;
    std::shared_ptr<Promise<void>> handshake_;  // the only strong reference
};

}  // namespace

Future<void> start_tls(Stream stream, reactor::tls::ContextPtr context, std::string server_name,
                       reactor::tls::Options options, std::source_location where) {
    if (!stream.valid()) throw InvalidStateError("start_tls: empty Stream");
    if (stream.tls()) throw InvalidStateError("start_tls: the stream is already TLS");
    if (!context) throw std::invalid_argument("start_tls: no context");
    auto handshake = std::make_shared<Promise<void>>(stream.scheduler(), where, "TLS handshake");
    Future<void> done = handshake->get_future();
    std::weak_ptr<tls::Connection> started;
    stream.replace_transport([&](StreamTransport& plain) -> std::unique_ptr<StreamTransport> {
        const reactor::ConnectionPtr conn = plain.connection().shared_from_this();
        tls::ConnectionPtr t = context->role() == tls::Context::Role::server
                                   ? tls::Connection::start_server(conn, context, options)
                                   : tls::Connection::start_client(conn, context, std::move(server_name), options);
        started = t;
        return std::make_unique<TlsTransport>(std::move(t), std::move(handshake));
    });
    // Cancelling the future aborts the connection. Weak: the connection
    // (through the transport) holds the future's state.
    done.add_done_callback(
        [started](Future<void>& f) {
            if (!f.cancelled()) return;
            if (auto t = started.lock(); t && t->is_open()) t->abort();
        },
        where);
    return done;
}

}  // namespace futures
