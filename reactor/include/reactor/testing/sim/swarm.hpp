// SPDX-License-Identifier: MIT
// reactor::testing::sim::Swarm: many seeds of one test body, each in a world
// with its own network drawn from the seed (draw_params), and for each seed
// that fails one line saying how to run it again (TigerBeetle's VOPR: "a
// failure is seed + parameters + commit, and replays exactly").
//
//     sim::Swarm swarm([](sim::World& w) { ...; w.run_for(10s); if (broken) throw std::runtime_error("..."); });
//     swarm.options().replay = "./test_sim --run_test=my_case";
//     auto result = swarm.run(1, 1000);   // seeds 1..1000; or only $REACTOR_SIM_SEED, traced
//     BOOST_TEST(result.failures.empty());
//
// The body sets up its hosts in the World it is given and runs it; it fails
// by throwing (its what() goes on the line). It may read the seed and the
// drawn Params from the World. A failure prints
//
//     sim: seed 17 failed: lost 3 bytes | latency 312us..41ms ... | replay: REACTOR_SIM_SEED=17 ./test_sim ...
//
// Replay: when REACTOR_SIM_SEED is set, run() runs that seed only, with the
// world's trace kept, and prints every event of it before its result: the
// same world, event for event (the seed is all there is). replay(seed) does
// the same without the variable; with check_determinism, a seed whose traced
// run passed is then run twice more and its traces compared, so that a
// failure of determinism replays too.
//
// Hunting (bench/sim_mutants/run): with REACTOR_SIM_STOP_AT_FAILURE=1 in
// the environment, run() stops after the first failing seed. Every run()
// and replay() ends with one line on out() (and on std::cerr as well when
// stopping at a failure, whatever out() is, so that the runner sees it):
//
//     sim: 10000 seeds, 0 failed; first failure after none; 8123.4 s virtual, 61.2 s real
//     sim: 37 seeds, 1 failed; first failure after 37 seeds; 29.9 s virtual, 0.3 s real
//
// virtual: the worlds' elapsed time summed over every world run (a
// determinism check runs two per seed); real: the wall-clock time of the
// run, printed, never asserted. Loop thread only.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/testing/sim/params.hpp"

namespace reactor::testing::sim {

class World;

struct SwarmFailure {
    std::uint64_t seed = 0;
    Params params;
    std::string what;  // the body's exception, or the determinism report
    // The one line printed for it: seed, what, params, replay command.
    std::string line;
};

struct REACTOR_API SwarmResult {
    std::size_t runs = 0;  // seeds run
    std::vector<SwarmFailure> failures;
    // The worlds' virtual time, summed over every world run; the run's real
    // (wall-clock) time, for the summary line only.
    std::chrono::nanoseconds virtual_time{0};
    std::chrono::nanoseconds real_time{0};
    // Seeds run up to and including the first failing one; 0: none failed.
    std::size_t first_failure_after = 0;
    // The summary line printed at the end (see the top of this file).
    std::string summary() const;
};

struct SwarmOptions {
    // What follows "REACTOR_SIM_SEED=<seed>" on the replay line: the command
    // that runs this body (a test binary and its test's name). Empty: this
    // program's path, read from /proc/self/exe.
    std::string replay;
    // Where the failure lines and a replay's trace go; null: std::cerr.
    std::ostream* out = nullptr;
    // Each seed's network from draw_params(seed); false: the Params below.
    bool draw = true;
    // With draw: the fault rates drawn too (draw_params(seed, true)); the
    // body must then accept connections that end early.
    bool faults = false;
    // With draw: host crashes drawn too (draw_params(seed, faults, true));
    // the body's servers need a start function (World::host(name, start)).
    bool crashes = false;
    Params params;
    // Runs each seed twice and fails it if the traces differ (determinism.hpp).
    bool check_determinism = false;
};

class REACTOR_API Swarm {
public:
    // The variable a replay sets: the one seed to run, traced.
    static constexpr const char* kSeedVariable = "REACTOR_SIM_SEED";
    // Set to 1: run() stops after the first failing seed (a hunt for a
    // planted defect, bench/sim_mutants/run).
    static constexpr const char* kStopVariable = "REACTOR_SIM_STOP_AT_FAILURE";

    explicit Swarm(std::function<void(World&)> body, SwarmOptions options = {});

    SwarmOptions& options() noexcept { return options_; }
    // The Params a seed runs with.
    Params params_for(std::uint64_t seed) const;

    // Seeds first .. first + count - 1, or only $REACTOR_SIM_SEED (replayed).
    SwarmResult run(std::uint64_t first, std::size_t count);
    // One seed, its trace printed line by line, then its result line.
    SwarmResult replay(std::uint64_t seed);
    // One seed, nothing printed unless it fails: the failure, if any.
    std::optional<SwarmFailure> run_one(std::uint64_t seed, bool trace = false);

    // $REACTOR_SIM_SEED, if set to a number (anything else: std::invalid_argument).
    static std::optional<std::uint64_t> seed_from_environment();
    // $REACTOR_SIM_STOP_AT_FAILURE is 1.
    static bool stop_at_failure_from_environment();

private:
    std::ostream& out() const;
    std::string replay_command() const;
    void print_summary(const SwarmResult& result) const;

    std::function<void(World&)> body_;
    SwarmOptions options_;
    std::chrono::nanoseconds virtual_time_{0};  // summed by run_one's worlds
};

}  // namespace reactor::testing::sim
