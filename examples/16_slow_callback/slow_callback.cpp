// SPDX-License-Identifier: MIT
// slow_callback: what debug mode reports. Each round, a callback arms a 10 ms
// timer and then blocks the loop for --block-ms (default 200 ms): a slow
// callback, and a timer that fires late because of it. Run it twice:
//
//   $ slow_callback                       (debug mode off: nothing reported)
//   $ REACTOR_DEBUG=1 slow_callback       (or --debug)
//   slow_callback: debug mode on: slow callbacks and late timers are reported on stderr
//   slow_callback: round 1: armed a 10 ms timer, now blocking the loop for 200 ms
//   reactor: slow callback: it ran for 200.1 ms (threshold 100.0 ms) (from .../slow_callback.cpp:73)
//   reactor: late timer: it fired 190.2 ms after its deadline (threshold 100.0 ms; loop lag) (from .../slow_callback.cpp:66)
//   slow_callback: round 1: the 10 ms timer fired
//   ...
//   slow_callback: done; the loop's stats:
//   slow_callback: loop: 6 iterations, 9 callbacks run, 3 timers fired, 0 fd events, 0 selector waits
//   ...
//
// The reports are the exception handler's lines (the default handler writes
// them to stderr, stdout is the program's own), one per event, naming the
// line that scheduled the slow callback or the late timer. Ctrl-C stops it
// (exit 130). Step 16 of the series (examples/README.md).
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <reactor/loop_stats.hpp>
#include <reactor/scheduler.hpp>

#include "cli.hpp"
#include "program.hpp"

namespace {

void say(const std::string& line) {
    fmt::print("slow_callback: {}\n", line);
    std::fflush(stdout);
}

int run(int argc, char** argv) {
    examples::Cli cli("slow_callback",
                      "A callback that blocks the loop, and the timer it makes late: what debug mode reports.");
    long block_ms = 200;
    int rounds = 3;
    bool debug = false;
    cli.add_option("--block-ms", block_ms, "how long each round's callback blocks the loop, in ms")
        ->check(examples::range(1L, 10'000L));
    cli.add_option("--rounds", rounds, "how many rounds")->check(examples::range(1, 1000));
    cli.add_flag("--debug", debug, "turn debug mode on (as REACTOR_DEBUG=1 does)");
    cli.parse_or_exit(argc, argv);

    reactor::Scheduler::Options options;
    options.debug = debug;  // REACTOR_DEBUG=1 turns it on as well
    reactor::Scheduler sched(std::move(options));
    examples::CtrlC ctrl_c(sched, cli);  // Ctrl-C stops the run (cli.hpp)
    say(sched.debug() ? "debug mode on: slow callbacks and late timers are reported on stderr"
                      : "debug mode off: nothing is reported (REACTOR_DEBUG=1 or --debug turns it on)");

    std::function<void(int)> round = [&](int i) {
        // Armed before the block, from the loop's time: due 10 ms into it.
        sched.call_later(std::chrono::milliseconds(10), [&, i] {
            say(fmt::format("round {}: the 10 ms timer fired", i));
            if (i < rounds) sched.call_soon([&, i] { round(i + 1); });
        });
        say(fmt::format("round {}: armed a 10 ms timer, now blocking the loop for {} ms", i, block_ms));
        std::this_thread::sleep_for(std::chrono::milliseconds(block_ms));  // the mistake debug mode catches
    };
    sched.call_soon([&] { round(1); });
    if (auto status = ctrl_c.run()) return *status;
    say("done; the loop's stats:");
    fmt::print("{}", reactor::format_stats(sched.stats(), "slow_callback: "));
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("slow_callback", run, argc, argv); }
