// fetch_ms: a task waits for a line on stdin, then sleeps, while a timer fires.
//
// Step 08 of the series (examples/README.md). New here: a task waits on an fd
// (futures::readable) as well as on time.
//
// The task (a state machine) waits until stdin is readable (a future on the
// fd), reads a line, prints "Will sleep now", sleeps 3 s, prints "Good morning"
// and returns the line through its future, which main prints. Meanwhile a plain
// timer prints "hello" 5 s after the start. Type a line within 2 s and the
// output is: Will sleep now, Good morning, fetch_ms returned "...", hello.
// --speed X divides every delay by X.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>

#include "cli.hpp"

namespace {

using Seconds = std::chrono::duration<double>;

void say(const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
}

// Reads one line from stdin without blocking the loop, naps, returns the line.
class FetchLine {
public:
    enum class State { wait_input, read_input, nap };

    FetchLine(reactor::Scheduler& sched, Seconds nap) : sched_(sched), nap_length_(nap) {}

    futures::Step<std::string> resume() {
        for (;;) {
            switch (state_) {
            case State::wait_input:
                state_ = State::read_input;
                return input_ = futures::readable(sched_, STDIN_FILENO);
            case State::read_input:
                input_.result();
                if (!read_some()) {  // no whole line yet
                    state_ = State::wait_input;
                    continue;
                }
                say("Will sleep now");
                state_ = State::nap;
                return nap_ = futures::sleep(sched_, nap_length_);
            case State::nap:
                nap_.result();
                say("Good morning");
                return line_;
            }
        }
    }

private:
    // Appends what stdin has; true once a line (or end of input) is complete.
    // A read after readiness does not block on a pipe or a terminal.
    bool read_some() {
        char buf[4096];
        ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;  // spurious readiness: wait again
        if (n < 0) throw std::system_error(errno, std::generic_category(), "fetch_ms: reading stdin");
        line_.append(buf, static_cast<std::size_t>(n));
        auto nl = line_.find('\n');
        if (nl != std::string::npos) line_.resize(nl);
        return nl != std::string::npos || n == 0;
    }

    reactor::Scheduler& sched_;
    Seconds nap_length_;
    State state_ = State::wait_input;
    futures::Future<void> input_, nap_;
    std::string line_;
};

}  // namespace

int main(int argc, char** argv) {
    examples::Cli cli("fetch_ms",
                      "Waits for a line on stdin, sleeps 3 s and returns the line; a timer says hello at 5 s.");
    double speed = 1;
    cli.add_option("--speed", speed, "divide every delay by this factor")->check(examples::positive);
    cli.parse_or_exit(argc, argv);

    reactor::Scheduler sched;
    // Ctrl-C stops the loop; run_until then returns false (cli.hpp). Installed
    // before the first line is printed, so whoever sees that line may interrupt.
    bool interrupted = false;
    examples::on_sigint(sched, [&] {
        interrupted = true;
        sched.stop();
    });
    sched.call_later(Seconds(5) / speed, [] { say("hello"); });
    if (::isatty(STDIN_FILENO)) fmt::print(stderr, "type a line and press Enter:\n");
    futures::Future<std::string> fetch = futures::spawn(sched, FetchLine(sched, Seconds(3) / speed));
    if (!futures::run_until(sched, fetch)) return examples::interrupted(cli);
    say(fmt::format("fetch_ms returned \"{}\"", fetch.result()));
    sched.run();  // the hello timer is still pending
    if (interrupted) return examples::interrupted(cli);
}
