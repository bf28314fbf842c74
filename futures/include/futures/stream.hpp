// SPDX-License-Identifier: MIT
// futures/stream.hpp: asyncio-style streams over reactor::Connection (TCP or
// Unix sockets, pipes, terminals, stdin/stdout): reads return futures, writes
// are buffered, drain() applies backpressure.
//
// A Stream is a handle (copying shares it) to one connection and its read
// buffer. The connection stays open while a handle exists or until close();
// when the last handle goes, an open connection is closed gracefully. A
// read, drain() or wait_closed() still waiting then keeps the stream until
// it completes as that close decides (the read with the end of the input,
// drain() once the output is out, wait_closed() once closed), so
// `stream.close(); return stream.wait_closed();` at the end of a chain
// completes, and so does a chain that drops its handle while it waits. One
// read may be pending at a time. Futures
// complete through the loop like all futures (never inside the call that made
// them). Loop thread only.
//
// The line. Every call that returns a future (read, read_exactly,
// read_until, drain, wait_closed, open_connection, start_server by host,
// StreamServer::wait_closed and serve_until) takes a trailing
// std::source_location, the caller's line by default, and the future
// carries it as its origin(): futures::all_tasks(), Scheduler::live() and
// error reports name the line of your call, never one in the library. The
// stream completes them through a futures::Promise (futures/promise.hpp):
// if its Scheduler is destroyed while one is pending, it is cancelled with a
// futures::BrokenPromise naming that line.
//
// TLS. A Stream works unchanged over TLS: reactor::futures_tls
// (futures/tls/stream.hpp) gives open_connection and start_server with a
// reactor::tls::Context, and start_tls to upgrade an open stream (STARTTLS);
// tls() below reaches the TLS connection's facts. This library itself knows
// nothing of TLS: a stream is the reactor::Protocol of any reactor::Transport
// (reactor/net/transport.hpp): a plain connection, or a TLS one over it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <reactor/export.hpp>
#include <reactor/net/address.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/frame.hpp>

#include "futures/errors.hpp"
#include "futures/future.hpp"
#include "futures/stream_errors.hpp"
#include "futures/stream_options.hpp"
#include <reactor/net/connection.hpp>
#include <reactor/net/transport.hpp>

namespace futures {

namespace detail {
class StreamCore;
class ServerCore;
class ServerScopeCore;
}  // namespace detail

class Lines;

class REACTOR_API Stream {
public:
    // An empty handle; every member but valid() throws InvalidStateError.
    Stream() noexcept;
    // Copies share the stream; the last handle closes it (gracefully).
    // These are defined where the stream's state is a complete type.
    Stream(const Stream& other) noexcept;
    Stream(Stream&& other) noexcept;
    Stream& operator=(const Stream& other) noexcept;
    Stream& operator=(Stream&& other) noexcept;
    ~Stream();
    // Over an open transport: a plain connection (reactor::ConnectionPtr
    // converts), a TLS one (futures_tls makes its streams so), or one of
    // your own. The stream becomes its protocol (reactor/net/transport.hpp):
    // it takes over from its callbacks. The deadlines of options.connection
    // are set on its socket (transport->socket()). A transport no longer
    // open makes a closed stream: reads see the end of input.
    static Stream from(reactor::TransportPtr transport, StreamOptions options = {});
    // Takes ownership of `fd` (a socket, a pipe end or a terminal), as
    // reactor::Connection::adopt does, with the same errors: a regular file or
    // a directory throws std::invalid_argument naming its type. A write-only
    // pipe end reads as at EOF at once; a read-only one refuses writes (write()
    // returns false). asyncio's connect_read_pipe/connect_write_pipe.
    static Stream adopt(reactor::Scheduler& sched, int fd, StreamOptions options = {});

    bool valid() const noexcept { return static_cast<bool>(core_); }

    // ---- reading (one pending read at a time, else InvalidStateError) ----
    // Up to `max` bytes as soon as any are there; "" at EOF.
    [[nodiscard]] Future<std::string> read(std::size_t max = 64 * 1024,
                                           std::source_location where = std::source_location::current());
    // Exactly n bytes; IncompleteReadError if EOF comes first.
    [[nodiscard]] Future<std::string> read_exactly(std::size_t n,
                                                   std::source_location where = std::source_location::current());
    // Up to and including `delimiter` (non-empty); LimitOverrunError past the
    // limit. The end of input fails it with IncompleteReadError (never a short
    // or empty result): its `partial` holds the bytes after the last delimiter
    // (a last line without its '\n', or "" when there were none), consumed;
    // `expected` is empty. A line reader catches it (docs/networking.md).
    [[nodiscard]] Future<std::string> read_until(std::string delimiter = "\n",
                                                 std::source_location where = std::source_location::current());
    // Everything up to the end of input (asyncio's reader.read(-1)): the
    // bytes buffered and every byte that arrives until the peer's EOF (a
    // TLS close_notify over TLS), or until the stream closes; "" if none
    // came. At most `limit` bytes: once more than `limit` wait unread before
    // the end, it fails with LimitOverrunError, as read_until does (the
    // bytes stay in the buffer, `consumed` is how many there are, and the
    // stream can go on: read() them, or close it). A reset or any connection
    // error before the end fails it with that error (a StreamError, plain
    // or TLS), as every read; the bytes received before it are not
    // returned. Without `limit`, the stream's (StreamOptions::limit).
    [[nodiscard]] Future<std::string> read_all(std::source_location where = std::source_location::current());
    [[nodiscard]] Future<std::string> read_all(std::size_t limit,
                                               std::source_location where = std::source_location::current());

