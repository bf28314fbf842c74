// SPDX-License-Identifier: MIT
// reactor::ConnectionSet: the connections still open among those added to
// it. A Listener keeps one with every connection it accepted, which is what a
// graceful shutdown needs (asyncio's Server.close_clients(), abort_clients()
// and wait_closed()): close or abort them all, and learn when the last one
// has closed.
//
// A connection leaves the set when it closes (for any reason), so the set
// never keeps a connection alive and never holds a closed one. It belongs to
// one set at most: adding it to another moves it, and to one set of its own
// loop (std::invalid_argument otherwise). Keeps no list: a member names its
// set (a plain pointer, cleared as it leaves) and the set counts them, so a
// member costs the set nothing (issue 22: a listener's set has every
// connection). close_all() and abort_all() find the members among the loop's
// open connections, in fd order. Owned through a ConnectionSetPtr
// (reactor/ref.hpp), and by itself while it has members (one count of its
// own; they hold it by plain pointer): a when_empty() callback still runs
// when whoever made the set (a Listener) is gone first. Loop thread only;
// never calls back synchronously.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/net/server_gate.hpp"
#include "reactor/ref.hpp"
#include "reactor/scheduler.hpp"

namespace reactor {

class ConnectionSet;
using ConnectionSetPtr = Ref<ConnectionSet>;

class REACTOR_API ConnectionSet final : public RefCounted {
    struct Passkey {};

public:
    static ConnectionSetPtr create(Scheduler& sched) { return make_ref<ConnectionSet>(Passkey{}, sched); }
    ConnectionSet(Passkey, Scheduler& sched) : sched_(sched), gate_(ServerGate::create(sched)) {}
    ConnectionSet(const ConnectionSet&) = delete;
    ConnectionSet& operator=(const ConnectionSet&) = delete;

    // Adds an open connection of this set's loop (a closed one is ignored).
    void add(const ConnectionPtr& conn);
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }

    // Graceful close() (flushing output first) of every member.
    void close_all();
    // abort() of every member: output discarded, closed now.
    void abort_all();
    // `cb` runs once, on a later iteration, when the set becomes empty: after
    // the close callback of its last member (on the next iteration if it is
    // empty now).
    void when_empty(std::function<void()> cb);
    // `hook` runs synchronously, on the loop thread, each time a member
    // leaves the set (it closed, or joined another set): for a count kept
    // off the loop (GroupListener's live connections per loop). It must not
    // throw and must not touch the set or the connection.
    void set_leave_hook(std::function<void()> hook) { leave_hook_ = std::move(hook); }
    // The server's gate on this loop (server_gate.hpp): work started for
    // these connections that the server's end waits for too. when_empty()
    // does not wait for it; ServerLifetime does.
    ServerGate& gate() const noexcept { return *gate_; }

private:
    friend class Connection;
    void remove(Connection& conn);  // by Connection, as it closes
    void schedule_waiters();
    std::vector<ConnectionPtr> snapshot() const;

    Scheduler& sched_;
    std::size_t size_ = 0;  // the open connections whose set_ is this
    std::function<void()> leave_hook_;
    std::vector<std::function<void()>> empty_waiters_;
    ServerGatePtr gate_;
};

}  // namespace reactor
