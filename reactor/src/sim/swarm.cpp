// SPDX-License-Identifier: MIT
// Many seeds, one line per failure, a replay from the seed (swarm.hpp).
#include "reactor/testing/sim/swarm.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "reactor/testing/sim/determinism.hpp"
#include "reactor/testing/sim/world.hpp"

namespace reactor::testing::sim {

Swarm::Swarm(std::function<void(World&)> body, SwarmOptions options)
    : body_(std::move(body)), options_(std::move(options)) {}

std::ostream& Swarm::out() const { return options_.out ? *options_.out : std::cerr; }

Params Swarm::params_for(std::uint64_t seed) const { return options_.draw ? draw_params(seed, options_.faults, options_.crashes) : options_.params; }

std::string Swarm::replay_command() const {
    if (!options_.replay.empty()) return options_.replay;
    char path[PATH_MAX] = "";
    const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
    return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string("<this program>");
}

std::optional<std::uint64_t> Swarm::seed_from_environment() {
    const char* text = std::getenv(kSeedVariable);
    if (text == nullptr || *text == '\0') return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const unsigned long long seed = std::strtoull(text, &end, 0);
    if (errno != 0 || *end != '\0')
        throw std::invalid_argument(fmt::format("sim: {}={} is not a seed (a number)", kSeedVariable, text));
    return seed;
}

bool Swarm::stop_at_failure_from_environment() {
    const char* text = std::getenv(kStopVariable);
    return text != nullptr && std::string_view(text) == "1";
}

namespace {

std::string seconds(std::chrono::nanoseconds t) { return fmt::format("{:.1f} s", std::chrono::duration<double>(t).count()); }

// Adds a world's virtual time to the sum as the body leaves it, even by an exception.
struct CountVirtualTime {
    const World& world;
    std::chrono::nanoseconds& sum;
    ~CountVirtualTime() { sum += std::chrono::duration_cast<std::chrono::nanoseconds>(world.elapsed()); }
};

}  // namespace

std::string SwarmResult::summary() const {
    const std::string first = failures.empty() ? std::string("none") : fmt::format("{} seeds", first_failure_after);
    return fmt::format("sim: {} seeds, {} failed; first failure after {}; {} virtual, {} real", runs, failures.size(),
                       first, seconds(virtual_time), seconds(real_time));
}

void Swarm::print_summary(const SwarmResult& result) const {
    const std::string line = result.summary();
    out() << line << '\n';
    if (options_.out != nullptr && options_.out != &std::cerr && stop_at_failure_from_environment())
        std::cerr << line << '\n';
}

std::optional<SwarmFailure> Swarm::run_one(std::uint64_t seed, bool trace) {
    const Params params = params_for(seed);
    std::string what;
    // The body, with its world's virtual time counted.
    const auto counted = [this](World& world) {
        const CountVirtualTime count{world, virtual_time_};
        body_(world);
    };
    try {
        if (options_.check_determinism && !trace) {
            const DeterminismReport report = check_determinism(seed, params, counted);
            if (!report.same) what = report.to_string();
        } else {
            World world(seed, params);
            world.trace().keep_lines(trace);
            // The trace is printed even when the body fails: what led there
            // is what a replay is for.
            struct Print {
                const Swarm& swarm;
                World& world;
                bool on;
                ~Print() {
                    if (!on) return;
                    for (const std::string& line : world.trace().lines()) swarm.out() << line << '\n';
                }
            } print{*this, world, trace};
            counted(world);
        }
    } catch (const std::exception& e) {
        what = e.what();
        if (what.empty()) what = "an exception with no message";
    } catch (...) {
        what = "an exception that is not a std::exception";
    }
    if (what.empty()) return std::nullopt;
    SwarmFailure failure{seed, params, what, {}};
    failure.line = fmt::format("sim: seed {} failed: {} | {} | replay: {}={} {}", seed, what, to_string(params),
                               kSeedVariable, seed, replay_command());
    return failure;
}

SwarmResult Swarm::replay(std::uint64_t seed) {
    const auto started = std::chrono::steady_clock::now();
    virtual_time_ = {};
    out() << fmt::format("sim: replaying seed {} ({})\n", seed, to_string(params_for(seed)));
    SwarmResult result;
    result.runs = 1;
    // Traced, the seed runs once; a failure of determinism needs its two
    // runs: checked after the traced one, when that one passed.
    std::optional<SwarmFailure> failed = run_one(seed, true);
    if (!failed && options_.check_determinism) failed = run_one(seed, false);
    if (auto failure = std::move(failed)) {
        out() << failure->line << '\n';
        result.first_failure_after = 1;
        result.failures.push_back(std::move(*failure));
    } else {
        out() << fmt::format("sim: seed {} passed\n", seed);
    }
    result.virtual_time = virtual_time_;
    result.real_time = std::chrono::steady_clock::now() - started;
    print_summary(result);
    return result;
}

SwarmResult Swarm::run(std::uint64_t first, std::size_t count) {
    if (auto seed = seed_from_environment()) return replay(*seed);
    const bool stop = stop_at_failure_from_environment();
    const auto started = std::chrono::steady_clock::now();  // real time: printed, never asserted
    virtual_time_ = {};
    SwarmResult result;
    for (std::size_t i = 0; i < count; ++i) {
        ++result.runs;
        if (auto failure = run_one(first + i)) {
            out() << failure->line << '\n';
            if (result.failures.empty()) result.first_failure_after = result.runs;
            if (stop && options_.out != nullptr && options_.out != &std::cerr) std::cerr << failure->line << '\n';
            result.failures.push_back(std::move(*failure));
            if (stop) break;
        }
    }
    result.virtual_time = virtual_time_;
    result.real_time = std::chrono::steady_clock::now() - started;
    print_summary(result);
    return result;
}

}  // namespace reactor::testing::sim