    // ---- framed reads (docs/networking.md, "Lines and frames") ----
    // The next line, without its end: a line ends at "\n", and a '\r' right
    // before it is dropped too, so LF and CRLF peers read the same (a '\r'
    // anywhere else is part of the line); an empty line is "". An empty
    // optional at a clean end of input (EOF right after a line end, or before
    // any byte), where read_until fails. The input ending inside a line fails
    // it with IncompleteReadError (`partial`: that line's bytes, consumed). A
    // line longer than the limit (StreamOptions::limit, its end counted) fails
    // it with LimitOverrunError, as read_until. Works unchanged over TLS.
    [[nodiscard]] Future<std::optional<std::string>> read_line(
        std::source_location where = std::source_location::current());
    // The lines of this stream for a loop: next() is read_line().
    [[nodiscard]] Lines lines() const;
    // The payload of the next length-prefixed frame (reactor/net/frame.hpp:
    // a u16 or u32 big-endian length, then the payload); "" for a
    // zero-length frame. An empty optional at a clean end of input (EOF
    // between frames). The input ending inside a frame fails it with
    // IncompleteReadError; a prefix above format.max_size with
    // FrameTooLargeError (before any of the payload is read). A frame may be
    // larger than the stream's limit: the read takes what it needs.
    [[nodiscard]] Future<std::optional<std::string>> read_frame(
        reactor::FrameFormat format = {}, std::source_location where = std::source_location::current());
    // Reads after a connection reset or error fail with a StreamError (a
    // std::system_error carrying the reactor::End: futures/stream_errors.hpp).
    // Cancelling a pending read leaves the buffered bytes for the next read.
    // Scheduler::close() cancels a pending read or drain (as it cancels
    // tasks): a conversation it ends is cancelled, not failed.
    bool at_eof() const;           // EOF seen and nothing left in the buffer
    std::size_t buffered() const;  // bytes received and not read yet

    // ---- writing ----
    // Buffered; never waits. False if the stream can no longer write (closed,
    // closing, or reset), and the data is dropped.
    bool write(std::string_view data);
    // Done at once unless the buffered output is above the high-water mark;
    // then done once it has drained to the low mark. Fails with
    // a StreamError if the connection is reset meanwhile.
    [[nodiscard]] Future<void> drain(std::source_location where = std::source_location::current());
    // write() of the frame: prefix and payload in one write. Throws
    // std::length_error, writing nothing, when the payload is larger than
    // format.max_size or than the prefix can carry (reactor::make_frame).
    bool write_frame(std::string_view payload, const reactor::FrameFormat& format = {});
    // Sends EOF after the buffered output; reading continues.
    void write_eof();

    // ---- closing ----
    // Flushes buffered output, then closes. Idempotent.
    void close();
    // Closes now, dropping buffered output; the peer sees a reset.
    void abort();
    bool is_closing() const;  // close()/abort() called, or the connection ended
    // Change a deadline of StreamOptions::connection (zero: none); it counts from now.
    // A number (a double, or an integer) is seconds (reactor::from_seconds:
    // a negative one or NaN throws std::invalid_argument naming the
    // deadline); `{}` is still the Duration zero.
    void set_read_timeout(reactor::Duration d);
    void set_write_timeout(reactor::Duration d);
    void set_idle_timeout(reactor::Duration d);
    template <reactor::SecondsCount S>
    void set_read_timeout(S seconds) {
        set_read_timeout(reactor::from_seconds(static_cast<double>(seconds), "set_read_timeout: d"));
    }
    template <reactor::SecondsCount S>
    void set_write_timeout(S seconds) {
        set_write_timeout(reactor::from_seconds(static_cast<double>(seconds), "set_write_timeout: d"));
    }
    template <reactor::SecondsCount S>
    void set_idle_timeout(S seconds) {
        set_idle_timeout(reactor::from_seconds(static_cast<double>(seconds), "set_idle_timeout: d"));
    }
    // Done once the connection is closed (never fails; cancelled if its
    // Scheduler goes first). Keeps the stream until then, handle or not.
    [[nodiscard]] Future<void> wait_closed(std::source_location where = std::source_location::current());

