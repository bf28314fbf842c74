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
constexpr std::uint64_t kCrashParamsStream = 0x5a4e;
constexpr std::uint64_t kUdpParamsStream = 0x5a4f;
constexpr std::uint64_t kResourceParamsStream = 0x5a50;

Duration micros(std::uint64_t n) { return std::chrono::microseconds(static_cast<std::int64_t>(n)); }

// "500us", "5ms", "2s": the largest unit that divides it exactly.
std::string duration_text(Duration d) {
    const auto ns = d.count();
    if (ns != 0 && ns % 1'000'000'000 == 0) return fmt::format("{}s", ns / 1'000'000'000);
    if (ns != 0 && ns % 1'000'000 == 0) return fmt::format("{}ms", ns / 1'000'000);
    if (ns % 1'000 == 0) return fmt::format("{}us", ns / 1'000);
    return fmt::format("{}ns", ns);
}

// The network and, with `faults`, its fault rates.
Params draw_network(std::uint64_t seed, bool faults) {
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
    if (!faults) return p;
    // Rare enough that most connections of a seed live, common enough that
    // a few hundred connections meet each kind.
    p.reset_percent = static_cast<unsigned>(r.between(0, 10));
    p.max_reset_prefix = static_cast<std::size_t>(r.between(0, 16 * 1024));
    p.refuse_percent = static_cast<unsigned>(r.between(0, 5));
    p.clog_percent = static_cast<unsigned>(r.between(0, 5));
    p.max_clog = micros(r.between(1'000, 2'000'000));
    p.partition_percent = static_cast<unsigned>(r.between(0, 30));
    p.one_way_percent = static_cast<unsigned>(r.between(0, 100));
    p.min_stable = micros(r.between(100'000, 5'000'000));
    p.max_stable = p.min_stable + micros(r.between(0, 10'000'000));
    p.min_partition = micros(r.between(1'000, 1'000'000));
    p.max_partition = p.min_partition + micros(r.between(0, 5'000'000));
    // Their own stream: a seed's TCP fault rates are what they were before
    // these existed. Datagram faults are common on real networks: up to a
    // tenth of datagrams each.
    Random u = Random(seed).split(kUdpParamsStream);
    p.udp_loss_percent = static_cast<unsigned>(u.between(0, 10));
    p.udp_duplicate_percent = static_cast<unsigned>(u.between(0, 10));
    p.udp_reorder_percent = static_cast<unsigned>(u.between(0, 10));
    p.max_reorder = micros(u.between(1, 50'000));
    // Its own stream too. Per system call, not per connection: 1 % already
    // fails one call in a hundred, so half the seeds leave it off.
    Random res = Random(seed).split(kResourceParamsStream);
    p.resource_fault_percent = static_cast<unsigned>(res.between(0, 1));
    return p;
}

// Drawn after the network's, from their own stream: turning crashes on
// leaves a seed's network as it was.
void draw_crashes(std::uint64_t seed, Params& p) {
    Random r = Random(seed).split(kCrashParamsStream);
    p.crash_percent = static_cast<unsigned>(r.between(10, 50));
    p.min_crash_gap = micros(r.between(1'000'000, 5'000'000));
    p.max_crash_gap = p.min_crash_gap + micros(r.between(0, 15'000'000));
    p.min_downtime = micros(r.between(10'000, 1'000'000));
    p.max_downtime = p.min_downtime + micros(r.between(0, 9'000'000));
}

}  // namespace

Params draw_params(std::uint64_t seed, bool faults, bool crashes) {
    Params p = draw_network(seed, faults);
    if (crashes) draw_crashes(seed, p);
    return p;
}

std::string to_string(const Params& p) {
    std::string text = fmt::format("latency {}..{} jitter {} buffer {}..{} short-write {}% short-read {}%",
                       duration_text(p.min_latency), duration_text(p.max_latency), duration_text(p.max_jitter),
                       p.min_buffer, p.max_buffer, p.short_write_percent, p.short_read_percent);
    // Only the faults that are on: a line without faults stays short.
    if (p.reset_percent) text += fmt::format(" reset {}% after <={}", p.reset_percent, p.max_reset_prefix);
    if (p.refuse_percent) text += fmt::format(" refuse {}%", p.refuse_percent);
    if (p.clog_percent) text += fmt::format(" clog {}% <={}", p.clog_percent, duration_text(p.max_clog));
    if (p.partition_percent)
        text += fmt::format(" partition {}% ({}% one-way) {}..{} after {}..{}", p.partition_percent, p.one_way_percent,
                            duration_text(p.min_partition), duration_text(p.max_partition),
                            duration_text(p.min_stable), duration_text(p.max_stable));
    if (p.udp_loss_percent || p.udp_duplicate_percent || p.udp_reorder_percent)
        text += fmt::format(" udp loss {}% duplicate {}% reorder {}% <={}", p.udp_loss_percent,
                            p.udp_duplicate_percent, p.udp_reorder_percent, duration_text(p.max_reorder));
    if (p.resource_fault_percent) text += fmt::format(" resource-fault {}%", p.resource_fault_percent);
    if (p.crash_percent)
        text += fmt::format(" crash {}% every {}..{} down {}..{}", p.crash_percent, duration_text(p.min_crash_gap),
                            duration_text(p.max_crash_gap), duration_text(p.min_downtime),
                            duration_text(p.max_downtime));
    return text;
}

}  // namespace reactor::testing::sim
