// SPDX-License-Identifier: MIT
// ConnectionSet: membership as a count (each member names its set), the
// members found among the loop's open connections, and the when_empty
// waiters.
#include "reactor/net/connection_set.hpp"

#include <stdexcept>
#include <utility>

#include "open_connections.hpp"

namespace reactor {

void ConnectionSet::add(const ConnectionPtr& conn) {
    if (!conn || conn->state() == Connection::State::closed) return;
    if (conn->set_ == this) return;
    if (&conn->scheduler() != &sched_)
        throw std::invalid_argument("ConnectionSet::add: the connection belongs to another loop than the set");
    if (ConnectionSet* old = std::exchange(conn->set_, nullptr)) old->remove(*conn);  // may free `old`
    if (++size_ == 1) add_ref();  // it holds itself while it has members
    conn->set_ = this;
}

// By the member as it leaves (it closes, or joins another set).
void ConnectionSet::remove(Connection& /*leaving*/) {
    --size_;
    if (leave_hook_) leave_hook_();
    if (size_ == 0) {
        schedule_waiters();
        // Last: this may free the set, when nobody else holds it.
        ConnectionSetPtr::adopt(this).reset();
    }
}

std::vector<ConnectionPtr> ConnectionSet::snapshot() const {
    // Closing removes members: iterate over owning copies.
    std::vector<ConnectionPtr> all;
    const auto* open = sched_.find_service<detail::OpenConnections>();
    if (size_ == 0 || !open) return all;
    all.reserve(size_);
    open->for_each([&](Connection& c) {
        if (c.set_ == this) all.push_back(c.shared_from_this());
    });
    return all;
}

void ConnectionSet::close_all() {
    for (const auto& c : snapshot()) c->close();
}

void ConnectionSet::abort_all() {
    for (const auto& c : snapshot()) c->abort();
}

void ConnectionSet::when_empty(std::function<void()> cb) {
    if (!cb) return;
    empty_waiters_.push_back(std::move(cb));
    if (size_ == 0) schedule_waiters();
}

// Queued behind the close callback of the member that left last (Connection
// queues that first), so a waiter sees every close callback done.
void ConnectionSet::schedule_waiters() {
    for (auto& cb : std::exchange(empty_waiters_, {})) sched_.call_soon(std::move(cb));
}

}  // namespace reactor