    // The peer's: as of the connection's start, kept for its whole life,
    // still valid once the stream is closed or reset. The local one: the
    // kernel's answer while open, unspecified once closed (see
    // reactor::Connection::local_address).
    reactor::Address local_address() const;
    reactor::Address peer_address() const;
    reactor::Scheduler& scheduler() const;

    // ---- the transport ----
    // The TLS connection under this stream (its alpn_protocol(),
    // peer_subject(), session_reused(), protocol_version(): include
    // <reactor/tls/connection.hpp> and link reactor::tls), or null for a
    // plaintext stream. For inspection: its callbacks and writes are the
    // stream's. Valid while the stream lives.
    reactor::tls::Connection* tls() const;
    // The transport the stream is the protocol of (its socket(): the plain
    // connection at the bottom). For inspection and deadlines: its protocol
    // and writes are the stream's.
    reactor::Transport& transport() const;
    // Puts a new transport in place of the current one over the same
    // connection (what futures_tls's start_tls does: STARTTLS). `make` is
    // given the current transport, the stream no longer its protocol, and
    // returns the layer that takes it over (whose protocol the stream then
    // becomes); the stream lets the old one go (which must not close the
    // connection). If `make` throws, the stream is the old transport's
    // protocol again and the exception propagates. A pending read stays pending and is served by the new
    // transport. Throws InvalidStateError when the stream is closing or
    // closed, after the peer's EOF, or while bytes received are not read yet
    // (they would belong to the new layer: the peer spoke before its turn).
    void replace_transport(const std::function<reactor::TransportPtr(reactor::Transport&)>& make);

private:
    friend class detail::ServerCore;
    friend class detail::ServerScopeCore;
    explicit Stream(detail::Ref<detail::StreamCore> core) noexcept;
    detail::StreamCore& core() const;
    // Counted by the state itself: a handle is one pointer, and an idle
    // stream's state has no control block.
    detail::Ref<detail::StreamCore> core_;
};

// The lines of a stream, for a loop: each next() is the stream's
// read_line(), so an empty optional ends the loop at a clean end of input.
// A handle that keeps the stream alive; copies share the stream and its one
// pending read. Loop thread only.
//
//     futures::Lines lines = stream.lines();
//     lines.next().then([](std::optional<std::string> line) { ... });
class REACTOR_API Lines {
public:
    explicit Lines(Stream stream) : stream_(std::move(stream)) {}
    [[nodiscard]] Future<std::optional<std::string>> next(std::source_location where = std::source_location::current()) {
        return stream_.read_line(where);
    }
    Stream& stream() noexcept { return stream_; }

private:
    Stream stream_;
};

// A new pipe as two streams (reactor::open_pipe): what is written to
// write_end is read from read_end; write_end.write_eof() or close() ends it.
struct PipeStreams {
    Stream read_end;
    Stream write_end;
};
[[nodiscard]] REACTOR_API PipeStreams open_pipe(reactor::Scheduler& sched, StreamOptions options = {});
// A stream over a duplicate of a standard stream (0, 1, 2), which stays the
// caller's; non-blocking until the stream closes (see reactor::adopt_stdio:
// a regular file, as in `prog < file`, throws std::invalid_argument).
[[nodiscard]] REACTOR_API Stream open_stdio(reactor::Scheduler& sched, int fd, StreamOptions options = {});

// Connects to the first of `addresses` that accepts, trying them in turn (the
// future fails with the last one's error); an empty list throws
// std::invalid_argument. What the name form below does after its lookup.
[[nodiscard]] REACTOR_API Future<Stream> open_connection(reactor::Scheduler& sched, std::vector<reactor::Address> addresses,
                                             StreamOptions options = {},
                                             std::source_location where = std::source_location::current());
// Connects; the future fails with std::system_error carrying the errno
// reactor::Connector reports (ECONNREFUSED, ECONNRESET, ETIMEDOUT, ...: the
// full list is in reactor/net/connector.hpp).
// Cancelling it (e.g. with_timeout) abandons the attempt.
[[nodiscard]] REACTOR_API Future<Stream> open_connection(reactor::Scheduler& sched, const reactor::Address& address,
                                             StreamOptions options = {},
                                             std::source_location where = std::source_location::current());
// `host` numeric, or a name: a name is looked up with futures::resolve
// (futures/resolve.hpp: getaddrinfo on the default thread pool, the loop is
// not blocked; a failed lookup fails the future with its std::system_error,
// in reactor::resolve_category(), naming the host); the addresses are then
// tried in turn until one connects (the future fails with the last error), as
// asyncio does. Cancelling the future cancels the lookup or the attempt.
[[nodiscard]] REACTOR_API Future<Stream> open_connection(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                                             StreamOptions options = {},
                                             std::source_location where = std::source_location::current());

}  // namespace futures

// The stream server (start_server) is part of this header.
#include "futures/stream_server.hpp"
