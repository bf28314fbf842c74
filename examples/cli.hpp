// SPDX-License-Identifier: MIT
// The examples' command lines: a small façade over CLI11, with the
// conventions every example shares. CLI11 (Debian libcli11-dev) is
// header-only and slow to compile (about 10 s per file that includes it), so
// only cli.cpp includes it, compiled once into the examples_cli library that
// every example links; this header only declares the three CLI11 classes it
// points to. Only examples/ uses it; the libraries never depend on CLI11.
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

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <futures/run.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/selector.hpp>

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace examples {

// What an option's value must be (range(), positive, one_of()...): a CLI11
// validator, made in cli.cpp. Cheap to copy; copies share the validator.
class Check {
public:
    explicit Check(std::shared_ptr<const CLI::Validator> validator) : validator_(std::move(validator)) {}
    const CLI::Validator& validator() const { return *validator_; }

private:
    std::shared_ptr<const CLI::Validator> validator_;
};

// Within [low, high]; the help says "INT in [low - high]" ("UINT" for
// std::size_t), and a value outside is refused naming the bounds.
Check range(int low, int high);
Check range(long low, long high);
Check range(std::size_t low, std::size_t high);

// A finite number, not "nan", "inf" nor "-1", where a speed or a delay is
// expected. positive: speeds, scale factors (> 0); seconds: durations where
// 0 means "none" (>= 0).
extern const Check positive;
extern const Check seconds;
// Any number >= 0 (CLI11's NonNegativeNumber: --exit-after).
extern const Check non_negative;
// The name of a file that exists (and is not a directory).
extern const Check existing_file;
// One of these words exactly; the help lists them.
Check one_of(std::vector<std::string> words);

// One option of a Cli, owned by it. Each call returns the option again, so
// they chain as CLI11's do: cli.add_option(...)->check(...)->required().
class Option {
public:
    explicit Option(CLI::Option* option) : option_(option) {}
    Option* check(const Check& rule);
    Option* required();
    // The default the help shows, for an option with no variable of its own
    // (add_option_function).
    Option* default_str(const std::string& text);

private:
    CLI::Option* option_;
};

// A program's command line. An option writes into its variable during
// parse_or_exit(); the variable's value beforehand is the default the help
// shows. The variables must outlive the parse.
class Cli {
public:
    Cli(std::string program, std::string description);
    ~Cli();
    Cli(const Cli&) = delete;
    Cli& operator=(const Cli&) = delete;

    // One overload per value type the examples parse: the template that
    // parses each is instantiated once, in cli.cpp. A name without "--" is a
    // positional argument.
    Option* add_option(const std::string& name, int& value, const std::string& description);
    Option* add_option(const std::string& name, long& value, const std::string& description);
    Option* add_option(const std::string& name, std::size_t& value, const std::string& description);
    Option* add_option(const std::string& name, std::uint16_t& value, const std::string& description);
    Option* add_option(const std::string& name, std::uint32_t& value, const std::string& description);
    Option* add_option(const std::string& name, double& value, const std::string& description);
    Option* add_option(const std::string& name, std::string& value, const std::string& description);
    Option* add_option(const std::string& name, std::vector<std::string>& values, const std::string& description);
    // A value handed to `apply` (during parsing) rather than stored.
    Option* add_option_function(const std::string& name, std::function<void(const std::string&)> apply,
                                const std::string& description);
    Option* add_flag(const std::string& name, bool& value, const std::string& description);

    // Parses, or exits: 0 after --help, 2 (with fail()'s line) for a bad command line.
    void parse_or_exit(int argc, char** argv);

    // For what only the program can check, after parsing: "<program>:
    // <message>" and "(try --help)" on stderr, exit 2.
    [[noreturn]] void fail(const std::string& message) const;

    const std::string& get_name() const;

private:
    Option* keep(CLI::Option* option);

    std::unique_ptr<CLI::App> app_;
    std::deque<Option> options_;  // a deque: the Option* handed out stay valid as it grows
};

// --backend select|poll|epoll, straight into a reactor::Backend.
inline Option* add_backend_option(Cli& cli, reactor::Backend& backend) {
    return cli
        .add_option_function(
            "--backend", [&backend](const std::string& name) { backend = *reactor::parse_backend(name); },
            "readiness backend: select, poll or epoll")
        ->check(one_of({"select", "poll", "epoll"}))
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
inline int interrupted(const Cli& cli) {
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
    CtrlC(reactor::Scheduler& sched, const Cli& cli) : sched_(sched), cli_(cli) {
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
    const Cli& cli_;
    bool pressed_ = false;
};

// Scheduler options for --backend: reactor::Scheduler sched(examples::on(backend)).
inline reactor::Scheduler::Options on(reactor::Backend backend) {
    reactor::Scheduler::Options options;
    options.backend = backend;
    return options;
}

}  // namespace examples
