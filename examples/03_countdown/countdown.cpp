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
// Each generator of the talk becomes a function that does one step and
// schedules the next. The program exits once the countdown has printed
// "Down 1".
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>

#include "cli.hpp"
#include "line_echo.hpp"

using namespace std::chrono_literals;
using countdown::say;
using Seconds = std::chrono::duration<double>;

int main(int argc, char** argv) {
    examples::Cli cli("countdown",
                      "Beazley's countdown demo on one thread and one reactor::Scheduler: a countdown\n"
                      "prints 'Down n' every 4 s, a countup prints 'Up i' every 1 s while it runs, and an\n"
                      "echo server on 127.0.0.1 answers every line with 'Got: <line>' (try: nc 127.0.0.1 PORT).\n"
                      "The first line printed is 'listening on 127.0.0.1:PORT'. Exits after 'Down 1'.");
    std::uint16_t port = 0;
    int from = 6;
    double speed = 1;
    reactor::Backend backend = reactor::Backend::select;
    cli.add_option("--port", port, "TCP port of the echo server (0: pick a free one)")->check(CLI::Range(0, 65535));
    cli.add_option("--from", from, "count down from this number")->check(CLI::Range(1, 1000));
    cli.add_option("--speed", speed, "divide every delay by this factor (e.g. 10 runs ten times faster)")
        ->check(examples::positive);
    examples::add_backend_option(cli, backend);
    cli.parse_or_exit(argc, argv);
    auto scaled = [speed](Seconds d) { return d / speed; };

    reactor::Scheduler sched(examples::on(backend));
    // Ctrl-C stops the loop (cli.hpp). Installed before the first line is
    // printed, so whoever sees that line may interrupt.
    bool interrupted = false;
    examples::on_sigint(sched, [&] {
        interrupted = true;
        sched.stop();
    });
    std::unique_ptr<countdown::LineEcho> server;
    try {
        server = std::make_unique<countdown::LineEcho>(sched, port);
    } catch (const std::exception& e) {
        fmt::print(stderr, "countdown: {}\n", e.what());
        return 1;
    }
    say(fmt::format("listening on 127.0.0.1:{}", server->port()));
    server->start();

    // countdown(n): print, then call itself again in 4 s (a generator's
    // "sleep(4)" desugared into a timer callback).
    std::function<void(int)> countdown = [&](int n) {
        say(fmt::format("Down {}", n));
        if (n > 1) {
            sched.call_later(scaled(4s), [&countdown, n] { countdown(n - 1); });
        } else {
            say("countdown finished; closing the echo server");
            sched.stop();
        }
    };
    // countup(i): counts while the countdown runs (4 s per Down step).
    const int up_limit = 4 * (from - 1);
    std::function<void(int)> countup = [&](int i) {
        if (i >= up_limit) return;
        say(fmt::format("Up {}", i));
        sched.call_later(scaled(1s), [&countup, i] { countup(i + 1); });
    };

    sched.call_soon([&] { countdown(from); });
    sched.call_soon([&] { countup(0); });
    sched.run();
    return interrupted ? examples::interrupted(cli) : 0;
}
