// SPDX-License-Identifier: MIT
// futures/stream_errors.hpp: how a Stream's reads, drains and
// open_connection fail: the transport's own end (a futures::StreamError
// carrying its reactor::End), and what a read meets in the bytes. Part of
// futures/stream.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

#include <reactor/export.hpp>
#include <reactor/net/end.hpp>

#include "futures/errors.hpp"

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

// The input ended (the peer's EOF) inside what a read waits for: before
// read_exactly() got its n bytes, before read_until() found its delimiter,
// inside a line for read_line(), inside a frame for read_frame(). `partial`
// holds the bytes received of it, now consumed (so the stream is at its end):
// read_until's last line without its delimiter, or "" when nothing came after
// the last one; read_frame's prefix and payload so far. `expected` is how many
// bytes would have completed it: read_exactly's n, read_frame's prefix plus
// payload (the prefix alone while the prefix is incomplete); none for
// read_until and read_line.
class REACTOR_API IncompleteReadError : public std::runtime_error {
public:
    IncompleteReadError(std::string partial, std::optional<std::size_t> expected);
    std::string partial;
    std::optional<std::size_t> expected;
};

// read_until() would need more than the stream's limit. The data stays in the
// buffer (read it with read() or read_exactly()); `consumed` is how much a
// successful read_until would have had to take.
class REACTOR_API LimitOverrunError : public std::runtime_error {
public:
    LimitOverrunError(const std::string& what, std::size_t consumed);
    std::size_t consumed;
};

// read_frame() read a length prefix above FrameFormat::max_size. Nothing is
// consumed (the prefix stays in the buffer), and the payload is not read: the
// stream is out of step with its peer, close it. Caught as a
// LimitOverrunError too; `consumed` is the frame's whole size.
class REACTOR_API FrameTooLargeError : public LimitOverrunError {
public:
    FrameTooLargeError(std::size_t size, std::size_t max_size, std::size_t prefix_bytes);
    std::size_t size;      // the payload size the prefix announced
    std::size_t max_size;  // FrameFormat::max_size
};

// open_connection's connect_timeout passed. A TimeoutError, so code that
// catches that catches this too; `step` and what() say what was under way:
//   "open_connection to localhost:8080: timed out after 500 ms connecting to 127.0.0.1:8080"
class REACTOR_API ConnectTimeoutError : public TimeoutError {
public:
    enum class Step : std::uint8_t { lookup, connect, tls_handshake };
    ConnectTimeoutError(Step step, const std::string& what) : TimeoutError(what), step(step) {}
    Step step;
};

}  // namespace futures
