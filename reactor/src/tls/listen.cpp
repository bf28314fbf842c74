// SPDX-License-Identifier: MIT
// reactor::tls::listen and connect: the plain ones, plus a handshake.
#include "reactor/tls/listen.hpp"

#include <memory>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "reactor/tls/handshake_limit.hpp"

namespace reactor::tls {
namespace {

void check_role(const std::shared_ptr<Context>& context, Context::Role role, std::string_view call) {
    if (!context || context->role() != role)
        throw std::invalid_argument(std::string("reactor::tls::") + std::string(call) + " needs a " +
                                    (role == Context::Role::server ? "server" : "client") + " context");
}

// The plain connect's callback, with the client handshake started on success.
Connector::ConnectCallback client_side(std::shared_ptr<Context> context, std::string server_name, ConnectCallback cb,
                                       Options tls) {
    return [context = std::move(context), server_name = std::move(server_name), cb = std::move(cb),
            tls](reactor::ConnectionPtr conn, std::error_code error) {
        if (error) return cb(nullptr, error);
        ConnectionPtr secured;
        try {
            secured = Connection::start_client(conn, context, server_name, tls);
        } catch (const Error&) {
            conn->abort();  // OpenSSL out of memory: nothing to hand over
            return cb(nullptr, std::make_error_code(std::errc::not_enough_memory));
        } catch (const std::bad_alloc&) {
            conn->abort();  // out of memory (the first flight not queued: aborted already)
            return cb(nullptr, std::make_error_code(std::errc::not_enough_memory));
        }
        cb(std::move(secured), {});
    };
}

// An accepted connection with the server handshake started. A connection
// that cannot be secured (OpenSSL out of memory) is aborted, never left open
// without an owner's callbacks, and the error goes on to the loop's
// exception handler.
ConnectionPtr server_side(const reactor::ConnectionPtr& conn, const std::shared_ptr<Context>& context,
                          const Options& tls) {
    try {
        return Connection::start_server(conn, context, tls);
    } catch (...) {
        conn->abort();
        throw;
    }
}

}  // namespace

ListenerPtr listen(Scheduler& sched, const Address& address, std::shared_ptr<Context> context,
                   AcceptCallback on_accept, Listener::Options options, Options tls, std::source_location where) {
    check_role(context, Context::Role::server, "listen");
    std::shared_ptr<HandshakeLimit> limit;
    if (tls.max_handshakes > 0) limit = std::make_shared<HandshakeLimit>(tls.max_handshakes);
    return Listener::listen(
        sched, address,
        [context = std::move(context), on_accept = std::move(on_accept), tls,
         limit](const reactor::ConnectionPtr& conn) {
            ConnectionPtr secured = server_side(conn, context, tls);
            if (limit) limit->started(secured);
            if (on_accept) on_accept(secured);
        },
        options, where);
}

std::unique_ptr<GroupListener> listen(LoopGroup& group, const Address& address, std::shared_ptr<Context> context,
                                      GroupAcceptCallback on_accept, GroupListener::Options options, Options tls,
                                      std::source_location where) {
    check_role(context, Context::Role::server, "listen");
    // One count per loop, each touched only by its loop's thread: the
    // handshakes of a loop are all its own.
    std::shared_ptr<std::vector<HandshakeLimit>> limits;
    if (tls.max_handshakes > 0) {
        const std::size_t loops = group.size();
        limits = std::make_shared<std::vector<HandshakeLimit>>(
            loops, HandshakeLimit((tls.max_handshakes + loops - 1) / loops));
    }
    return GroupListener::listen(
        group, address,
        [context = std::move(context), on_accept = std::move(on_accept), tls,
         limits](const reactor::ConnectionPtr& conn, std::size_t loop) {
            ConnectionPtr secured = server_side(conn, context, tls);
            if (limits) (*limits)[loop].started(secured);
            if (on_accept) on_accept(secured, loop);
        },
        std::move(options), where);
}

std::shared_ptr<Connector> connect(Scheduler& sched, const Address& address, std::shared_ptr<Context> context,
                                   std::string server_name, ConnectCallback cb, Connector::Options options, Options tls,
                                   std::source_location where) {
    check_role(context, Context::Role::client, "connect");
    if (server_name.empty() && context->verifies_peer())
        throw std::invalid_argument("reactor::tls::connect: a verifying client needs a server name");
    return Connector::start(sched, address, client_side(std::move(context), std::move(server_name), std::move(cb), tls),
                            options, where);
}

std::shared_ptr<Connector> connect(Scheduler& sched, std::string_view host, std::uint16_t port,
                                   std::shared_ptr<Context> context, ConnectCallback cb, Connector::Options options,
                                   Options tls, std::source_location where) {
    check_role(context, Context::Role::client, "connect");
    return Connector::start(sched, host, port, client_side(std::move(context), std::string(host), std::move(cb), tls),
                            options, where);
}

}  // namespace reactor::tls
