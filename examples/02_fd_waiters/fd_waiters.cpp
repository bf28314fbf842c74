// SPDX-License-Identifier: MIT
// fd_waiters: the loop waits on file descriptors as well as on time.
//
// Step 02 of the series (examples/README.md).
//
// The new idea: the two kinds of fd waiter. read_wait(fd, cb) is one-shot
// (Beazley): the waiter is removed before cb runs, so cb must call read_wait
// again to hear more. add_reader(fd, cb) is persistent (asyncio): cb runs on
// every readiness until remove_reader(fd). Both are shown on a pipe: a writer
// (timer callbacks) sends "ping 1..3", then closes its end.
//
//   $ fd_waiters
//   read_wait: armed (one-shot)
//   writer: sent "ping 1"
//   read_wait: got "ping 1"; not armed again, so nobody listens now
//   writer: sent "ping 2"
//   add_reader: armed (persistent); "ping 2" waited in the pipe
//   add_reader: got "ping 2"  ... "ping 3" ... end of input: remove_reader
//   run() returned: no waiter and no timer left
//
// Readiness is a hint, not a promise: a read that finds nothing (EAGAIN)
// means "wait again". --speed X divides every delay by X.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>

#include "cli.hpp"
#include "program.hpp"

namespace {

using examples::say;

// What one read brings: the text, "" at end of input, or nothing yet (EAGAIN).
std::optional<std::string> read_some(int fd) {
    char buf[256];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) return std::nullopt;  // EAGAIN (spurious readiness) or EINTR: wait again
    return std::string(buf, static_cast<std::size_t>(n));
}

int run(int argc, char** argv) {
    examples::Cli cli("fd_waiters", "One-shot read_wait and persistent add_reader, on a pipe fed by timers.");
    double speed = 1;
    reactor::Backend backend = reactor::Backend::select;
    cli.add_option("--speed", speed, "divide every delay by this factor")->check(examples::positive);
    examples::add_backend_option(cli, backend);
    cli.parse_or_exit(argc, argv);
    const auto second = std::chrono::duration<double>(1) / speed;

    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        std::perror("fd_waiters: pipe2");
        return 1;
    }
    const int in = fds[0], out = fds[1];
    reactor::Scheduler sched(examples::on(backend));
    // Ctrl-C stops the run (cli.hpp). Installed before the first line is
    // printed, so whoever sees that line may interrupt.
    examples::CtrlC ctrl_c(sched, cli);

    // The writer: each call sends the next ping; the fourth closes the pipe.
    int sent = 0;
    auto write_next = [&] {
        if (++sent > 3) {
            say("writer: closed its end");
            ::close(out);
            return;
        }
        std::string ping = fmt::format("ping {}", sent);
        if (::write(out, ping.data(), ping.size()) < 0) std::perror("fd_waiters: write");
        say(fmt::format("writer: sent \"{}\"", ping));
    };

    // Persistent: called on every readiness; the reader asks for the next
    // ping a second after each one, so the output order never depends on timing.
    auto persistent = [&] {
        say("add_reader: armed (persistent); \"ping 2\" waited in the pipe");
        sched.add_reader(in, [&] {
            auto text = read_some(in);
            if (!text) return;  // nothing after all: stay registered
            if (text->empty()) {
                say("add_reader: end of input: remove_reader, close");
                sched.remove_reader(in);
                ::close(in);
                return;
            }
            say(fmt::format("add_reader: got \"{}\"", *text));
            sched.call_later(second, write_next);
        });
    };

    // One-shot: removed before it runs; it re-arms only when it found nothing.
    std::function<void()> one_shot = [&] {
        auto text = read_some(in);
        if (!text) return sched.read_wait(in, one_shot);
        say(fmt::format("read_wait: got \"{}\"; not armed again, so nobody listens now", *text));
        sched.call_later(second, write_next);  // "ping 2" goes into the pipe, unheard...
        sched.call_later(2 * second, persistent);  // ...until a persistent reader comes
    };
    sched.read_wait(in, one_shot);
    say("read_wait: armed (one-shot)");
    sched.call_later(second, write_next);

    if (auto status = ctrl_c.run()) return *status;  // sched.run(), then: was it Ctrl-C?
    say("run() returned: no waiter and no timer left");
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("fd_waiters", run, argc, argv); }
