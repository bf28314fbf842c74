// SPDX-License-Identifier: MIT
// A swarm seed's own network (params.hpp).
#include "reactor/testing/sim/params.hpp"

#include <fmt/format.h>

#include "reactor/testing/sim/random.hpp"

namespace reactor::testing::sim {

namespace {

// Far from the Network's streams (1, 2, 3...): drawing the parameters must
// not be the same sequence as any draw the world then makes from the seed.
constexpr std::uint64_t kParamsStream = 0x5a4d;

Duration micros(std::uint64_t n) { return std::chrono::microseconds(static_cast<std::int64_t>(n)); }

// "500us", "5ms", "2s": the largest unit that divides it exactly.
std::string duration_text(Duration d) {
    const auto ns = d.count();
    if (ns != 0 && ns % 1'000'000'000 == 0) return fmt::format("{}s", ns / 1'000'000'000);
    if (ns != 0 && ns % 1'000'000 == 0) return fmt::format("{}ms", ns / 1'000'000);
    if (ns % 1'000 == 0) return fmt::format("{}us", ns / 1'000);
    return fmt::format("{}ns", ns);
}

}  // namespace

Params draw_params(std::uint64_t seed) {
    Random r = Random(seed).split(kParamsStream);
    Params p;
    // Latency ranges spread over four orders of magnitude: a LAN and a
    // continent are both tested. The upper bound is at least the lower.
    p.min_latency = micros(r.between(1, 1'000));
    p.max_latency = p.min_latency + micros(r.between(0, 50'000));
    p.max_jitter = micros(r.between(0, 5'000));
    // Tiny buffers make every write partial and every reader slow the
    // writer down; large ones hide both.
    p.min_buffer = static_cast<std::size_t>(r.between(1, 16 * 1024));
    p.max_buffer = p.min_buffer + static_cast<std::size_t>(r.between(0, 256 * 1024));
    p.short_write_percent = static_cast<unsigned>(r.between(0, 50));
    p.short_read_percent = static_cast<unsigned>(r.between(0, 50));
    return p;
}

std::string to_string(const Params& p) {
    return fmt::format("latency {}..{} jitter {} buffer {}..{} short-write {}% short-read {}%",
                       duration_text(p.min_latency), duration_text(p.max_latency), duration_text(p.max_jitter),
                       p.min_buffer, p.max_buffer, p.short_write_percent, p.short_read_percent);
}

}  // namespace reactor::testing::sim
