// SPDX-License-Identifier: MIT
// start_server and the StreamServer handle: each accepted connection becomes a
// Stream handed to the user's handler; the stream is closed when the future
// the handler returned completes. What the server reports or returns names
// the user's line (start_server's, wait_closed's, serve_until's), never one
// here. Each conversation is a counted child of the server's scope, which
// wait_closed and serve_until wait for. Loop thread only.
#include "stream_server.hpp"
#include "stream_core.hpp"

#include <exception>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <vector>
#include <utility>

#include <fmt/format.h>

#include "futures/leaves.hpp"
#include "futures/promise.hpp"
#include "futures/resolve.hpp"

namespace futures {
namespace detail {

ScopeOptions conversation_scope(reactor::Scheduler& sched, std::string server) {
    ScopeOptions options;
    options.policy = ScopePolicy::supervise;
    options.on_error = [&sched, server = std::move(server)](const ScopeError& e) {
        reactor::ErrorContext ctx;
        ctx.message = server + ": a conversation failed";
        ctx.exception = e.error;
        ctx.origin = e.spawned_at;  // the conversation's own line
        ctx.origin_known = true;
        sched.call_exception_handler(ctx);
    };
    return options;
}

ServerCore::~ServerCore() {
    // No conversation can start any more; the scope's close() future carries
    // the lifetime on. A scope that ended with its loop is left alone.
    if (handlers_ && !handlers_->settled()) (void)handlers_->close(where_);
}

void ServerCore::listen(const reactor::Address& address) {
    reactor::Listener::Options lopt;
    lopt.connection = options_.connection;
    lopt.max_connections = options_.max_connections;
    std::weak_ptr<ServerCore> weak = weak_from_this();
    listener_ = reactor::Listener::listen(
        sched_, address,
        [weak](const reactor::ConnectionPtr& c) {
            if (auto self = weak.lock()) self->on_accept(c);
        },
        lopt, where_);
    ScopeOptions scope = conversation_scope(sched_, fmt::format("stream server {} (started at {}:{})",
                                                                listener_->address().to_string(),
                                                                where_.file_name(), where_.line()));
    handlers_ = std::make_shared<Scope>(sched_, std::move(scope), where_);
    active_->scope = Ref<ScopeState>(&handlers_->state());
    // Runs once the listener is closed (by close(), the loop's end, its own
    // failure or its destruction) and its connections have closed: no
    // conversation can start any more.
    listener_->wait_closed([handlers = handlers_, where = where_] {
        if (!handlers->settled()) (void)handlers->close(where);
    });
}

// The stream follows its conversation itself (StreamCore::follow): it
// holds the server's count, and waits on the conversation's future as a
// done-callback of its own, so an open conversation costs its server no
// block. Aborting the clients is the listener's: its connection set has
// every connection still open, whether its conversation runs or it still
// flushes.
void ServerCore::on_accept(const reactor::ConnectionPtr& conn) {
    Stream stream = Stream::from(conn, options_);
    Future<void> conversation;
    try {
        conversation = handler_(stream);
    } catch (...) {
        stream.abort();
        reactor::ErrorContext ctx;
        ctx.message = fmt::format("stream server {}: the handler threw", listener_->address().to_string());
        ctx.exception = std::current_exception();
        ctx.origin = where_;  // the start_server call
        ctx.origin_known = true;
        sched_.call_exception_handler(ctx);
        return;
    }
    stream.core().follow(active_, conversation);
}

// The listener holds the promise (shared: its waiters are std::functions)
// until it is closed and its connections are gone; then the server's scope
// (closed by then: listen's waiter runs first) holds it until every
// conversation has ended, and the continuations their ends scheduled have
// run. However the scope ends (cancelled by Scheduler::close() too), the
// server is closed: done. If either drops its waiter unrun (the loop
// ended), the promise breaks and the future is cancelled.
Future<void> ServerCore::wait_closed(std::source_location where) {
    auto closed = std::make_shared<Promise<void>>(sched_, where, "wait for the stream server to close");
    Future<void> f = closed->get_future();
    listener_->wait_closed([closed, handlers = handlers_, where] {
        if (!closed->is_pending()) return;  // cancelled by its holder
        (void)handlers->close(where).add_done_callback(
            [closed] {
                if (closed->is_pending()) closed->set_value();
            },
            where);
    });
    return f;
}

// Holds the core (and so the listener) until shutdown is over: a server
// handle dropped meanwhile does not cut the drain short. The steps' own
// futures and callbacks name the user's serve_until line too.
Future<void> ServerCore::serve_until(Future<void> stop, reactor::Duration drain, std::source_location where) {
    auto finished = std::make_shared<Promise<void>>(sched_, where, "stream server's serve_until");
    Future<void> f = finished->get_future();
    stop.add_done_callback(
        [self = shared_from_this(), finished, drain, where] {
            self->close();
            Future<void> closed = self->wait_closed(where);
            reactor::Handle deadline = self->sched_.call_later(drain, [self] { self->abort_clients(); }, where);
            // Cancelled (the listener dropped its waiter unrun): `finished`
            // breaks as the last copy of this callback goes.
            closed.add_done_callback(
                [finished, deadline](Future<void>& c) mutable {
                    deadline.cancel();
                    if (finished->is_pending() && !c.cancelled()) finished->set_value();
                },
                where);
        },
        where);
    return f;
}

}  // namespace detail

StreamServer start_server(reactor::Scheduler& sched, const reactor::Address& address, StreamServer::Handler handler,
                          StreamOptions options, std::source_location where) {
    if (!handler) throw std::invalid_argument("start_server: empty handler");
    StreamServer server;
    server.core_ = std::make_shared<detail::ServerCore>(sched, std::move(handler), options, where);
    server.core_->listen(address);
    return server;
}

Future<StreamServer> start_server(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                                  StreamServer::Handler handler, StreamOptions options, std::source_location where) {
    if (!handler) throw std::invalid_argument("start_server: empty handler");
    std::optional<reactor::Address> numeric;
    try {
        numeric = reactor::Address::parse(host, port);
    } catch (const std::invalid_argument&) {
        // a name: looked up on the pool first
    }
    if (numeric) {
        try {
            return make_ready_future(sched, start_server(sched, *numeric, std::move(handler), options, where), where);
        } catch (const std::system_error&) {
            return make_exception_future<StreamServer>(sched, std::current_exception(), where);
        }
    }
    return resolve(sched, host, port, where)
        .then(
            [&sched, handler = std::move(handler), options, where](std::vector<reactor::Address> addresses) mutable {
                return start_server(sched, addresses.front(), std::move(handler), options, where);
            },
            where);
}

const reactor::Address& StreamServer::address() const {
    if (!core_) throw InvalidStateError("futures: empty StreamServer");
    return core_->address();
}
void StreamServer::close() {
    if (core_) core_->close();
}
bool StreamServer::is_serving() const { return core_ && core_->is_serving(); }
std::size_t StreamServer::active() const { return core_ ? core_->active() : 0; }
std::uint64_t StreamServer::accepted() const { return core_ ? core_->accepted() : 0; }
std::uint64_t StreamServer::turned_away() const { return core_ ? core_->turned_away() : 0; }
void StreamServer::close_clients() {
    if (core_) core_->close_clients();
}
void StreamServer::abort_clients() {
    if (core_) core_->abort_clients();
}
Future<void> StreamServer::wait_closed(std::source_location where) {
    if (!core_) throw InvalidStateError("futures: empty StreamServer");
    return core_->wait_closed(where);
}
Future<void> StreamServer::serve_until(Future<void> stop, reactor::Duration drain, std::source_location where) {
    if (!core_) throw InvalidStateError("futures: empty StreamServer");
    if (!stop.valid()) throw std::invalid_argument("serve_until: empty stop future");
    return core_->serve_until(std::move(stop), drain, where);
}

}  // namespace futures
