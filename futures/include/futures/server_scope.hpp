// SPDX-License-Identifier: MIT
// futures::ServerScope: what start_server gives its own conversations, for a
// server whose connections a reactor listener hands over: a GroupListener's
// loops (one ServerScope per loop), or a reactor::Listener of one's own.
// Each conversation given to follow() is a counted child of a supervising
// scope on its loop (no entry, no byte per connection: the stream's own
// waiter follows it), and its stream is closed when it completes; a failed
// conversation is reported once, as it ends, to the loop's exception
// handler, naming the conversation's line (never "never retrieved").
//
// The scope holds the loop's server gate (reactor::ServerGate, the
// listener's connections().gate()), so reactor::ServerLifetime and
// GroupServerLifetime end only after every conversation and the
// continuations it queued (its catch_error, its finally) have run: when the
// lifetime closes the gate (the loop's listener closed, its last connection
// gone) the scope is closed, and lets go of the gate once it has settled.
//
//   std::vector<futures::ServerScope> scopes;   // before the group starts
//   for (std::size_t i = 0; i < group.size(); ++i) scopes.emplace_back(listener->connections_on(i).gate());
//   ... in the accept callback, on loop i:
//   scopes[i].follow(stream, futures::spawn(group.loop(i), Session(stream)));
//
// Made on any thread before its loop runs (it touches nothing of the loop
// until the first follow()); follow() and active() on the loop's thread.
// Copies share one scope. It may go before its conversations end, but not
// after its loop's Scheduler (declare it after the LoopGroup).
#pragma once

#include <cstddef>
#include <memory>
#include <source_location>

#include <reactor/export.hpp>
#include <reactor/net/server_gate.hpp>

#include "futures/future.hpp"
#include "futures/stream.hpp"

namespace futures {

namespace detail {
class ServerScopeCore;
}

class REACTOR_API ServerScope {
public:
    // `where` names the server in reports.
    explicit ServerScope(reactor::ServerGate& gate, std::source_location where = std::source_location::current());

    // Runs `conversation` in the server's scope; closes `stream` when it
    // completes (at once for an empty future). Loop thread only.
    void follow(const Stream& stream, const Future<void>& conversation);
    // Conversations not complete yet.
    std::size_t active() const;

private:
    std::shared_ptr<detail::ServerScopeCore> core_;
};

}  // namespace futures
