// SPDX-License-Identifier: MIT
// hello: the first step. Nothing runs until the loop does: call_soon puts a
// callback on the ready queue, call_later on the timer heap, and run() keeps
// going until nothing is ready or sleeping, then returns.
//
// Step 01 of the series (examples/README.md).
//
//   $ hello
//   main: three timers and one call_soon scheduled; one timer cancelled
//   call_soon: hello, from the loop
//   call_soon, scheduled by a callback: runs on the next pass
//   call_later(1 s): the earliest deadline fires first, at 1.00 s
//   call_later(2 s): world, at 2.00 s
//   run() returned: nothing ready, nothing sleeping
//
// --speed X divides every delay by X; the times printed are in the
// program's own seconds (the loop's clock x speed), so the output does not change.
#include <chrono>
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>

#include "cli.hpp"
#include "program.hpp"

namespace {

using examples::say;

int run(int argc, char** argv) {
    examples::Cli cli("hello",
                      "call_soon and call_later on one reactor::Scheduler; run() returns when nothing is left.");
    double speed = 1;
    cli.add_option("--speed", speed, "divide every delay by this factor")->check(examples::positive);
    cli.parse_or_exit(argc, argv);
    using Seconds = std::chrono::duration<double>;

    reactor::Scheduler sched;
    // Ctrl-C stops the run (cli.hpp). Installed before the first line is
    // printed, so whoever sees that line may interrupt.
    examples::CtrlC ctrl_c(sched, cli);
    const reactor::TimePoint start = sched.now();
    auto elapsed = [&] { return Seconds(sched.now() - start).count() * speed; };

    // Scheduled in this order, run in the loop's order: ready callbacks
    // first, then timers by deadline.
    sched.call_later(Seconds(2) / speed, [&] { say(fmt::format("call_later(2 s): world, at {:.2f} s", elapsed())); });
    sched.call_later(Seconds(1) / speed, [&] {
        say(fmt::format("call_later(1 s): the earliest deadline fires first, at {:.2f} s", elapsed()));
    });
    reactor::Handle never = sched.call_later(Seconds(1.5) / speed, [] { say("never printed: cancelled"); });
    sched.call_soon([&] {
        say("call_soon: hello, from the loop");
        // The next pass, not this one: a callback that keeps rescheduling
        // itself cannot starve timers and I/O. (A timer already due when the
        // loop first looked, on a slow machine, runs before it.)
        sched.call_soon([] { say("call_soon, scheduled by a callback: runs on the next pass"); });
    });
    never.cancel();  // true: it was pending, and now it never runs
    say("main: three timers and one call_soon scheduled; one timer cancelled");

    // sched.run(); and if Ctrl-C stopped it, "hello: interrupted" and 130.
    if (auto status = ctrl_c.run()) return *status;
    say("run() returned: nothing ready, nothing sleeping");
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("hello", run, argc, argv); }
