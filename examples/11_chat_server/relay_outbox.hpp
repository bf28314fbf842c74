// SPDX-License-Identifier: MIT
// relay_outbox.hpp: what one loop's room has to tell the rooms of the other
// loops, batched. Everything said during one pass of the loop goes out as ONE
// post per other loop (call_soon_threadsafe, made by a flush the first
// addition schedules with call_soon), so a busy loop pays a post per peer per
// pass, not one per line. The posts to a peer run there in the order made
// (FIFO per sender), so what a room relays arrives in the order it said it.
// Owned by one room, on that room's loop: loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <reactor/scheduler.hpp>

namespace examples {

// One batch for one other loop: the text for its clients, how the number of
// clients over here changed, how many client lines the text holds.
struct Relay {
    std::string text;
    std::int64_t members = 0;
    std::uint64_t lines = 0;
};

class RelayOutbox {
public:
    // Hands a batch to one other loop; run on this loop's thread.
    using Post = std::function<void(Relay)>;

    RelayOutbox(reactor::Scheduler& loop, std::size_t index) : loop_(loop), index_(index) {}
    RelayOutbox(const RelayOutbox&) = delete;
    RelayOutbox& operator=(const RelayOutbox&) = delete;

    // Before the loops run: one Post per loop, this one's (at `index`) unused.
    void connect(std::vector<Post> peers) {
        peers_ = std::move(peers);
        batches_.assign(peers_.size(), Relay{});
    }
    // Queues `text` (`lines` client lines; `members` clients more or fewer
    // here) for every other loop; it goes out on the next pass.
    void add(const std::string& text, std::int64_t members, std::uint64_t lines) {
        if (peers_.size() <= 1) return;  // one loop: nobody else to tell
        for (std::size_t i = 0; i < peers_.size(); ++i) {
            if (i == index_) continue;
            batches_[i].text += text;
            batches_[i].members += members;
            batches_[i].lines += lines;
        }
        schedule_flush();
    }
    std::uint64_t posts() const noexcept { return posts_; }

private:
    void schedule_flush() {
        if (std::exchange(flush_scheduled_, true)) return;
        loop_.call_soon([this] { flush(); });
    }

    void flush() {
        flush_scheduled_ = false;
        for (std::size_t i = 0; i < peers_.size(); ++i) {
            if (i == index_ || (batches_[i].text.empty() && batches_[i].members == 0)) continue;
            ++posts_;
            peers_[i](std::exchange(batches_[i], Relay{}));
        }
    }

    reactor::Scheduler& loop_;
    std::size_t index_;
    std::vector<Post> peers_;
    std::vector<Relay> batches_;  // per loop: what goes out at the next flush
    bool flush_scheduled_ = false;
    std::uint64_t posts_ = 0;
};

}  // namespace examples
