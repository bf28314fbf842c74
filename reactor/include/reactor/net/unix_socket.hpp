// SPDX-License-Identifier: MIT
// Unix domain stream sockets: the same Listener, Connector and Connection
// as TCP (same callbacks, buffering, water marks and close reasons), reached by
// path. A path starting with '@' is a Linux abstract socket (no file).
//
// The listener owns the socket file it creates: a stale file left by a dead
// server is replaced, a live server's is not (EADDRINUSE), and the file is
// removed when the listener closes. Loop thread only, like the classes used.
#pragma once

#include <memory>
#include <string_view>

#include "reactor/net/address.hpp"
#include "reactor/net/connector.hpp"
#include "reactor/net/listener.hpp"

namespace reactor {

[[nodiscard]] inline ListenerPtr listen_unix(Scheduler& sched, std::string_view path,
                                                Listener::AcceptCallback on_accept,
                                                Listener::Options options = {}) {
    return Listener::listen(sched, Address::unix_path(path), std::move(on_accept), options);
}

// Errors reach the callback as with TCP; typical ones are ENOENT (no socket
// file), ECONNREFUSED (a file but no listener) and EAGAIN (backlog full: a Unix
// connect does not wait for room; try again later).
inline std::shared_ptr<Connector> connect_unix(Scheduler& sched, std::string_view path, Connector::ConnectCallback cb,
                                               Connector::Options options = {}) {
    return Connector::start(sched, Address::unix_path(path), std::move(cb), options);
}

}  // namespace reactor
