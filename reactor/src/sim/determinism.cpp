// SPDX-License-Identifier: MIT
// One seed, two runs, one comparison (determinism.hpp).
#include "reactor/testing/sim/determinism.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "reactor/testing/sim/world.hpp"

namespace reactor::testing::sim {

std::optional<Divergence> first_divergence(const Trace& a, const Trace& b) {
    const auto& ha = a.hashes();
    const auto& hb = b.hashes();
    const std::size_t common = std::min(ha.size(), hb.size());
    std::size_t i = 0;
    while (i < common && ha[i] == hb[i]) ++i;
    if (i == common && ha.size() == hb.size()) {
        if (a.hash() == b.hash()) return std::nullopt;
        // Same kept events, different hashes: lines were not kept for all
        // of them (keep_lines turned on late). Name the end.
    }
    Divergence d;
    d.event = i;
    if (i < a.lines().size()) d.first = a.lines()[i];
    if (i < b.lines().size()) d.second = b.lines()[i];
    return d;
}

DeterminismReport check_determinism(std::uint64_t seed, const Params& params,
                                    const std::function<void(World&)>& body) {
    DeterminismReport report;
    report.seed = seed;
    // Both worlds live until compared: their traces are what is compared.
    World first(seed, params);
    first.trace().keep_lines(true);
    body(first);
    World second(seed, params);
    second.trace().keep_lines(true);
    body(second);
    const World* worlds[2] = {&first, &second};
    for (int i = 0; i < 2; ++i) {
        report.hash[i] = worlds[i]->trace().hash();
        report.events[i] = worlds[i]->trace().events();
    }
    report.same = report.hash[0] == report.hash[1] && report.events[0] == report.events[1];
    if (!report.same) report.divergence = first_divergence(first.trace(), second.trace());
    return report;
}

std::string DeterminismReport::to_string() const {
    if (same) return fmt::format("seed {}: deterministic ({} events, trace {:016x})", seed, events[0], hash[0]);
    std::string text = fmt::format("seed {}: NOT deterministic: run 1 {} events, trace {:016x}; run 2 {} events, "
                                   "trace {:016x}",
                                   seed, events[0], hash[0], events[1], hash[1]);
    if (divergence) {
        auto line = [](const std::string& l) { return l.empty() ? std::string("(no such event)") : l; };
        text += fmt::format("; first divergent event #{}:\n  run 1: {}\n  run 2: {}", divergence->event,
                            line(divergence->first), line(divergence->second));
    }
    return text;
}

}  // namespace reactor::testing::sim
