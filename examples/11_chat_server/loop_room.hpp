// SPDX-License-Identifier: MIT
// loop_room.hpp: the chat room's share on one loop, the clients that loop
// owns. Loop thread only, like every object of a loop; with one loop it is
// the whole room.
//
// With several loops (--loops N) there is one LoopRoom per loop and nothing
// shared between them: a line is written to the clients of this loop, and
// relayed (relay_outbox.hpp: one batched post per other loop and pass) to the
// other loops, whose own rooms write it to their own clients. Every message
// of a client (joined, its lines, left) travels in this loop's posts, in the
// order said: each client's lines reach every loop in order.
//
// Ids stay unique without a shared counter: loop i of N gives i+1, i+1+N,
// i+1+2N... (with one loop: 1, 2, 3...). A room knows how many clients the
// other loops have from the joins and leaves they post, so "N other(s) here"
// counts the whole room as this loop has heard of it; a join it has not heard
// of yet is announced to its clients when it arrives.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <reactor/net/line_reader.hpp>
#include <reactor/scheduler.hpp>

#include "relay_outbox.hpp"

namespace examples {

class LoopRoom {
public:
    struct Limits {
        std::size_t max_line, max_backlog;
    };

    LoopRoom(reactor::Scheduler& loop, std::size_t index, std::size_t loops, Limits limits)
        : loop_(loop), loops_(loops), limits_(limits), next_id_(index + 1), outbox_(loop, index) {}
    LoopRoom(const LoopRoom&) = delete;
    LoopRoom& operator=(const LoopRoom&) = delete;

    // Before the loops run: every loop's room, this one at its own index.
    // The others are only posted to, never touched from here.
    void link(const std::vector<LoopRoom*>& rooms) {
        std::vector<RelayOutbox::Post> posts;
        for (LoopRoom* peer : rooms) {
            posts.push_back([peer](Relay relay) {
                // Refused once that loop has ended (the server is stopping):
                // its clients are gone, nobody is left to tell.
                (void)peer->loop_.try_call_soon_threadsafe(
                    [peer, relay = std::move(relay)] { peer->receive(relay); });
            });
        }
        outbox_.connect(std::move(posts));
    }

    void join(const reactor::ConnectionPtr& c);
    // To every client of the whole room: the server's own lines.
    void announce(const std::string& text) {
        broadcast(nullptr, text);
        outbox_.add(text, 0, 0);
    }

    reactor::Scheduler& loop() const noexcept { return loop_; }
    std::size_t clients() const noexcept { return members_.size(); }
    std::uint64_t served() const noexcept { return served_; }
    std::uint64_t lines_heard() const noexcept { return lines_heard_; }
    std::uint64_t lines_from_peers() const noexcept { return lines_from_peers_; }
    std::uint64_t posts_out() const noexcept { return outbox_.posts(); }

private:
    struct Member {
        reactor::Connection* conn = nullptr;
        bool dropped = false;
    };

    void on_line(reactor::Connection& c, std::uint64_t id, std::string_view line) {
        ++lines_heard_;
        const std::string text = fmt::format("#{}: {}\n", id, line);
        broadcast(&c, text);
        outbox_.add(text, 0, 1);
    }

    // To every client of this loop but `from` (null: to all).
    void broadcast(const reactor::Connection* from, const std::string& text) {
        // write() may call a high-water callback, which only aborts: the
        // member set changes later, in close callbacks, so iterating is safe.
        for (auto& [id, member] : members_)
            if (member.conn != from && !member.dropped) member.conn->write(text);
    }

    void drop(reactor::Connection& c, std::uint64_t id, std::string_view why);
    void leave(reactor::Connection& c, std::uint64_t id, const reactor::CloseReason& why);

    // On this loop, posted by another one.
    void receive(const Relay& relay) {
        remote_members_ += relay.members;
        lines_from_peers_ += relay.lines;
        if (!relay.text.empty()) broadcast(nullptr, relay.text);
    }

    reactor::Scheduler& loop_;
    std::size_t loops_;
    Limits limits_;
    std::uint64_t next_id_;
    // By id, so a line goes out to the members in the order they joined:
    // keyed by the connection's address, the order would be the heap's, and
    // a run of the room in a simulated world would not replay from its seed
    // (tests/test_sim_examples.cpp). Each connection is valid until its
    // close callback, which removes it.
    std::map<std::uint64_t, Member> members_;
    std::int64_t remote_members_ = 0;  // the other loops' clients, as far as they have told us
    RelayOutbox outbox_;
    std::uint64_t served_ = 0, lines_heard_ = 0, lines_from_peers_ = 0;
};

inline void LoopRoom::join(const reactor::ConnectionPtr& c) {
    ++served_;
    const std::uint64_t id = std::exchange(next_id_, next_id_ + loops_);
    members_[id] = Member{c.get(), false};
    c->set_water_marks(limits_.max_backlog, limits_.max_backlog / 4);
    c->set_high_water_callback([this, id](reactor::Connection& c) { drop(c, id, "too slow"); });
    // One call per line, without its "\n" or "\r\n"; a line longer than
    // --max-line closes the connection (CloseKind::line_too_long: see leave).
    reactor::LineReader::attach(
        c, [this, id](reactor::Connection& c, std::string_view line) { on_line(c, id, line); },
        {.max_length = limits_.max_line});
    c->set_close_callback([this, id](reactor::Connection& c, const reactor::CloseReason& why) { leave(c, id, why); });
    const auto others = static_cast<std::int64_t>(members_.size() - 1) + remote_members_;
    c->write(fmt::format("* you are #{}; {} other(s) here\n", id, others));
    const std::string joined = fmt::format("* #{} joined\n", id);
    broadcast(c.get(), joined);
    outbox_.add(joined, 1, 0);
}

inline void LoopRoom::drop(reactor::Connection& c, std::uint64_t id, std::string_view why) {
    Member& m = members_.at(id);
    if (m.dropped) return;
    m.dropped = true;
    fmt::print(stderr, "chat_server: dropping #{}: {}\n", id, why);
    c.abort();
    const std::string text = fmt::format("* #{} dropped: {}\n", id, why);
    broadcast(&c, text);
    outbox_.add(text, 0, 0);
}

// --idle-timeout ended it (silent, or not reading what it was sent), its
// line was too long, or it left.
inline void LoopRoom::leave(reactor::Connection& c, std::uint64_t id, const reactor::CloseReason& why) {
    if (why.kind == reactor::CloseKind::line_too_long) drop(c, id, "line too long");  // already closed: drop() tells
    const Member m = members_.extract(id).mapped();
    const bool timed_out =
        why.kind == reactor::CloseKind::idle_timeout || why.kind == reactor::CloseKind::write_timeout;
    const std::string text = m.dropped ? std::string() : fmt::format("* #{} {}\n", id, timed_out ? "timed out" : "left");
    if (!text.empty()) broadcast(&c, text);
    outbox_.add(text, -1, 0);
}

}  // namespace examples
