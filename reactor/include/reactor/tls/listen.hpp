// SPDX-License-Identifier: MIT
// reactor::tls::listen and reactor::tls::connect: the plain Listener and
// connect() with a TLS handshake started on each connection they make
// (asyncio's create_server/create_connection with ssl=, Asio's
// ssl::stream over an accepted or connected socket).
//
// The callbacks receive a tls::Connection whose handshake has started, not
// finished (as the plain callbacks receive a connection before any data):
// set its callbacks there; the handshake callback says when it is done, the
// close callback why it failed. Loop thread only; never call back
// synchronously.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <system_error>

#include "reactor/export.hpp"
#include "reactor/net/address.hpp"
#include "reactor/net/connector.hpp"
#include "reactor/net/group_listener.hpp"
#include "reactor/net/listener.hpp"
#include "reactor/tls/connection.hpp"
#include "reactor/tls/context.hpp"

namespace reactor::tls {

using AcceptCallback = std::function<void(const ConnectionPtr&)>;
// Exactly one is set: the TLS connection (handshake started), or the TCP
// connect's error (see reactor::Connector).
using ConnectCallback = std::function<void(ConnectionPtr, std::error_code)>;

// Listens on `address`; every accepted connection starts the server side of
// a handshake with `context` (a server context: else std::invalid_argument).
// A client that fails its handshake (garbage, a plaintext client, a bad
// certificate) is closed with a reason; the listener goes on. `options` are
// the listener's (max_connections bounds every connection, handshakes in
// progress included), `tls` the connections' (handshake_timeout), and its
// max_handshakes bounds the handshakes in progress at once: beyond it the
// oldest is aborted (reactor/tls/handshake_limit.hpp).
[[nodiscard]] REACTOR_API ListenerPtr listen(Scheduler& sched, const Address& address, std::shared_ptr<Context> context,
                                 AcceptCallback on_accept, Listener::Options options = {}, Options tls = {},
                                 std::source_location where = std::source_location::current());

// The same over every loop of a LoopGroup (reactor::GroupListener, with its
// spreading): each connection's handshake and callbacks run on the loop it
// was given, and `on_accept` gets that loop's index. The one server context
// serves every loop (its settings are only read once it serves; OpenSSL
// locks its own session cache and ticket keys), so a client resumes on any
// loop the session it got on another. Called before the group starts, as
// GroupListener::listen; add_server_name on the context before that too.
// max_connections counts the whole group's connections; max_handshakes is
// shared out, each loop bounding its own at max_handshakes / loops (rounded up).
using GroupAcceptCallback = std::function<void(const ConnectionPtr&, std::size_t loop)>;
[[nodiscard]] REACTOR_API std::unique_ptr<GroupListener> listen(
    LoopGroup& group, const Address& address, std::shared_ptr<Context> context, GroupAcceptCallback on_accept,
    GroupListener::Options options = {}, Options tls = {},
    std::source_location where = std::source_location::current());

// Connects to `address` and starts the client side of a handshake with
// `context`, sending `server_name` (SNI) and, if the context verifies,
// checking the certificate against it. Never resolves `server_name`: the
// address is where to connect, the name is what to expect there. Throws
// std::invalid_argument for a server context, or a verifying one without a
// server name.
REACTOR_API std::shared_ptr<Connector> connect(Scheduler& sched, const Address& address, std::shared_ptr<Context> context,
                                   std::string server_name, ConnectCallback cb, Connector::Options options = {},
                                   Options tls = {}, std::source_location where = std::source_location::current());
// To `host` (numeric, or a name looked up as reactor::connect does) and
// `port`; `host` is also the server name.
REACTOR_API std::shared_ptr<Connector> connect(Scheduler& sched, std::string_view host, std::uint16_t port,
                                   std::shared_ptr<Context> context, ConnectCallback cb,
                                   Connector::Options options = {}, Options tls = {},
                                   std::source_location where = std::source_location::current());

}  // namespace reactor::tls
