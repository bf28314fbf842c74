// SPDX-License-Identifier: MIT
// loop_room.hpp: the chat room's share on one loop, the clients that loop
// owns. Loop thread only, like every object of a loop; with one loop it is
// the whole room.
//
// With several loops (--loops N) there is one LoopRoom per loop and nothing
// shared between them: what is said here is written to this loop's clients
// and relayed to the other loops' rooms, which write it to theirs. The relay
// is batched: all that is said during one pass of the loop goes out as ONE
// post per other loop (call_soon_threadsafe, from a flush scheduled with
// call_soon), so a busy loop pays a post per peer per pass, not one per line.
// Posts from one loop run in the order made (FIFO per sender), and a client's
// joining, lines and leaving travel in them in that order: each client's
// lines reach every loop in order.
//
// Ids stay unique without a shared counter: loop i of N gives i+1, i+1+N,
// i+1+2N... (with one loop: 1, 2, 3...). A room knows how many clients the
// other loops have from the joins and leaves they post, so "N other(s) here"
// counts the whole room as this loop has heard of it; a join it has not heard
// of yet is announced to its clients when it arrives.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <reactor/loop_stats.hpp>
#include <reactor/net/line_reader.hpp>
#include <reactor/scheduler.hpp>

namespace examples {

class LoopRoom {
public:
    struct Limits {
        std::size_t max_line, max_backlog;
    };

    LoopRoom(reactor::Scheduler& loop, std::size_t index, std::size_t loops, Limits limits)
        : loop_(loop), loops_(loops), limits_(limits), next_id_(index + 1) {}
    LoopRoom(const LoopRoom&) = delete;
    LoopRoom& operator=(const LoopRoom&) = delete;

    // Before the loops run: every loop's room, this one included. The others
    // are only posted to, never touched from here.
    void link(std::vector<LoopRoom*> rooms) { rooms_ = std::move(rooms); }

    void join(const reactor::ConnectionPtr& c);
    // To every client of the whole room: the server's own lines.
    void announce(const std::string& text) { tell(nullptr, text); }

    std::uint64_t lines_heard() const noexcept { return lines_heard_; }
    std::uint64_t posts_out() const noexcept { return posts_out_; }
    // SIGUSR1 with several loops: what this room has seen, and its loop's stats.
    std::string describe() const {
        const reactor::LoopStats s = loop_.stats();
        return fmt::format("{} client(s), {} line(s) heard, {} from other loops, {} post(s) out; {} iterations, {} "
                           "callbacks run, {} fd events, {} posts taken, {} wake-up writes",
                           members_.size(), lines_heard_, lines_from_peers_, posts_out_, s.iterations,
                           s.callbacks_run, s.io_events, s.posts_taken, s.wakeup_writes);
    }

private:
    struct Relay {                 // one pass's batch for the other loops
        std::string text;          // for their clients
        std::int64_t members = 0;  // how many clients more (or fewer) over here
        std::uint64_t lines = 0;   // client lines in `text`
    };

    void on_line(reactor::Connection& c, std::uint64_t id, std::string_view line) {
        ++lines_heard_;
        tell(&c, fmt::format("#{}: {}\n", id, line), 0, 1);
    }

    // To every client of this loop but `from` (null: to all); "" writes nothing.
    void broadcast(const reactor::Connection* from, const std::string& text) {
        // write() may call a high-water callback, which only aborts: the
        // member set changes later, in close callbacks, so iterating is safe.
        for (auto& [id, conn] : members_)
            if (conn != nullptr && conn != from) conn->write(text);
    }

    void drop(reactor::Connection& c, std::uint64_t id, std::string_view why) {
        if (std::exchange(members_.at(id), nullptr) == nullptr) return;  // dropped already
        fmt::print(stderr, "chat_server: dropping #{}: {}\n", id, why);
        c.abort();
        tell(&c, fmt::format("* #{} dropped: {}\n", id, why));
    }

    // --idle-timeout ended it (silent, or not reading what it was sent), its
    // line was too long, or it left.
    void leave(reactor::Connection& c, std::uint64_t id, const reactor::CloseReason& why) {
        if (why.kind == reactor::CloseKind::line_too_long) drop(c, id, "line too long");  // closed: drop() tells
        const bool dropped = members_.extract(id).mapped() == nullptr;
        const bool timed_out =
            why.kind == reactor::CloseKind::idle_timeout || why.kind == reactor::CloseKind::write_timeout;
        // Dropped: the others were told already; but the count goes down.
        tell(&c, dropped ? std::string() : fmt::format("* #{} {}\n", id, timed_out ? "timed out" : "left"), -1);
    }

    // What is said here: to this loop's clients but `from` now, and to the
    // other loops' in the batch that goes out on the next pass (`members`
    // and `lines` as in Relay).
    void tell(const reactor::Connection* from, const std::string& text, std::int64_t members = 0,
              std::uint64_t lines = 0) {
        broadcast(from, text);
        if (rooms_.size() <= 1) return;  // one loop: nobody else to tell
        outgoing_.text += text;
        outgoing_.members += members;
        outgoing_.lines += lines;
        if (!std::exchange(flush_scheduled_, true)) loop_.call_soon([this] { flush(); });
    }

    void flush() {
        flush_scheduled_ = false;
        for (LoopRoom* peer : rooms_) {
            if (peer == this) continue;
            ++posts_out_;
            // Refused once that loop has ended (the server is stopping):
            // its clients are gone, nobody is left to tell.
            (void)peer->loop_.try_call_soon_threadsafe([peer, relay = outgoing_] { peer->receive(relay); });
        }
        outgoing_ = Relay{};
    }

    // On this loop, posted by another one.
    void receive(const Relay& relay) {
        remote_members_ += relay.members;
        lines_from_peers_ += relay.lines;
        broadcast(nullptr, relay.text);
    }

    reactor::Scheduler& loop_;
    std::size_t loops_;
    Limits limits_;
    std::uint64_t next_id_;
    // By id, so a line goes out to the members in the order they joined:
    // keyed by the connection's address, the order would be the heap's, and
    // a run of the room in a simulated world would not replay from its seed
    // (tests/test_sim_examples.cpp). Each connection is valid until its
    // close callback, which removes it; null from drop() until then.
    std::map<std::uint64_t, reactor::Connection*> members_;
    std::int64_t remote_members_ = 0;  // the other loops' clients, as far as they have told us
    std::vector<LoopRoom*> rooms_;     // every loop's, this one's included
    Relay outgoing_;                   // what the next flush posts to each of the others
    bool flush_scheduled_ = false;
    std::uint64_t lines_heard_ = 0, lines_from_peers_ = 0, posts_out_ = 0;
};

inline void LoopRoom::join(const reactor::ConnectionPtr& c) {
    const std::uint64_t id = std::exchange(next_id_, next_id_ + loops_);
    members_[id] = c.get();
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
    tell(c.get(), fmt::format("* #{} joined\n", id), 1);
}

}  // namespace examples
