// SPDX-License-Identifier: MIT
// loop_report.hpp: `kill -USR1 <pid>` on a chat_server with several loops
// prints one stdout line per loop, in loop order:
//   chat_server: loop 1: 2 client(s), 10000 line(s) heard, 40000 from other loops, 312 post(s) out;
//                <the loop's stats()>
// (one line each). Each loop describes itself, on its own thread, through
// futures::submit_to; loop 0, which owns the signal, prints once every loop
// has answered (a loop that has ended answers "ended"). A signal that comes
// while a report is on its way is folded into it. Loop 0 thread only.
#pragma once

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/submit_to.hpp>
#include <reactor/loop_group.hpp>

#include "loop_room.hpp"

namespace examples {

// What a loop says of itself; on that loop's thread.
inline std::string describe_loop(const LoopRoom& room) {
    const reactor::LoopStats s = room.loop().stats();
    return fmt::format(
        "{} client(s), {} line(s) heard, {} from other loops, {} post(s) out; {} iterations, {} callbacks run, "
        "{} fd events, {} posts taken, {} wake-up writes",
        room.clients(), room.lines_heard(), room.lines_from_peers(), room.posts_out(), s.iterations, s.callbacks_run,
        s.io_events, s.posts_taken, s.wakeup_writes);
}

class LoopReport {
public:
    LoopReport(reactor::LoopGroup& group, std::vector<LoopRoom*> rooms, std::string name)
        : group_(group), rooms_(std::move(rooms)), name_(std::move(name)) {
        group_.loop(0).add_signal_handler(SIGUSR1, [this] { start(); });
    }
    LoopReport(const LoopReport&) = delete;
    LoopReport& operator=(const LoopReport&) = delete;
    ~LoopReport() { group_.loop(0).remove_signal_handler(SIGUSR1); }

private:
    // The loop had ended (LoopClosedError), or loop 0 is closing.
    static bool ended(const futures::Future<std::string>& line) { return line.status() != futures::Status::done; }

    void start() {
        if (report_.valid() && !report_.done()) return;
        reactor::Scheduler& here = group_.loop(0);
        std::vector<futures::Future<std::string>> lines;
        for (LoopRoom* room : rooms_)
            lines.push_back(futures::submit_to(here, room->loop(), [room] { return describe_loop(*room); }));
        report_ = futures::when_all_settled(here, lines);
        report_.add_done_callback([this](futures::Future<std::vector<futures::Future<std::string>>>& all) {
            if (all.cancelled()) return;  // loop 0 is closing
            const auto& lines = all.result();
            for (std::size_t i = 0; i < lines.size(); ++i)
                fmt::print("{}: loop {}: {}\n", name_, i, ended(lines[i]) ? "ended" : lines[i].result());
            std::fflush(stdout);
        });
    }

    reactor::LoopGroup& group_;
    std::vector<LoopRoom*> rooms_;
    std::string name_;
    futures::Future<std::vector<futures::Future<std::string>>> report_;
};

}  // namespace examples
