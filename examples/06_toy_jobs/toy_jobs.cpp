// SPDX-License-Identifier: MIT
// toy_jobs: three jobs written as state machines run concurrently on one loop.
//
// Step 06 of the series (examples/README.md). New here: tasks wait
// concurrently; when_all joins them all.
//
// Job A takes 2 s, job B 1 s, job C 3 s. Each is a tiny machine (start work ->
// wait for it -> report); main spawns all three and waits for all of them with
// when_all. Because they wait concurrently, the total is the longest job (3 s),
// not the sum (6 s). --speed X divides every delay by X; the times printed are
// in the jobs' own seconds (wall time x speed), so the output does not change.
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

// Model time: what the jobs would have taken at --speed 1.
class Stopwatch {
public:
    explicit Stopwatch(double speed) : speed_(speed), start_(reactor::Clock::now()) {}
    double seconds() const { return Seconds(reactor::Clock::now() - start_).count() * speed_; }
    Seconds scaled(Seconds s) const { return s / speed_; }

private:
    double speed_;
    reactor::Clock::time_point start_;
};

// One job: announce, "work" (sleep) for its length, announce the end.
class Job {
public:
    enum class State { start, working };

    Job(reactor::Scheduler& sched, const Stopwatch& clock, std::string name, Seconds length)
        : sched_(sched), clock_(clock), name_(std::move(name)), length_(length) {}

    futures::Step<void> resume() {
        switch (state_) {
        case State::start:
            say(fmt::format("job {}: start ({:g} s of work)", name_, length_.count()));
            state_ = State::working;
            return work_ = futures::sleep(sched_, clock_.scaled(length_));
        case State::working:
            work_.result();
            say(fmt::format("job {}: done at {:.2f}s", name_, clock_.seconds()));
            return futures::finished;
        }
        throw std::logic_error("toy_jobs: unknown state");
    }

private:
    reactor::Scheduler& sched_;
    const Stopwatch& clock_;
    std::string name_;
    Seconds length_;
    State state_ = State::start;
    futures::Future<void> work_;
};

int run(int argc, char** argv) {
    examples::Cli cli("toy_jobs", "Jobs A (2 s), B (1 s) and C (3 s) run concurrently: about 3 s in all, not 6.");
    double speed = 1;
    cli.add_option("--speed", speed, "divide every delay by this factor")->check(examples::positive);
    cli.parse_or_exit(argc, argv);

    reactor::Scheduler sched;
    // Ctrl-C stops the run (cli.hpp). Installed before the first line is
    // printed, so whoever sees that line may interrupt.
    examples::CtrlC ctrl_c(sched, cli);
    Stopwatch clock(speed);
    std::vector<futures::Future<void>> jobs{
        futures::spawn(sched, Job(sched, clock, "A", Seconds(2))),
        futures::spawn(sched, Job(sched, clock, "B", Seconds(1))),
        futures::spawn(sched, Job(sched, clock, "C", Seconds(3))),
    };
    futures::Future<void> all = futures::when_all(jobs);
    if (auto status = ctrl_c.run_until(all)) return *status;
    all.result();  // rethrows what a job failed with, if one did
    say(fmt::format("total: {:.2f}s (the jobs add up to 6 s)", clock.seconds()));
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("toy_jobs", run, argc, argv); }
