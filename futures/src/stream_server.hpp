// SPDX-License-Identifier: MIT
// Internal: the state behind a StreamServer. Owns the listener, counts the
// conversations still running, and waits for them in a supervising
// futures::Scope (the server's scope: wait_closed and serve_until wait for it
// to settle); the listener's accept callback refers to it weakly, so the
// StreamServer handles alone decide how long it lives. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <utility>

#include <reactor/net/address.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/net/listener.hpp>

#include "futures/detail/ref.hpp"
#include "futures/scope.hpp"
#include "futures/stream.hpp"

#include "active_count.hpp"

namespace futures::detail {

// A server's supervising scope for its conversations: a conversation that
// fails goes where an error nobody retrieved goes (the loop's exception
// handler), once, as it ends, as "<server>: a conversation failed" with the
// conversation's own line; never as "never retrieved".
ScopeOptions conversation_scope(reactor::Scheduler& sched, std::string server);

class ServerCore : public std::enable_shared_from_this<ServerCore> {
public:
    // `where`: the user's start_server call, which names the server.
    ServerCore(reactor::Scheduler& sched, StreamServer::Handler handler, const StreamOptions& options,
               std::source_location where)
        : sched_(sched), handler_(std::move(handler)), options_(options), where_(where) {}
    ServerCore(const ServerCore&) = delete;
    ServerCore& operator=(const ServerCore&) = delete;
    ~ServerCore();

    // Binds and starts accepting; once, right after construction. Throws
    // like reactor::Listener::listen.
    void listen(const reactor::Address& address);

    const reactor::Address& address() const { return listener_->address(); }
    void close() { listener_->close(); }  // conversations in progress go on
    bool is_serving() const { return listener_->is_listening(); }
    std::size_t active() const { return active_->active; }
    std::uint64_t accepted() const { return listener_->accepted(); }
    std::uint64_t turned_away() const { return listener_->turned_away(); }
    void close_clients() { listener_->connections().close_all(); }
    void abort_clients() { listener_->connections().abort_all(); }
    Future<void> wait_closed(std::source_location where);
    Future<void> serve_until(Future<void> stop, reactor::Duration drain, std::source_location where);

private:
    void on_accept(const reactor::ConnectionPtr& conn);

    reactor::Scheduler& sched_;
    StreamServer::Handler handler_;
    StreamOptions options_;
    std::source_location where_;
    reactor::ListenerPtr listener_;
    // Conversations whose future is not complete yet. A count, not a table of
    // their streams: an idle connection pays for what the server keeps.
    Ref<ActiveCount> active_ = Ref<ActiveCount>::adopt(new ActiveCount(where_));
    // The server's scope (supervise: a conversation fails alone, its error
    // goes to the loop's exception handler naming the server and the
    // conversation). Each conversation is a counted child, followed by its
    // stream's waiter (StreamCore::follow): an idle connection pays nothing
    // for it. Shared with the listener's wait_closed callback, which closes
    // it once the listener is closed and its connections are gone (no
    // conversation can start any more), also after this core is gone.
    std::shared_ptr<Scope> handlers_;
};

}  // namespace futures::detail
