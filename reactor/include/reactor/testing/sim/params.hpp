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

    // ---- Faults: all off by default (a world without them never fails a
    // connection on its own). Each is drawn from a stream of its own, so
    // turning one on does not change the other draws of a seed.
    // Per connection: after a prefix of [0, max_reset_prefix] bytes in one
    // direction (both drawn), the link breaks: the prefix arrives, then
    // both sides are reset (FoundationDB's "random prefix then close").
    unsigned reset_percent = 0;
    std::size_t max_reset_prefix = 16 * 1024;
    // Per connect that reaches a listener with room: refused all the same.
    unsigned refuse_percent = 0;
    // Per segment: delayed by [0, max_clog] more (and so is what follows
    // it: TCP keeps its order). A clogged link, not a lost segment.
    unsigned clog_percent = 0;
    Duration max_clog = std::chrono::seconds(1);
    // Time alternates between stable periods, [min_stable, max_stable]
    // each, and, after each with this chance, a partition of
    // [min_partition, max_partition]: one host drawn is cut off from all
    // others, both ways or (one_way_percent of them) one way, its sending
    // or its receiving. Nothing is lost: what would arrive while cut off
    // arrives when the partition heals (TCP retransmits), a connect too.
    unsigned partition_percent = 0;
    unsigned one_way_percent = 50;
    Duration min_stable = std::chrono::seconds(1);
    Duration max_stable = std::chrono::seconds(10);
    Duration min_partition = std::chrono::milliseconds(100);
    Duration max_partition = std::chrono::seconds(5);
    // Per UDP datagram (TCP never loses, duplicates or reorders within a
    // connection): lost on the way; delivered twice (the copy up to
    // max_reorder later); or delayed by up to max_reorder more, so that
    // datagrams sent after it may arrive first (without it, datagrams
    // between two hosts arrive in the order sent). Drawn from a stream of
    // their own: a world's TCP draws and trace are the same with them on.
    unsigned udp_loss_percent = 0;
    unsigned udp_duplicate_percent = 0;
    unsigned udp_reorder_percent = 0;
    Duration max_reorder = std::chrono::milliseconds(10);
    // Per system call of a host that would otherwise go ahead: a resource
    // of the kernel cannot be allocated. accept4() fails with ENOMEM (the
    // connection stays queued), connect() with ENOBUFS (tcp_connect's; the
    // socket is as it was), send() with ENOBUFS (nothing sent) and recv()
    // with ENOMEM (nothing taken) on a TCP connection with room or data.
    // The rows of docs/faults.md the library already survives: accepting
    // pauses and resumes, that connection ends with EndKind::error and the
    // errno, the connect reports it. socket() of a TCP socket (ENOBUFS,
    // inet_create's) only on a host that asks (Host::set_resource_faults):
    // a listener's would stop a server from starting. Drawn from a stream
    // of its own, only when not zero: the other draws and the trace of a
    // seed are the same with it off. A failure is noted in the trace.
    unsigned resource_fault_percent = 0;

    // ---- Host crashes: off by default. A chance comes every
    // [min_crash_gap, max_crash_gap] of virtual time; at each, with this
    // percent, one host crashes (World::crash), drawn among those made with
    // a start function (World::host(name, start)) and up at that moment:
    // only they can come back as they were. It restarts (World::restart)
    // after a downtime drawn in [min_downtime, max_downtime]. Hosts without
    // a start (the clients a test drives by hand) never crash at random.
    unsigned crash_percent = 0;
    Duration min_crash_gap = std::chrono::seconds(1);
    Duration max_crash_gap = std::chrono::seconds(10);
    Duration min_downtime = std::chrono::milliseconds(100);
    Duration max_downtime = std::chrono::seconds(5);
};

// A Params drawn from `seed` alone (its own stream: the world's draws are
// not shifted by it): latencies from 1 us to 50 ms, buffers from 1 byte to
// 256 KiB, short reads and writes from never to always half the time;
// with `faults`, the fault rates too (each from 0 to a few percent of
// connections, and partitions after up to a third of stable periods).
// The UDP faults are drawn with the faults, from a stream of their own
// (the other fault rates of a seed are what they were before UDP's existed),
// and so is resource_fault_percent (0 or 1 %, half the seeds each).
// With `crashes`, host crashes too (a chance every 1 to 20 s, 10 to 50 % of
// them, down 10 ms to 10 s), from a stream of their own: the other draws of
// a seed are the same with or without them. Only hosts with a start
// function crash (Params::crash_percent).
REACTOR_API Params draw_params(std::uint64_t seed, bool faults = false, bool crashes = false);

// One line: "latency 50us..5ms jitter 500us buffer 4096..65536 short-write 20% short-read 20%".
REACTOR_API std::string to_string(const Params& params);

}  // namespace reactor::testing::sim
