// SPDX-License-Identifier: MIT
// reactor::testing::sim::check_determinism: runs one seed twice and says
// whether both runs delivered the same events (madsim's
// MADSIM_TEST_CHECK_DETERMINISM=1). A world whose run depends on more than
// its seed (real time, a real random number, an unordered container's
// order, a pointer's value) cannot replay a failure from its seed: this is
// the check that it can. When the two traces differ, the first event where
// they part is named, with both runs' lines for it.
//
//     auto report = sim::check_determinism(seed, params, [](sim::World& w) { ...; w.run_for(10s); });
//     if (!report.same) std::cerr << report.to_string() << '\n';
//
// The body is given a fresh World(seed, params) each time, with its trace
// keeping lines; it sets up its hosts and runs the world. An exception from
// the body leaves the check (it is the body's failure, not a divergence).
// Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "reactor/export.hpp"
#include "reactor/testing/sim/params.hpp"
#include "reactor/testing/sim/trace.hpp"

namespace reactor::testing::sim {

class World;

struct Divergence {
    std::uint64_t event = 0;  // the first event (counted from 0) that differs
    std::string first;        // its line in the first run ("" if that run ended before it)
    std::string second;       // and in the second
};

struct REACTOR_API DeterminismReport {
    std::uint64_t seed = 0;
    bool same = true;
    std::uint64_t hash[2] = {0, 0};
    std::uint64_t events[2] = {0, 0};
    std::optional<Divergence> divergence;  // set when !same

    // "seed 7: deterministic (1234 events, trace 9f3a...)" or what differs.
    std::string to_string() const;
};

// The first event where two traces that kept lines differ; none if they
// are the same.
REACTOR_API std::optional<Divergence> first_divergence(const Trace& first, const Trace& second);

REACTOR_API DeterminismReport check_determinism(std::uint64_t seed, const Params& params,
                                                const std::function<void(World&)>& body);
inline DeterminismReport check_determinism(std::uint64_t seed, const std::function<void(World&)>& body) {
    return check_determinism(seed, Params{}, body);
}

}  // namespace reactor::testing::sim
