// SPDX-License-Identifier: MIT
// fetch_ms: a task reads a line from stdin, then sleeps, while a timer fires.
//
// Step 08 of the series (examples/README.md). New here: a task waits on input
// as well as on time: stdin as a futures::Stream (open_stdio), whose
// read_until("\n") is a future like the sleep's.
//
// The task (a state machine) reads a line from stdin without blocking the
// loop, prints "Will sleep now", sleeps 3 s, prints "Good morning" and returns
// the line through its future, which main prints. Meanwhile a plain timer
// prints "hello" 5 s after the start. Type a line within 2 s and the output
// is: Will sleep now, Good morning, fetch_ms returned "...", hello. At the end
// of input (Ctrl-D, `< /dev/null`) the line is what came before it, maybe "".
// --speed X divides every delay by X; --backend picks the loop's (default select).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>

#include "cli.hpp"
#include "program.hpp"

namespace {

using Seconds = std::chrono::duration<double>;

// The longest line taken: a Stream's read_until limit (StreamOptions::limit).
const std::size_t kMaxLine = futures::StreamOptions{}.limit;

using examples::say;

std::runtime_error too_long() { return std::runtime_error(fmt::format("a line longer than {} bytes", kMaxLine)); }

// The first line of a regular file (`fetch_ms < notes.txt`), read at once:
// a file's bytes are always there, so the loop would have nothing to wait for
// (which is why a Stream refuses one). Up to and including its '\n', or all
// of it if it has none, as read_until would give it; already done.
futures::Future<std::string> first_line_of_file(reactor::Scheduler& sched, int fd) {
    std::string text;
    char c = 0;
    for (ssize_t n; (n = ::read(fd, &c, 1)) != 0;) {  // a byte at a time: never past the line, as sh's `read`
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::system_error(errno, std::generic_category(), "reading stdin");
        text += c;
        if (c == '\n') break;
        if (text.size() > kMaxLine) throw too_long();
    }
    return futures::make_ready_future(sched, std::move(text));
}

// Reads one line (from `input`, or from stdin as a regular file when `input`
// is empty), naps, returns the line.
class FetchLine {
public:
    enum class State { start_read, reading, nap };

    FetchLine(reactor::Scheduler& sched, futures::Stream input, Seconds nap)
        : sched_(sched), input_(std::move(input)), nap_length_(nap) {}

    futures::Step<std::string> resume() {
        switch (state_) {
        case State::start_read:
            state_ = State::reading;
            return read_ = input_.valid() ? input_.read_until("\n") : first_line_of_file(sched_, STDIN_FILENO);
        case State::reading:
            line_ = line_of(read_);
            input_ = {};  // the last handle: the stream closes (its duplicate of stdin)
            say("Will sleep now");
            state_ = State::nap;
            return nap_ = futures::sleep(sched_, nap_length_);
        case State::nap:
            nap_.result();
            say("Good morning");
            return line_;
        }
        throw std::logic_error("fetch_ms: unknown state");
    }

private:
    // The line without its '\n'. The end of input is not an error here:
    // read_until then fails with IncompleteReadError, carrying the bytes that
    // came before it (a last line without '\n', or "" when there was none).
    static std::string line_of(const futures::Future<std::string>& read) {
        std::string line;
        try {
            line = read.result();
        } catch (const futures::IncompleteReadError& eof) {
            return eof.partial;
        } catch (const futures::LimitOverrunError&) {
            throw too_long();
        }
        if (line.ends_with('\n')) line.pop_back();
        return line;
    }

    reactor::Scheduler& sched_;
    futures::Stream input_;
    Seconds nap_length_;
    State state_ = State::start_read;
    futures::Future<std::string> read_;
    futures::Future<void> nap_;
    std::string line_;
};

int run(int argc, char** argv) {
    examples::Cli cli("fetch_ms",
                      "Waits for a line on stdin, sleeps 3 s and returns the line; a timer says hello at 5 s.");
    double speed = 1;
    reactor::Backend backend = reactor::Backend::select;
    cli.add_option("--speed", speed, "divide every delay by this factor")->check(examples::positive);
    examples::add_backend_option(cli, backend);
    cli.parse_or_exit(argc, argv);

    // What stdin is, asked before the loop opens fds of its own: with stdin
    // closed, one of those would take number 0.
    struct stat st {};
    if (::fstat(STDIN_FILENO, &st) != 0) {
        fmt::print(stderr, "fetch_ms: stdin: {}\n", std::generic_category().message(errno));
        return 1;
    }
    reactor::Scheduler sched(examples::on(backend));
    // Ctrl-C stops the run (cli.hpp). Installed before the first line is
    // printed, so whoever sees that line may interrupt.
    examples::CtrlC ctrl_c(sched, cli);
    // stdin as a stream: a pipe, a terminal, /dev/null (always ready, on every
    // backend). A regular file is read directly instead (first_line_of_file);
    // anything else (a directory) is refused by open_stdio, naming its type.
    futures::Stream input;
    try {
        if (!S_ISREG(st.st_mode)) input = futures::open_stdio(sched, STDIN_FILENO);
    } catch (const std::exception& e) {
        fmt::print(stderr, "fetch_ms: stdin: {}\n", e.what());
        return 1;
    }
    sched.call_later(Seconds(5) / speed, [] { say("hello"); });
    if (::isatty(STDIN_FILENO)) fmt::print(stderr, "type a line and press Enter:\n");
    futures::Future<std::string> fetch = futures::spawn(sched, FetchLine(sched, std::move(input), Seconds(3) / speed));
    if (auto status = ctrl_c.run_until(fetch)) return *status;
    try {
        say(fmt::format("fetch_ms returned \"{}\"", fetch.result()));
    } catch (const std::exception& e) {
        fmt::print(stderr, "fetch_ms: stdin: {}\n", e.what());
        return 1;
    }
    return ctrl_c.run().value_or(0);  // the hello timer is still pending
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("fetch_ms", run, argc, argv); }
