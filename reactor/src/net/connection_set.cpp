// SPDX-License-Identifier: MIT
// ConnectionSet: membership by index (each member knows its slot, so leaving
// is O(1): the last member takes the slot), and the when_empty waiters.
#include "reactor/net/connection_set.hpp"

#include <cstdint>
#include <stdexcept>
#include <utility>

namespace reactor {

// An open member owns its fd in the loop (Connection::start).
Connection& ConnectionSet::member(int fd) const noexcept { return static_cast<Connection&>(*sched_.fd_owner(fd)); }

void ConnectionSet::add(const ConnectionPtr& conn) {
    if (!conn || conn->state() == Connection::State::closed) return;
    if (conn->set_ == this) return;
    if (&conn->scheduler() != &sched_)
        throw std::invalid_argument("ConnectionSet::add: the connection belongs to another loop than the set");
    if (ConnectionSet* old = std::exchange(conn->set_, nullptr)) old->remove(*conn);  // may free `old`
    members_.push_back(conn->fd_);
    if (members_.size() == 1) self_ = shared_from_this();
    conn->set_ = this;
    conn->set_index_ = static_cast<std::uint32_t>(members_.size() - 1);
}

// Also as the member closes, its fd already given back: only the member
// that takes its slot is looked up.
void ConnectionSet::remove(Connection& conn) {
    const std::uint32_t i = conn.set_index_;
    const auto last = static_cast<std::uint32_t>(members_.size() - 1);
    if (i != last) {
        members_[i] = members_[last];
        member(members_[i]).set_index_ = i;
    }
    members_.pop_back();
    if (leave_hook_) leave_hook_();
    if (members_.empty()) {
        schedule_waiters();
        // Last: this may free the set, when nobody else holds it.
        auto release = std::move(self_);
    }
}

std::vector<ConnectionPtr> ConnectionSet::snapshot() const {
    // Closing removes members: iterate over owning copies.
    std::vector<ConnectionPtr> all;
    all.reserve(members_.size());
    for (int fd : members_) all.push_back(member(fd).shared_from_this());
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
    if (members_.empty()) schedule_waiters();
}

// Queued behind the close callback of the member that left last (Connection
// queues that first), so a waiter sees every close callback done.
void ConnectionSet::schedule_waiters() {
    for (auto& cb : std::exchange(empty_waiters_, {})) sched_.call_soon(std::move(cb));
}

}  // namespace reactor
