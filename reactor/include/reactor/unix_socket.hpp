// Unix domain stream sockets: the same TcpListener, Connector and TcpConnection
// as TCP (same callbacks, buffering, water marks and close reasons), reached by
// path. A path starting with '@' is a Linux abstract socket (no file).
//
// The listener owns the socket file it creates: a stale file left by a dead
// server is replaced, a live server's is not (EADDRINUSE), and the file is
// removed when the listener closes. Loop thread only, like the classes used.
#pragma once

#include <memory>
#include <string_view>

#include "reactor/address.hpp"
#include "reactor/connector.hpp"
#include "reactor/tcp_listener.hpp"

namespace reactor {

[[nodiscard]] inline TcpListenerPtr listen_unix(Scheduler& sched, std::string_view path,
                                                TcpListener::AcceptCallback on_accept,
                                                TcpListener::Options options = {}) {
    return TcpListener::listen(sched, Address::unix_path(path), std::move(on_accept), options);
}

// Errors reach the callback as with TCP; typical ones are ENOENT (no socket
// file), ECONNREFUSED (a file but no listener) and EAGAIN (backlog full: a Unix
// connect does not wait for room; try again later).
inline std::shared_ptr<Connector> connect_unix(Scheduler& sched, std::string_view path, Connector::Callback cb,
                                               Connector::Options options = {}) {
    return Connector::start(sched, Address::unix_path(path), std::move(cb), options);
}

}  // namespace reactor
