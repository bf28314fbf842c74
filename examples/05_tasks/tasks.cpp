// SPDX-License-Identifier: MIT
// tasks: two tasks interleave on one loop, and main joins both.
//
// Step 05 of the series (examples/README.md). New here: a hand-written
// state-machine task (one enum class State, one resume()), spawned, which
// joins two loops; each loop is a loop combinator (do_for_each), whose
// future is joined like a task's.
//
// task1 prints "Task 1" twice, sleeping 1 s after each; task2 prints "Task 2"
// three times, sleeping 2 s after each. main starts both, joins task1 then
// task2, and prints "done". Output: Task 1, Task 2, Task 1, Task 2, Task 2,
// done (about 6 s). --speed X divides every delay by X.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>

#include "cli.hpp"
#include "program.hpp"

namespace {

using Seconds = std::chrono::duration<double>;

using examples::say;

// Prints `text` `times` times, sleeping `pause` after each: a loop and
// nothing else, so a loop combinator (futures/do_for_each.hpp) rather than a
// machine. Its future is a join handle like a task's. The range is one element
// per line to print (std::views::iota would read better, but clang 15 cannot
// compile libstdc++ 12's views).
futures::Future<void> printer(reactor::Scheduler& sched, std::string text, int times, Seconds pause) {
    std::vector<int> lines(static_cast<std::size_t>(std::max(times, 0)));
    return futures::do_for_each(sched, std::move(lines), [&sched, text, pause](int) {
        say(text);
        return futures::sleep(sched, pause);
    });
}

// Starts both printers, joins them in turn, prints "done".
class Main {
public:
    enum class State { spawn, joining1, joining2 };

    Main(reactor::Scheduler& sched, double speed) : sched_(sched), speed_(speed) {}

    futures::Step<void> resume() {
        switch (state_) {
        case State::spawn:
            task1_ = printer(sched_, "Task 1", 2, Seconds(1) / speed_);
            task2_ = printer(sched_, "Task 2", 3, Seconds(2) / speed_);
            state_ = State::joining1;
            return task1_;
        case State::joining1:
            task1_.result();
            state_ = State::joining2;
            return task2_;
        case State::joining2:
            task2_.result();
            say("done");
            return futures::finished;
        }
        throw std::logic_error("tasks: unknown state");
    }

private:
    reactor::Scheduler& sched_;
    double speed_;
    State state_ = State::spawn;
    futures::Future<void> task1_, task2_;
};

int run(int argc, char** argv) {
    examples::Cli cli("tasks", "task1 and task2 interleave with sleeps; main joins both and prints done.");
    double speed = 1;
    cli.add_option("--speed", speed, "divide every delay by this factor")->check(examples::positive);
    cli.parse_or_exit(argc, argv);

    reactor::Scheduler sched;
    // Ctrl-C stops the run (cli.hpp). Installed before the first line is
    // printed, so whoever sees that line may interrupt.
    examples::CtrlC ctrl_c(sched, cli);
    futures::Future<void> main_task = futures::spawn(sched, Main(sched, speed));
    if (auto status = ctrl_c.run_until(main_task)) return *status;
    main_task.result();  // rethrows what it failed with, if it did
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("tasks", run, argc, argv); }
