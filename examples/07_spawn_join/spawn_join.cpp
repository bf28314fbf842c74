// SPDX-License-Identifier: MIT
// spawn_join: ten background tasks, joined; and one that fails unjoined.
//
// Step 07 of the series (examples/README.md). New here: join handles carry
// results; an unjoined failure is still reported.
//
// main spawns ten tasks; task i prints "I am background task i", naps, and
// returns i. main joins them one by one and prints "res=45". It also spawns
// --failing tasks that throw and that nobody joins: their errors are not lost,
// the Scheduler's exception handler reports them on stderr ("Task exception was
// never retrieved", naming the spawn site). --speed X divides every delay by X.
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

using examples::say;

// A background task: prints who it is, naps, returns its number. A failing
// one naps quietly, then throws instead.
class Background {
public:
    enum class State { start, napping };

    Background(reactor::Scheduler& sched, int i, Seconds nap, bool fails = false)
        : sched_(sched), i_(i), nap_length_(nap), fails_(fails) {}

    futures::Step<int> resume() {
        switch (state_) {
        case State::start:
            if (!fails_) say(fmt::format("I am background task {}", i_));
            state_ = State::napping;
            return nap_ = futures::sleep(sched_, nap_length_);
        case State::napping:
            nap_.result();
            if (fails_)
                throw std::runtime_error(fmt::format("failing task {} gave up on purpose, and nobody joined it", i_));
            return i_;
        }
        throw std::logic_error("spawn_join: unknown state");
    }

private:
    reactor::Scheduler& sched_;
    int i_;
    Seconds nap_length_;
    bool fails_;
    State state_ = State::start;
    futures::Future<void> nap_;
};

// Spawns everything, joins the ten in order, prints the sum.
class Main {
public:
    enum class State { spawn, joining };

    Main(reactor::Scheduler& sched, int failing, double speed) : sched_(sched), failing_(failing), speed_(speed) {}

    futures::Step<void> resume() {
        switch (state_) {
        case State::spawn:
            for (int i = 0; i < 10; ++i)
                joins_.push_back(futures::spawn(sched_, Background(sched_, i, Seconds(1) / speed_)));
            for (int i = 0; i < failing_; ++i)  // the handle is dropped: never joined
                futures::spawn(sched_, Background(sched_, i, Seconds(0.5) / speed_, /*fails=*/true));
            state_ = State::joining;
            return joins_[0];
        case State::joining:
            sum_ += joins_[next_].result();
            if (++next_ < joins_.size()) return joins_[next_];
            say(fmt::format("res={}", sum_));
            return futures::finished;
        }
        throw std::logic_error("spawn_join: unknown state");
    }

private:
    reactor::Scheduler& sched_;
    int failing_;
    double speed_;
    State state_ = State::spawn;
    std::vector<futures::Future<int>> joins_;
    std::size_t next_ = 0;
    int sum_ = 0;
};

int run(int argc, char** argv) {
    examples::Cli cli("spawn_join", "Ten background tasks return 0..9; main joins them and prints res=45.");
    double speed = 1;
    int failing = 1;
    cli.add_option("--speed", speed, "divide every delay by this factor")->check(examples::positive);
    cli.add_option("--failing", failing,
                   "how many extra tasks fail without ever being joined (their errors are reported)")
        ->check(examples::range(0, 100));
    cli.parse_or_exit(argc, argv);

    reactor::Scheduler sched;
    // Ctrl-C stops the run (cli.hpp). Installed before the first line is
    // printed, so whoever sees that line may interrupt.
    examples::CtrlC ctrl_c(sched, cli);
    futures::Future<void> main_task = futures::spawn(sched, Main(sched, failing, speed));
    if (auto status = ctrl_c.run_until(main_task)) return *status;
    main_task.result();  // rethrows what it failed with, if it did
    // Let any failing task still napping finish (and be reported).
    return ctrl_c.run().value_or(0);
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("spawn_join", run, argc, argv); }
