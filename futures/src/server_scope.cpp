// SPDX-License-Identifier: MIT
// ServerScope: a server's supervising scope on one loop, made at its first
// conversation, holding the loop's server gate until it has settled (see
// server_scope.hpp). Its conversations are counted children, followed by
// their streams' waiters (StreamCore::follow), as start_server's are.
#include "futures/server_scope.hpp"

#include <utility>

#include <fmt/format.h>
#include <reactor/error_context.hpp>

#include "active_count.hpp"
#include "futures/scope.hpp"
#include "stream_core.hpp"
#include "stream_server.hpp"

namespace futures {
namespace detail {

class ServerScopeCore {
public:
    ServerScopeCore(reactor::ServerGatePtr gate, std::source_location where)
        : gate_(std::move(gate)), where_(where), active_(Ref<ActiveCount>::adopt(new ActiveCount(where))) {}
    ServerScopeCore(const ServerScopeCore&) = delete;
    ServerScopeCore& operator=(const ServerScopeCore&) = delete;
    // The scope stays with the gate's hook, which closes it: dropping the
    // handle (on any thread) changes nothing for the conversations.

    void follow(const Stream& stream, const Future<void>& conversation) {
        if (!started_ && conversation.valid()) start(stream.scheduler());
        stream.core().follow(active_, conversation);
    }
    std::size_t active() const { return active_->active; }

private:
    // On the loop, at the first conversation: the scope, and its hold on the
    // gate, let go of once the scope has settled after the gate's close.
    void start(reactor::Scheduler& sched) {
        started_ = true;
        if (gate_->closing()) return;  // the server's end has begun: conversations run outside any scope
        ScopeOptions options = conversation_scope(
            sched, fmt::format("server (its scope made at {}:{})", where_.file_name(), where_.line()));
        scope_ = std::make_shared<Scope>(sched, std::move(options), where_);
        active_->scope = Ref<ScopeState>(&scope_->state());
        // Held by hand, not by a Hold: the gate keeps this hook, and a hook
        // that kept the gate would keep both forever if the gate never closed.
        gate_->enter();
        gate_->on_close([scope = scope_, gate = std::weak_ptr<reactor::ServerGate>(gate_), where = where_] {
            auto leave = [gate] {
                if (auto g = gate.lock()) g->leave();
            };
            if (scope->settled()) return leave();  // ended with its loop
            (void)scope->close(where).add_done_callback(leave, where);
        });
    }

    reactor::ServerGatePtr gate_;
    std::source_location where_;
    Ref<ActiveCount> active_;
    std::shared_ptr<Scope> scope_;  // and the gate's close hook
    bool started_ = false;
};

}  // namespace detail

ServerScope::ServerScope(reactor::ServerGate& gate, std::source_location where)
    : core_(std::make_shared<detail::ServerScopeCore>(gate.shared_from_this(), where)) {}

void ServerScope::follow(const Stream& stream, const Future<void>& conversation) {
    core_->follow(stream, conversation);
}

std::size_t ServerScope::active() const { return core_->active(); }

}  // namespace futures
