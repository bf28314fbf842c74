// SPDX-License-Identifier: MIT
// open_connection and start_server over TLS: the plain ones, with start_tls
// on each stream they make before the user sees it (asyncio's ssl=: the
// client's future and the server's handler wait for the handshake). Every
// future and callback names the user's line. A connect_timeout bounds the
// handshake too: the plain open_connection's own bound covers the lookup and
// the connect, and what is left of it then bounds the handshake. Loop
// thread only.
#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "futures/leaves.hpp"
#include "futures/tls/stream.hpp"
#include "futures/with_timeout.hpp"
#include <reactor/tls/handshake_limit.hpp>

namespace futures {
namespace {

namespace tls = reactor::tls;

void check_client(const tls::ContextPtr& context, std::string_view server_name) {
    if (!context || context->role() != tls::Context::Role::client)
        throw std::invalid_argument("futures::open_connection over TLS needs a client context");
    if (server_name.empty() && context->verifies_peer())
        throw std::invalid_argument("futures::open_connection over TLS: a verifying context needs a server name");
}

void check_server(const tls::ContextPtr& context) {
    if (!context || context->role() != tls::Context::Role::server)
        throw std::invalid_argument("futures::start_server over TLS needs a server context");
}

// The connected stream, once its handshake is done. Cancelling the result
// cancels the connect, or the handshake (which aborts the connection).
// With a connect_timeout (`deadline` is when it passes), the handshake gets
// what is left of it, and fails with ConnectTimeoutError when that runs out.
struct ConnectDeadline {
    reactor::Duration timeout{0};  // zero: none
    reactor::TimePoint deadline{};
    std::string target;
};

ConnectDeadline deadline_for(reactor::Scheduler& sched, const StreamOptions& options, std::string target) {
    if (options.connect_timeout <= reactor::Duration::zero()) return {};
    return ConnectDeadline{options.connect_timeout, sched.now() + options.connect_timeout, std::move(target)};
}

Future<Stream> handshake_after(Future<Stream> connected, tls::ContextPtr context, std::string server_name,
                               tls::Options options, ConnectDeadline bound, std::source_location where) {
    return connected.then(
        [context = std::move(context), server_name = std::move(server_name), options, bound = std::move(bound),
         where](Stream stream) {
            Future<Stream> handshaken =
                start_tls(stream, context, server_name, options, where).then([stream] { return stream; }, where);
            if (bound.timeout == reactor::Duration::zero()) return handshaken;
            const reactor::Duration left = std::max(bound.deadline - stream.scheduler().now(), reactor::Duration::zero());
            return with_timeout(
                handshaken, left,
                [bound, peer = stream.peer_address().to_string()] {
                    return std::make_exception_ptr(ConnectTimeoutError(
                        ConnectTimeoutError::Step::tls_handshake,
                        fmt::format("open_connection to {}: timed out after {} ms in the TLS handshake with {}",
                                    bound.target, std::chrono::duration<double, std::milli>(bound.timeout).count(), peer)));
                },
                where);
        },
        where);
}

// The user's handler, called once the client's handshake is done. A client
// whose handshake fails ends its conversation quietly (its stream is closed
// with a reason nobody needs to retrieve); the server goes on.
StreamServer::Handler after_handshake(StreamServer::Handler handler, tls::ContextPtr context, tls::Options options,
                                      std::source_location where) {
    auto user = std::make_shared<StreamServer::Handler>(std::move(handler));
    std::shared_ptr<tls::HandshakeLimit> limit;  // max_handshakes: this server's
    if (options.max_handshakes > 0) limit = std::make_shared<tls::HandshakeLimit>(options.max_handshakes);
    return [user, context = std::move(context), options, limit, where](Stream stream) -> Future<void> {
        Future<void> handshake = start_tls(stream, context, {}, options, where);
        if (limit && stream.tls()) limit->started(stream.tls()->shared_from_this());
        return handshake
            .then([] { return true; }, where)
            .catch_error([](std::exception_ptr) { return false; }, where)
            .then(
                [user, stream](bool handshaken) -> Future<void> {
                    if (!handshaken) return make_ready_future(stream.scheduler());
                    Future<void> conversation = (*user)(stream);
                    return conversation.valid() ? conversation : make_ready_future(stream.scheduler());
                },
                where);
    };
}

}  // namespace

Future<Stream> open_connection(reactor::Scheduler& sched, const reactor::Address& address, tls::ContextPtr context,
                               std::string server_name, StreamOptions options, tls::Options tls,
                               std::source_location where) {
    check_client(context, server_name);
    return handshake_after(open_connection(sched, address, options, where), std::move(context), std::move(server_name),
                           tls, deadline_for(sched, options, address.to_string()), where);
}

Future<Stream> open_connection(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                               tls::ContextPtr context, StreamOptions options, tls::Options tls,
                               std::source_location where) {
    check_client(context, host);
    return handshake_after(open_connection(sched, host, port, options, where), std::move(context), std::string(host),
                           tls, deadline_for(sched, options, fmt::format("{}:{}", host, port)), where);
}

StreamServer start_server(reactor::Scheduler& sched, const reactor::Address& address, StreamServer::Handler handler,
                          StreamOptions options, tls::ContextPtr context, tls::Options tls, std::source_location where) {
    if (!handler) throw std::invalid_argument("start_server: empty handler");
    check_server(context);
    return start_server(sched, address, after_handshake(std::move(handler), std::move(context), tls, where), options,
                        where);
}

Future<StreamServer> start_server(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                                  StreamServer::Handler handler, StreamOptions options, tls::ContextPtr context,
                                  tls::Options tls, std::source_location where) {
    if (!handler) throw std::invalid_argument("start_server: empty handler");
    check_server(context);
    return start_server(sched, host, port, after_handshake(std::move(handler), std::move(context), tls, where),
                        options, where);
}

}  // namespace futures
