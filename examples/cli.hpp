// SPDX-License-Identifier: MIT
// The examples' command lines: CLI11 (header-only, Debian libcli11-dev) with
// the conventions every example shares. Only examples/ includes this; the
// libraries never depend on CLI11.
//
//   examples::Cli cli("tasks", "what the program does");
//   double speed = 1;
//   cli.add_option("--speed", speed, "divide every delay by this factor")->check(examples::positive);
//   cli.parse_or_exit(argc, argv);
//
// --help prints the usage (with every default) on stdout and exits 0. An
// unknown option or argument, a missing value, or a value that is malformed
// or out of range prints one line naming the option on stderr and exits 2.
#pragma once

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <futures/run.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/selector.hpp>

namespace examples {

class Cli : public CLI::App {
public:
    Cli(std::string program, std::string description) : CLI::App(std::move(description), std::move(program)) {
        option_defaults()->always_capture_default();
        allow_extras();  // reported by parse_or_exit, in our words
    }

    void parse_or_exit(int argc, char** argv) {
        try {
            parse(argc, argv);
        } catch (const CLI::CallForHelp& e) {
            std::exit(exit(e));  // the usage, on stdout; 0
        } catch (const CLI::ParseError& e) {
            fail(e.what());
        }
        if (const auto& extra = remaining(); !extra.empty()) {
            const std::string& first = extra.front();
            fail(first.starts_with("-") ? fmt::format("unknown option {}", first)
                                        : fmt::format("unexpected argument '{}'", first));
        }
    }

    // For what only the program can check, after parsing.
    [[noreturn]] void fail(const std::string& message) const {
        fmt::print(stderr, "{}: {}\n(try --help)\n", get_name(), message);
        std::exit(2);
    }
};

// A finite number within [low, high]: "nan", "inf" and "-1" are refused
// where a delay, a speed or a duration is expected.
inline CLI::Validator finite_in(double low, double high, std::string what) {
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            double value = 0;
            bool ok = CLI::detail::lexical_cast(text, value) && std::isfinite(value) && value >= low && value <= high;
            if (ok) return {};
            return fmt::format("must be {}, not '{}'", what, text);
        },
        "");
}

// Speeds, scale factors: finite and > 0.
inline const CLI::Validator positive = finite_in(1e-9, 1e9, "a positive number");
// Durations in seconds where 0 means "none": finite and >= 0.
inline const CLI::Validator seconds = finite_in(0, 1e9, "a number of seconds, 0 or more");

// --backend select|poll|epoll, straight into a reactor::Backend.
inline CLI::Option* add_backend_option(CLI::App& app, reactor::Backend& backend) {
    return app
        .add_option_function<std::string>(
            "--backend", [&backend](const std::string& name) { backend = *reactor::parse_backend(name); },
            "readiness backend: select, poll or epoll")
        ->check(CLI::IsMember({"select", "poll", "epoll"}))
        ->default_str(std::string(reactor::to_string(backend)));
}

// Ctrl-C in the examples that are not servers (servers drain, then exit 0:
// server_support.hpp). SIGINT ends the run, through the loop, never in signal
// context: the handler runs on the loop thread; main then says so on one line
// and exits 130, the shell's code for a program ended by SIGINT, so a script
// can tell an interrupted run from a finished one.
inline constexpr int kInterrupted = 130;
inline void on_sigint(reactor::Scheduler& sched, std::function<void()> interrupt) {
    sched.add_signal_handler(SIGINT, std::move(interrupt));
}
inline int interrupted(const CLI::App& cli) {
    fmt::print("{}: interrupted\n", cli.get_name());
    std::fflush(stdout);
    return kInterrupted;
}

// Ctrl-C for a program whose run only has to stop (nothing to abort or
// kill first), in one place rather than pasted into every main(). Killed
// outright by SIGINT, a program would end in the middle of a callback, with
// nothing said and no destructor run; this way the handler stops the loop,
// the run (run_until(), run()) returns between two callbacks, and main()
// prints "<program>: interrupted" and returns 130 instead of going on:
//
//   reactor::Scheduler sched;
//   examples::CtrlC ctrl_c(sched, cli);  // before the first line: whoever sees it may interrupt
//   ...
//   if (auto status = ctrl_c.run_until(main_task)) return *status;
//   main_task.result();
class CtrlC {
public:
    // Installs the SIGINT handler; declared after the Scheduler, so it lives
    // as long as the loop can run.
    CtrlC(reactor::Scheduler& sched, const CLI::App& cli) : sched_(sched), cli_(cli) {
        on_sigint(sched, [this] {
            pressed_ = true;
            sched_.stop();
        });
    }
    CtrlC(const CtrlC&) = delete;
    CtrlC& operator=(const CtrlC&) = delete;

    // futures::run_until(sched, done). Nothing if `done` finished with no
    // Ctrl-C; else the line is printed and the status to return is here.
    template <class T>
    [[nodiscard]] std::optional<int> run_until(const futures::Future<T>& done) {
        bool finished = futures::run_until(sched_, done);
        return finished && !pressed_ ? std::nullopt : std::optional(interrupted(cli_));
    }

    // sched.run(): the same, for a run that ends when nothing is left.
    [[nodiscard]] std::optional<int> run() {
        sched_.run();
        return pressed_ ? std::optional(interrupted(cli_)) : std::nullopt;
    }

private:
    reactor::Scheduler& sched_;
    const CLI::App& cli_;
    bool pressed_ = false;
};

// Scheduler options for --backend: reactor::Scheduler sched(examples::on(backend)).
inline reactor::Scheduler::Options on(reactor::Backend backend) {
    reactor::Scheduler::Options options;
    options.backend = backend;
    return options;
}

}  // namespace examples
