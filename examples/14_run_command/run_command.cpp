// SPDX-License-Identifier: MIT
// run_command -- PROGRAM ARGS...: runs a program as a child process and
// streams its output line by line as it comes, stdout lines prefixed "out: ",
// stderr lines "err: ", then exits with the child's status.
//
// Step 14 of the series (examples/README.md). New here: a subprocess
// (futures::spawn_process) whose stdout and stderr are pipes read as streams,
// one small task per stream, and the exit status as a future.
//
//   $ run_command -- /bin/sh -c 'echo hello; echo oops >&2; exit 3'
//   running /bin/sh (pid 4242)
//   out: hello
//   err: oops
//   exited with status 3
//   $ echo $?
//   3
//
// A child killed by signal N is reported as such and gives exit status 128+N,
// as a shell does. A program that cannot be run is reported on stderr, exit
// 127 (the shell's "command not found"). Ctrl-C terminates the child (SIGTERM;
// a second Ctrl-C: SIGKILL), waits for it, prints "run_command: interrupted"
// and exits 130.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/process.hpp>

#include "../cli.hpp"
#include "../program.hpp"

namespace {

// Prints one pipe's lines with a prefix until EOF. A last line without a
// newline is printed too; a line longer than the stream's limit in pieces.
class PrintLines {
public:
    PrintLines(futures::Stream stream, std::string prefix) : stream_(std::move(stream)), prefix_(std::move(prefix)) {}

    futures::Step<void> resume() {
        if (line_.valid()) {
            try {
                std::string line = line_.result();
                if (!line.empty() && line.back() == '\n') line.pop_back();
                say(line);
            } catch (const futures::IncompleteReadError& e) {
                if (!e.partial.empty()) say(e.partial);
                return futures::finished;  // EOF
            } catch (const futures::LimitOverrunError& e) {
                // A piece of a long line: the bytes searched (up to and with
                // the newline if it was found), so no newline hides inside.
                return line_ = stream_.read_exactly(e.consumed);
            }
        }
        return line_ = stream_.read_until("\n");
    }

private:
    void say(const std::string& line) const {
        fmt::print("{}{}\n", prefix_, line);
        std::fflush(stdout);
    }

    futures::Stream stream_;
    std::string prefix_;
    futures::Future<std::string> line_;
};

int run(int argc, char** argv) {
    examples::Cli cli("run_command", "Runs PROGRAM with ARGS, printing its stdout and stderr line by line "
                                     "(prefixed \"out: \" and \"err: \"); exits with its status.");
    std::vector<std::string> command;
    cli.add_option("command", command, "the program and its arguments (after --, so that its options stay its own)");
    // Everything after the first "--" is the command, untouched by the parser.
    int ours = 1;
    while (ours < argc && std::string(argv[ours]) != "--") ++ours;
    cli.parse_or_exit(ours, argv);
    for (int i = ours + 1; i < argc; ++i) command.emplace_back(argv[i]);
    if (command.empty()) cli.fail("no command given: run_command -- PROGRAM ARGS...");

    reactor::Scheduler sched;
    futures::ProcessOptions options;
    options.stdout_mode = options.stderr_mode = futures::Stdio::pipe;
    futures::Process child;
    try {
        child = futures::spawn_process(sched, command, options);
    } catch (const std::system_error& e) {
        fmt::print(stderr, "run_command: {}\n", e.what());
        return 127;
    }
    bool interrupted = false;
    examples::on_sigint(sched, [&] {
        // SIGTERM first; a child that ignores it gets SIGKILL at the second Ctrl-C.
        if (interrupted) child.kill();
        else child.terminate();
        interrupted = true;
    });
    fmt::print("running {} (pid {})\n", command.front(), child.pid());
    std::fflush(stdout);

    auto out = futures::spawn(sched, PrintLines(child.stdout_pipe(), "out: "));
    auto err = futures::spawn(sched, PrintLines(child.stderr_pipe(), "err: "));
    auto status = child.wait();
    futures::run_until(sched, futures::when_all(out, err));  // both pipes at EOF: the child is ending
    futures::run_until(sched, status);
    if (interrupted) return examples::interrupted(cli);
    const int code = status.result();
    if (code < 0) {
        fmt::print("killed by signal {} ({})\n", -code, sigabbrev_np(-code) ? sigabbrev_np(-code) : "?");
        return 128 - code;
    }
    fmt::print("exited with status {}\n", code);
    return code;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("run_command", run, argc, argv); }
