// SPDX-License-Identifier: MIT
// console.hpp: chat_server's --console, the server's own voice in the room.
// Each line typed on the server's stdin goes to every client of the room as
// "* server: <line>"; the end of input (Ctrl-D, or the writer of a pipe
// closing it) goes to `on_end`, once.
//
// stdin is a futures::Stream (open_stdio: a terminal or a pipe, never taken
// from the rest of the program), read one line at a time by a hand-written
// task, as fetch_ms (step 08) reads its one line: each step takes what the
// last read brought and starts the next. A line longer than the limit is
// skipped with a note on stderr, not sent in pieces.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <futures/futures.hpp>

#include "loop_room.hpp"

namespace examples {

// stdin as a stream of lines of at most `max_line` bytes, or exit 1 naming
// why not: a regular file (`< file`) or a directory has no "not ready yet"
// for the loop to wait on, so open_stdio refuses it.
inline futures::Stream open_console_or_exit(reactor::Scheduler& sched, std::size_t max_line) {
    futures::StreamOptions options;
    options.limit = max_line + 2;  // the line and its "\r\n"
    try {
        return futures::open_stdio(sched, STDIN_FILENO, options);
    } catch (const std::exception& e) {
        fmt::print(stderr, "chat_server: --console needs stdin to be a terminal or a pipe: {}\n", e.what());
        std::exit(1);
    }
}

class Console {
public:
    using OnEnd = std::function<void(std::string_view why)>;

    // Opens stdin at once (open_console_or_exit) on `sched`, the room's loop.
    Console(reactor::Scheduler& sched, LoopRoom& room, std::size_t max_line, OnEnd on_end)
        : input_(open_console_or_exit(sched, max_line)), room_(room), max_line_(max_line), on_end_(std::move(on_end)) {}

    futures::Step<void> resume() {
        if (read_.valid()) {
            try {
                const std::string line = read_.result();
                // Skipping, this is the last of the line if it ends with '\n'
                // (what read_until gives always does).
                if (skipping_) skipping_ = !line.ends_with('\n');
                else pass_on(std::string_view(line).substr(0, line.size() - 1));  // without its '\n'
            } catch (const futures::IncompleteReadError& eof) {
                if (!eof.partial.empty() && !skipping_) pass_on(eof.partial);  // a last line without '\n'
                on_end_("end of input");
                return futures::finished;
            } catch (const futures::LimitOverrunError& too_long) {
                if (!std::exchange(skipping_, true)) note_too_long();
                return read_ = input_.read_exactly(too_long.consumed);  // what read_until would have taken
            } catch (const std::system_error& e) {  // EIO: the terminal is gone
                on_end_(e.what());
                return futures::finished;
            }
        }
        return read_ = input_.read_until("\n");
    }

    // For the live-task list (SIGUSR1).
    std::string_view state_name() const { return skipping_ ? "skipping a long line" : "reading a line"; }

private:
    void pass_on(std::string_view line) const {
        if (line.ends_with('\r')) line.remove_suffix(1);
        if (line.size() > max_line_) return note_too_long();
        room_.announce(fmt::format("* server: {}\n", line));
    }

    void note_too_long() const {
        fmt::print(stderr, "chat_server: console: a line longer than {} bytes, not sent\n", max_line_);
    }

    futures::Stream input_;
    LoopRoom& room_;
    std::size_t max_line_;
    OnEnd on_end_;
    futures::Future<std::string> read_;  // a line, or (skipping_) more of a line too long
    bool skipping_ = false;               // the rest of a line too long is still coming
};

}  // namespace examples
