// SPDX-License-Identifier: MIT
// reactor::sim_guard from the installed package: linked, with nothing in
// this file naming it or its interposers, it still catches std::chrono's
// steady_clock read by a host (a static archive's object was brought into
// the link by the target's, or the .pc's, linker flags), and leaves the
// clock real outside the run.
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <reactor/testing/sim/world.hpp>

using namespace std::chrono_literals;
namespace sim = reactor::testing::sim;

int main() {
    sim::World world(7);
    sim::Host& server = world.host("server");
    server.scheduler().call_later(1s, [] { (void)std::chrono::steady_clock::now(); });
    std::string error = "(nothing thrown)";
    try {
        world.run_for(2s);
    } catch (const std::logic_error& e) {
        error = e.what();
    }
    const bool caught =
        error.starts_with("reactor: sim world (seed 7) host server read real time: clock_gettime(CLOCK_MONOTONIC)");
    const bool real_outside = std::chrono::system_clock::now() > sim::World::kEpoch + std::chrono::hours(24 * 365 * 20);
    std::printf("sim_guard: a host's steady_clock read %s (%s)\n", caught ? "failed the run" : "was not seen",
                error.c_str());
    return caught && real_outside ? 0 : 1;
}
