// start_server and the StreamServer handle: each accepted connection becomes a
// Stream handed to the user's handler; the stream is closed when the future
// the handler returned completes. Loop thread only.
#include "stream_server.hpp"

#include <exception>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <vector>
#include <utility>

#include <fmt/format.h>

#include "futures/leaves.hpp"
#include "futures/resolve.hpp"

namespace futures {
namespace detail {

void ServerCore::listen(const reactor::Address& address) {
    reactor::Listener::Options lopt;
    lopt.connection = options_.connection;
    std::weak_ptr<ServerCore> weak = weak_from_this();
    listener_ = reactor::Listener::listen(
        sched_, address,
        [weak](const reactor::ConnectionPtr& c) {
            if (auto self = weak.lock()) self->on_accept(c);
        },
        lopt);
}

void ServerCore::on_accept(const reactor::ConnectionPtr& conn) {
    Stream stream = Stream::from(conn, options_);
    StreamCore* key = stream.core_.get();
    active_.emplace(key, stream);
    Future<void> conversation;
    try {
        conversation = handler_(stream);
    } catch (...) {
        active_.erase(key);
        stream.abort();
        reactor::ErrorContext ctx;
        ctx.message = fmt::format("stream server {}: the handler threw", listener_->address().to_string());
        ctx.exception = std::current_exception();
        sched_.call_exception_handler(ctx);
        return;
    }
    auto finished = [weak = weak_from_this(), stream, key]() mutable {
        stream.close();
        if (auto self = weak.lock()) self->active_.erase(key);
    };
    if (!conversation.valid()) return finished();
    conversation.add_done_callback(std::move(finished));
}

void ServerCore::abort_clients() {
    auto doomed = active_;  // aborting does not call back synchronously, but be safe
    for (auto& [key, stream] : doomed) stream.abort();
    listener_->connections().abort_all();  // and those whose conversation ended but still flush
}

Future<void> ServerCore::wait_closed() {
    Future<void> closed(sched_);
    listener_->wait_closed([closed] {
        if (!closed.done()) closed.set_result();  // unless cancelled by its holder
    });
    return closed;
}

// Holds the core (and so the listener) until shutdown is over: a server
// handle dropped meanwhile does not cut the drain short.
Future<void> ServerCore::serve_until(Future<void> stop, reactor::Duration drain) {
    Future<void> finished(sched_);
    stop.add_done_callback([self = shared_from_this(), finished, drain] {
        self->close();
        Future<void> closed = self->wait_closed();
        reactor::Handle deadline = self->sched_.call_later(drain, [self] { self->abort_clients(); });
        closed.add_done_callback([self, finished, deadline]() mutable {
            deadline.cancel();
            if (!finished.done()) finished.set_result();
        });
    });
    return finished;
}

}  // namespace detail

StreamServer start_server(reactor::Scheduler& sched, const reactor::Address& address, StreamServer::Handler handler,
                          StreamOptions options) {
    if (!handler) throw std::invalid_argument("start_server: empty handler");
    StreamServer server;
    server.core_ = std::make_shared<detail::ServerCore>(sched, std::move(handler), options);
    server.core_->listen(address);
    return server;
}

Future<StreamServer> start_server(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                                  StreamServer::Handler handler, StreamOptions options) {
    if (!handler) throw std::invalid_argument("start_server: empty handler");
    std::optional<reactor::Address> numeric;
    try {
        numeric = reactor::Address::parse(host, port);
    } catch (const std::invalid_argument&) {
        // a name: looked up on the pool first
    }
    if (numeric) {
        try {
            return make_ready_future(sched, start_server(sched, *numeric, std::move(handler), options));
        } catch (const std::system_error&) {
            return make_exception_future<StreamServer>(sched, std::current_exception());
        }
    }
    return resolve(sched, host, port)
        .then([&sched, handler = std::move(handler), options](std::vector<reactor::Address> addresses) mutable {
            return start_server(sched, addresses.front(), std::move(handler), options);
        });
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
void StreamServer::close_clients() {
    if (core_) core_->close_clients();
}
void StreamServer::abort_clients() {
    if (core_) core_->abort_clients();
}
Future<void> StreamServer::wait_closed() {
    if (!core_) throw InvalidStateError("futures: empty StreamServer");
    return core_->wait_closed();
}
Future<void> StreamServer::serve_until(Future<void> stop, reactor::Duration drain) {
    if (!core_) throw InvalidStateError("futures: empty StreamServer");
    if (!stop.valid()) throw std::invalid_argument("serve_until: empty stop future");
    return core_->serve_until(std::move(stop), drain);
}

}  // namespace futures
