// SPDX-License-Identifier: MIT
// futures/tls/stream.hpp: futures::Stream over TLS (asyncio's ssl= argument
// of open_connection/start_server, and StreamWriter.start_tls). In the target
// reactor::futures_tls (libreactor_futures_tls), which links reactor::tls
// (OpenSSL 3): reactor::futures, the plain streams, links no OpenSSL.
//
// A TLS stream is a futures::Stream like any other: read, read_until,
// read_exactly, write, drain, write_eof, close and wait_closed behave as on
// plaintext, over the decrypted bytes; Stream::tls() reaches the
// reactor::tls::Connection underneath (alpn_protocol(), peer_subject(),
// session_reused(), protocol_version()). What TLS changes:
//  - open_connection's future completes once the handshake is done (the
//    peer verified, if the context verifies); a failed handshake fails it
//    with a StreamError (futures/stream_transport.hpp) carrying OpenSSL's text ("certificate verify failed:
//    hostname mismatch"). start_server hands the handler a stream whose
//    handshake is done; a client whose handshake fails (garbage, a plaintext
//    client, a certificate it refuses) is closed and never reaches the
//    handler, and the server goes on (nothing is reported).
//  - The end of the data. The peer's close_notify is a clean EOF: read()
//    returns "" (and read_until/read_exactly fail with IncompleteReadError,
//    as at a plaintext EOF). A TCP EOF without close_notify is NOT an EOF: it
//    is a truncation (an attacker or a crash may have cut the data short), and
//    the pending read and every later one fail with a StreamError whose
//    end.kind is EndKind::truncated (EPROTO); the bytes that did arrive are still
//    read first. write_eof() sends close_notify (then the peer's answer ends
//    the connection); close() sends it and closes once the output is flushed.
//  - Errors after the handshake (a bad record: tls_error) fail reads with a
//    StreamError too (EPROTO); the handshake and shutdown timeouts of
//    reactor::tls::Options with one whose code is ETIMEDOUT. The transport's
//    own ends (reset, the read/write/idle deadlines of
//    StreamOptions::connection, Scheduler::close) are what they are on
//    plaintext: a StreamError ECONNRESET, ETIMEDOUT; cancelled.
//  - drain() and the water marks count plaintext not yet encrypted plus
//    ciphertext the kernel has not taken (reactor/tls/connection.hpp).
// Loop thread only; a context serves one loop (reactor/tls/context.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <system_error>

#include <reactor/export.hpp>
#include <reactor/net/address.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/tls/connection.hpp>
#include <reactor/tls/context.hpp>

#include "futures/future.hpp"
#include "futures/stream.hpp"

namespace futures {

// Connects to `address`, then does the client side of a TLS handshake with
// `context` (a client context: else std::invalid_argument, at once), sending
// `server_name` as SNI and, when the context verifies, checking the
// certificate against it (never resolved: the address says where, the name
// what to expect there; a verifying context needs one, else
// std::invalid_argument). The future completes with the stream once the
// handshake is done; it fails with the connect's std::system_error, or a
// StreamError. Cancelling it abandons the connect or aborts the handshake.
[[nodiscard]] REACTOR_API Future<Stream> open_connection(reactor::Scheduler& sched, const reactor::Address& address,
                                                         reactor::tls::ContextPtr context, std::string server_name,
                                                         StreamOptions options = {}, reactor::tls::Options tls = {},
                                                         std::source_location where = std::source_location::current());
// By host (numeric, or a name looked up as the plain open_connection does);
// `host` is also the server name.
[[nodiscard]] REACTOR_API Future<Stream> open_connection(reactor::Scheduler& sched, std::string_view host,
                                                         std::uint16_t port, reactor::tls::ContextPtr context,
                                                         StreamOptions options = {}, reactor::tls::Options tls = {},
                                                         std::source_location where = std::source_location::current());

// A stream server over TLS: each accepted connection does the server side of
// a handshake with `context` (a server context: else std::invalid_argument),
// and the handler gets its stream once the handshake is done. The
// StreamServer is the plain one (its active() counts handshakes in progress
// too); the handler's future is the conversation, as for plaintext, a child
// of the server's scope (the handshake included: futures/stream.hpp, "The
// server's scope"). A handler that throws fails its conversation, which is
// reported as any failed conversation is, and its stream is closed.
[[nodiscard]] REACTOR_API StreamServer start_server(reactor::Scheduler& sched, const reactor::Address& address,
                                                    StreamServer::Handler handler, StreamOptions options,
                                                    reactor::tls::ContextPtr context, reactor::tls::Options tls = {},
                                                    std::source_location where = std::source_location::current());
// By host, as the plain start_server by host.
[[nodiscard]] REACTOR_API Future<StreamServer> start_server(reactor::Scheduler& sched, std::string_view host,
                                                            std::uint16_t port, StreamServer::Handler handler,
                                                            StreamOptions options, reactor::tls::ContextPtr context,
                                                            reactor::tls::Options tls = {},
                                                            std::source_location where = std::source_location::current());

// Upgrades an open plaintext stream to TLS in place (STARTTLS; asyncio's
// StreamWriter.start_tls): the side is the context's role (a server context
// answers, a client one starts and sends `server_name`, verified as in
// open_connection). Done once the handshake is; fails with a StreamError (the
// pending read, if any, too), or is cancelled if the stream goes first.
// Cancelling it aborts the connection. The TLS connection's handshake
// callback (stream.tls()->set_handshake_callback) stays yours: it does not
// complete this future. Reads and writes may go on meanwhile: writes wait
// for the handshake, a pending read is served with the decrypted bytes. A free function, so that <futures/stream.hpp> needs no
// TLS. Throws at once (the stream left as it was): InvalidStateError if the
// stream is already TLS, closing or closed, at EOF, or holds bytes received
// and not read (the peer spoke TLS before its turn: read the plaintext
// conversation to its end first); std::invalid_argument as
// reactor::tls::Connection::start_client/start_server.
[[nodiscard]] REACTOR_API Future<void> start_tls(Stream stream, reactor::tls::ContextPtr context,
                                                 std::string server_name = {}, reactor::tls::Options tls = {},
                                                 std::source_location where = std::source_location::current());

}  // namespace futures
