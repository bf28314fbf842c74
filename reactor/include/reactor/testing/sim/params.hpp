// SPDX-License-Identifier: MIT
// reactor::testing::sim::Params: the knobs of a simulated world's network.
// Every draw within their bounds comes from the world's seed. A swarm run
// (swarm.hpp) draws a Params of its own from each seed (draw_params), so
// that one seed tests small buffers and long latencies and the next the
// opposite (TigerBeetle's VOPR "swarm testing"); to_string prints one on the
// line that reports a failing seed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "reactor/clock.hpp"
#include "reactor/export.hpp"

namespace reactor::testing::sim {

struct Params {
    // One latency per ordered pair of hosts, drawn once, in [min, max].
    Duration min_latency = std::chrono::microseconds(50);
    Duration max_latency = std::chrono::milliseconds(5);
    // Added to each segment's latency, in [0, max_jitter]; a segment still
    // never arrives before the one sent before it.
    Duration max_jitter = std::chrono::microseconds(500);
    // Bytes one direction of a connection holds between the sender and the
    // reader (send buffer and receive window together), drawn per direction.
    std::size_t min_buffer = 4 * 1024;
    std::size_t max_buffer = 64 * 1024;
    // Chance that a send() accepts, or a recv() returns, only part of what
    // it could (at least one byte).
    unsigned short_write_percent = 20;
    unsigned short_read_percent = 20;
};

// A Params drawn from `seed` alone (its own stream: the world's draws are
// not shifted by it): latencies from 1 us to 50 ms, buffers from 1 byte to
// 256 KiB, short reads and writes from never to always half the time.
REACTOR_API Params draw_params(std::uint64_t seed);

// One line: "latency 50us..5ms jitter 500us buffer 4096..65536 short-write 20% short-read 20%".
REACTOR_API std::string to_string(const Params& params);

}  // namespace reactor::testing::sim
