// SPDX-License-Identifier: MIT
// Internal: the plain stream transport, a reactor::Connection whose callbacks
// call the stream (futures/stream_transport.hpp). A stream over a plain
// connection keeps one in its own block (stream_core.hpp), so it takes no
// block of its own; plain_transport() makes one on the heap for
// Stream::from(transport). Loop thread only.
#pragma once

#include <string_view>
#include <utility>

#include <reactor/net/connection.hpp>

#include "futures/stream_transport.hpp"

namespace futures::detail {

class PlainTransport final : public StreamTransport {
public:
    explicit PlainTransport(reactor::ConnectionPtr conn) : conn_(std::move(conn)) {}

    // The receiver is the connection's protocol: detach() lets it go before
    // the receiver goes. As with an EOF callback, the connection stays open
    // for writing after the peer's EOF, as asyncio streams do; close() ends it.
    void attach(Receiver* receiver) override { conn_->set_protocol(receiver); }
    void detach() noexcept override { conn_->set_protocol(nullptr); }

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

}  // namespace futures::detail
