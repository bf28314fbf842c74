// SPDX-License-Identifier: MIT
// What every stream transport shares: how a connection's close reads to a
// stream (StreamTransportEnd), and the built-in plain transport's maker
// (plain_transport.hpp). Loop thread only.
#include "futures/stream_transport.hpp"
#include "plain_transport.hpp"

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
    // The TLS layer's own (futures/tls/stream.hpp turns them into a TlsError).
    case reactor::CloseKind::handshake_timeout:
    case reactor::CloseKind::shutdown_timeout: return {ETIMEDOUT, nullptr};
    case reactor::CloseKind::handshake_failed:
    case reactor::CloseKind::tls_error: return {EPROTO, nullptr};
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

std::unique_ptr<StreamTransport> plain_transport(reactor::ConnectionPtr conn) {
    if (!conn) throw std::invalid_argument("plain_transport: null connection");
    return std::make_unique<detail::PlainTransport>(std::move(conn));
}

}  // namespace futures
