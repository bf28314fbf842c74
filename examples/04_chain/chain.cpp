// SPDX-License-Identifier: MIT
// chain: futures chained with then, an error recovered with catch_error, a
// finally, when_all of three sleeps, and a with_timeout that fires.
//
// Step 04 of the series (examples/README.md). New here: Future<T> and then:
// continuations instead of callbacks.
//
// Each stage is a function returning a future; the program is the four of them
// chained with then, run with run_until_complete. Times are printed in the
// program's own seconds (wall time x speed). --speed X divides every delay by X.
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>

#include "cli.hpp"
#include "program.hpp"

namespace {

using Seconds = std::chrono::duration<double>;
using futures::Future;

using examples::say;

struct Context {
    reactor::Scheduler& sched;
    double speed;
    reactor::Clock::time_point start = reactor::Clock::now();

    Seconds scaled(double seconds) const { return Seconds(seconds) / speed; }
    double elapsed() const { return Seconds(reactor::Clock::now() - start).count() * speed; }
};

// 1. A pipeline: every step takes the previous value.
Future<void> pipeline(Context& cx) {
    return futures::sleep(cx.sched, cx.scaled(0.5))
        .then([] {
            say("pipeline: fetched 21");
            return 21;
        })
        .then([](int n) {
            say(fmt::format("pipeline: doubled to {}", n * 2));
            return n * 2;
        })
        .then([](int n) { say(fmt::format("pipeline: formatted as \"{}\"", std::to_string(n))); });
}

int parse_number(const std::string& text) {
    std::size_t used = 0;
    int n = 0;
    try {
        n = std::stoi(text, &used);
    } catch (const std::exception&) {
    }
    if (used == 0 || used != text.size()) throw std::invalid_argument("not a number: " + text);
    return n;
}

// 2. An error skips the next step, catch_error recovers, finally always runs.
Future<void> recovery(Context& cx) {
    return futures::make_ready_future(cx.sched, std::string("forty-two"))
        .then([](const std::string& text) { return parse_number(text); })
        .then([](int n) {
            say("recover: never printed: the error skips this step");
            return n;
        })
        .catch_error([](const std::invalid_argument& e) {
            say(fmt::format("recover: caught \"{}\", using -1 instead", e.what()));
            return -1;
        })
        .then([](int n) { say(fmt::format("recover: carrying on with {}", n)); })
        .finally([] { say("finally: cleanup ran"); });
}

// 3. Three sleeps at once: done after the longest, not the sum.
Future<void> gather(Context& cx) {
    double before = cx.elapsed();
    std::vector<Future<void>> sleeps{futures::sleep(cx.sched, cx.scaled(1)), futures::sleep(cx.sched, cx.scaled(2)),
                                     futures::sleep(cx.sched, cx.scaled(3))};
    return futures::when_all(sleeps).then([&cx, before] {
        say(fmt::format("when_all: sleeps of 1 s, 2 s and 3 s all done after {:.2f}s", cx.elapsed() - before));
    });
}

// 4. A 10 s operation bounded by 1 s: TimeoutError, and the operation is cancelled.
Future<void> timeout(Context& cx) {
    double before = cx.elapsed();
    Future<void> slow = futures::sleep(cx.sched, cx.scaled(10));
    return futures::with_timeout(slow, cx.scaled(1))
        .then([] { say("with_timeout: never printed: the timeout fires first"); })
        .catch_error([&cx, before, slow](const futures::TimeoutError&) {
            say(fmt::format("with_timeout: TimeoutError after {:.2f}s; the slow operation was {}",
                            cx.elapsed() - before, slow.cancelled() ? "cancelled" : "left running"));
        });
}

int run(int argc, char** argv) {
    examples::Cli cli("chain", "then pipelines, catch_error, finally, when_all and with_timeout, in one chain.");
    double speed = 1;
    cli.add_option("--speed", speed, "divide every delay by this factor")->check(examples::positive);
    cli.parse_or_exit(argc, argv);

    reactor::Scheduler sched;
    // Ctrl-C stops the run (cli.hpp). Installed before the first line is
    // printed, so whoever sees that line may interrupt.
    examples::CtrlC ctrl_c(sched, cli);
    Context cx{sched, speed};
    Future<void> program = pipeline(cx)
                               .then([&] { return recovery(cx); })
                               .then([&] { return gather(cx); })
                               .then([&] { return timeout(cx); });
    if (auto status = ctrl_c.run_until(program)) return *status;
    program.result();  // rethrows what the chain failed with, if it did
    say(fmt::format("done after {:.2f}s", cx.elapsed()));
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("chain", run, argc, argv); }
