// SPDX-License-Identifier: MIT
// reactor::testing::sim::TlsRandomness: OpenSSL's randomness drawn from the
// world's seed while a sim::World runs a host, so that a TLS run inside a
// world (its client and server randoms, key shares, signatures' nonces) is
// the same on every run of a seed. In reactor::tls (it needs OpenSSL).
//
//     sim::TlsRandomness seeded;       // before the worlds, for as long as they run TLS
//     sim::World world(seed);           // its handshakes now replay from `seed`
//
// While one lives, OpenSSL's RAND_bytes and RAND_priv_bytes (and all that
// OpenSSL draws through them: the TLS stack, key generation in the default
// provider) go through a RAND_METHOD that, on a thread where a world runs a
// host (reactor/detail/world_mark.hpp), fills from that world's own stream of
// its seed; everywhere else from OpenSSL's public DRBG (the private one is
// not reached through a RAND_METHOD: a process that keeps its long-term keys
// apart from its nonces should not hold one outside its tests).
//
// Process-wide and testing only: RAND_set_rand_method is global, so make and
// destroy it while no other thread uses OpenSSL; one at a time (a second:
// std::logic_error). What it cannot make deterministic: anything OpenSSL
// reads from real time, such as a TLS session ticket's issue time, so a
// server in a world should turn tickets off (ServerOptions::session_tickets).
#pragma once

#include "reactor/export.hpp"

namespace reactor::testing::sim {

class REACTOR_API TlsRandomness {
public:
    TlsRandomness();   // installs the method (std::logic_error if one is already)
    ~TlsRandomness();  // puts back the method that was there before
    TlsRandomness(const TlsRandomness&) = delete;
    TlsRandomness& operator=(const TlsRandomness&) = delete;
};

}  // namespace reactor::testing::sim
