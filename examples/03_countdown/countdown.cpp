// SPDX-License-Identifier: MIT
// countdown: David Beazley's "Build Your Own Async" demo, callback-driven.
//
// Step 03 of the series (examples/README.md).
//
// The new idea: timers and fd waiters share one loop. One thread, one
// Scheduler, three concurrent activities:
//   - a countdown from N printing "Down n" every 4 s,
//   - a countup printing "Up i" every 1 s while the countdown runs,
//   - an echo server on 127.0.0.1 answering each line with "Got: <line>",
//     written with one-shot read_wait/write_wait callbacks as in the talk
//     (line_echo.hpp and line_echo_client.hpp, beside this file).
// They live in countdown.hpp, a component that takes the Scheduler and a sink
// for its lines: this main() gives it a real loop and stdout, and the test
// gives it a loop on virtual time (docs/testing.md). The program exits once
// the countdown has printed "Down 1".
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string_view>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>

#include "cli.hpp"
#include "countdown.hpp"
#include "program.hpp"

namespace {

int run(int argc, char** argv) {
    examples::Cli cli("countdown",
                      "Beazley's countdown demo on one thread and one reactor::Scheduler: a countdown\n"
                      "prints 'Down n' every 4 s, a countup prints 'Up i' every 1 s while it runs, and an\n"
                      "echo server on 127.0.0.1 answers every line with 'Got: <line>' (try: nc 127.0.0.1 PORT).\n"
                      "The first line printed is 'listening on 127.0.0.1:PORT'. Exits after 'Down 1'.");
    countdown::Settings settings;
    reactor::Backend backend = reactor::Backend::select;
    cli.add_option("--port", settings.port, "TCP port of the echo server (0: pick a free one)")
        ->check(examples::range(0, 65535));
    cli.add_option("--from", settings.from, "count down from this number")->check(examples::range(1, 1000));
    cli.add_option("--speed", settings.speed, "divide every delay by this factor (e.g. 10 runs ten times faster)")
        ->check(examples::positive);
    examples::add_backend_option(cli, backend);
    cli.parse_or_exit(argc, argv);

    reactor::Scheduler sched(examples::on(backend));
    // Ctrl-C stops the run (cli.hpp). Installed before the first line is
    // printed, so whoever sees that line may interrupt.
    examples::CtrlC ctrl_c(sched, cli);
    // Each line flushed at once: whoever reads the output reads it live.
    auto print = [](std::string_view line) {
        fmt::print("{}\n", line);
        std::fflush(stdout);
    };
    std::unique_ptr<countdown::Countdown> demo;
    try {
        demo = std::make_unique<countdown::Countdown>(sched, settings, print, [&] { sched.stop(); });
    } catch (const std::exception& e) {
        fmt::print(stderr, "countdown: {}\n", e.what());
        return 1;
    }
    demo->start();
    return ctrl_c.run().value_or(0);
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("countdown", run, argc, argv); }
