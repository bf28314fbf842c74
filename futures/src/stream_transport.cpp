// SPDX-License-Identifier: MIT
// The plain stream transport: a reactor::Connection, whose callbacks call the
// stream (futures/stream_transport.hpp). Loop thread only.
#include "futures/stream_transport.hpp"

#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace futures {

StreamTransport::~StreamTransport() = default;

namespace {

// A deadline's error says which deadline it was: a std::system_error
// ETIMEDOUT whose what() is, for instance, "stream: read_timeout passed
// (nothing received for that long): Connection timed out".
StreamTransportEnd deadline_end(const char* what) noexcept {
    try {
        return {ETIMEDOUT, std::make_exception_ptr(std::system_error(ETIMEDOUT, std::generic_category(), what))};
    } catch (...) {  // out of memory: the plain "stream: connection timed out"
        return {ETIMEDOUT, nullptr};
    }
}

}  // namespace

// A deadline of StreamOptions::connection is ETIMEDOUT, so a read that waited
// too long fails with "timed out" and which deadline; Scheduler::close() is
// ECANCELED.
StreamTransportEnd StreamTransportEnd::from(const reactor::CloseReason& reason) noexcept {
    switch (reason.kind) {
    case reactor::CloseKind::reset:
    case reactor::CloseKind::error: return {reason.error.value(), nullptr};
    case reactor::CloseKind::read_timeout: return deadline_end("stream: read_timeout passed (nothing received for that long)");
    case reactor::CloseKind::write_timeout:
        return deadline_end("stream: write_timeout passed (buffered output made no progress for that long)");
    case reactor::CloseKind::idle_timeout:
        return deadline_end("stream: idle_timeout passed (nothing received or sent for that long)");
    case reactor::CloseKind::scheduler_closed: return {ECANCELED, nullptr};
    case reactor::CloseKind::local:
    case reactor::CloseKind::eof:
    // Only the callback layer's readers close with these; a stream reads its
    // own frames (Stream::read_line, read_frame) and never sees them.
    case reactor::CloseKind::line_too_long:
    case reactor::CloseKind::frame_too_large:
    case reactor::CloseKind::truncated: return {};
    }
    return {};
}

namespace {

class PlainTransport final : public StreamTransport {
public:
    explicit PlainTransport(reactor::ConnectionPtr conn) : conn_(std::move(conn)) {}

    // The callbacks and the layer events hold the receiver's plain pointer:
    // detach() clears them before the receiver goes, and the connection's
    // queued close takes its callback out of the slot when it runs. The EOF
    // and low-water events go to the receiver as the connection's layer
    // events, not through its EOF and low-water callbacks, which would make
    // it allocate a block for them. As with an EOF callback, the connection
    // stays open for writing after the peer's EOF, as asyncio streams do;
    // close() ends it.
    void attach(Receiver* receiver) override {
        conn_->set_data_callback([receiver](reactor::Connection&, std::string_view d) { receiver->on_data(d); });
        conn_->set_layer_events(receiver);
        conn_->set_close_callback([receiver](reactor::Connection&, const reactor::CloseReason& r) {
            receiver->on_closed(StreamTransportEnd::from(r));
        });
    }
    void detach() noexcept override {
        conn_->set_data_callback(nullptr);
        conn_->set_layer_events(nullptr);
        conn_->set_close_callback(nullptr);
    }

    // Its connection tells the receiver (a layer of it) if the loop ends
    // first, unless it dropped its callbacks already (its close was
    // reported before this stream was made over it).
    bool reports_abandonment() const noexcept override { return !conn_->callbacks_dropped(); }

    bool write(std::string_view data) override { return conn_->write(data); }
    void write_eof() override { conn_->write_eof(); }
    void close() override { conn_->close(); }
    void abort() override { conn_->abort(); }
    bool is_open() const override { return conn_->is_open(); }
    bool at_eof() const override { return conn_->at_eof(); }
    bool above_high_water() const override { return conn_->above_high_water(); }
    void pause_reading() override { conn_->pause_reading(); }
    void resume_reading() override { conn_->resume_reading(); }
    reactor::Connection& connection() const override { return *conn_; }

private:
    reactor::ConnectionPtr conn_;
};

}  // namespace

std::unique_ptr<StreamTransport> plain_transport(reactor::ConnectionPtr conn) {
    if (!conn) throw std::invalid_argument("plain_transport: null connection");
    return std::make_unique<PlainTransport>(std::move(conn));
}

}  // namespace futures
