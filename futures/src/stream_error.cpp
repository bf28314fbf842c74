// SPDX-License-Identifier: MIT
// The error a transport's end makes for its stream's reads and drains
// (futures/stream_errors.hpp).
#include "futures/stream_errors.hpp"

#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <string>
#include <utility>

namespace futures {

namespace {

// The code and text of a failure: an errno, a deadline, or "stream: TLS "
// and the TLS layer's reason. eof only reaches here from a handshake the
// peer left before it was done.
std::system_error failure_of(const reactor::End& end) {
    const auto failure = [](int code, const std::string& what) {
        return std::system_error(code, std::generic_category(), what);
    };
    using reactor::EndKind;
    switch (end.kind) {
    case EndKind::reset: return failure(end.error ? end.error.value() : ECONNRESET, "stream: connection reset");
    case EndKind::read_timeout: return failure(ETIMEDOUT, "stream: read_timeout passed (nothing received for that long)");
    case EndKind::write_timeout:
        return failure(ETIMEDOUT, "stream: write_timeout passed (buffered output made no progress for that long)");
    case EndKind::idle_timeout: return failure(ETIMEDOUT, "stream: idle_timeout passed (nothing received or sent for that long)");
    case EndKind::scheduler_closed: return failure(ECANCELED, "stream: the loop closed");
    case EndKind::truncated: return failure(EPROTO, "stream: TLS truncated: the peer's EOF came without its close_notify");
    case EndKind::handshake_timeout: return failure(ETIMEDOUT, "stream: TLS handshake timed out");
    case EndKind::shutdown_timeout: return failure(ETIMEDOUT, "stream: TLS shutdown timed out");
    case EndKind::handshake_failed:
    case EndKind::tls_error: return failure(EPROTO, "stream: TLS " + end.to_string());
    case EndKind::eof: return failure(ECONNRESET, "stream: the peer closed the connection");
    default:  // error, and what only the callback layer's readers close with
        if (end.error == std::errc::timed_out) return failure(ETIMEDOUT, "stream: connection timed out");
        return failure(end.error ? end.error.value() : EIO, "stream: connection failed");
    }
}

}  // namespace

StreamError::StreamError(reactor::End e)
    : std::system_error(failure_of(e)), end(std::move(e)) {}

}  // namespace futures
