// SPDX-License-Identifier: MIT
// reactor::testing::sim::Random: the one source of randomness of a simulated
// world. Seeded once (World's seed); every draw the world makes comes from it
// or from a stream split off it, so the same seed gives the same run on every
// machine and every standard library (no std::*_distribution, whose results
// are implementation-defined; FoundationDB's deterministicRandom(),
// TigerBeetle's PRNG per subsystem).
//
// xoshiro256** seeded through splitmix64 (Blackman and Vigna). split(n)
// derives an independent stream from this one's seed and n, without drawing
// from it: a subsystem that draws more or less (a latency model, the order
// hosts run in) does not shift the draws of the others. Loop thread only.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace reactor::testing::sim {

class Random {
public:
    explicit Random(std::uint64_t seed) noexcept : seed_(seed) {
        std::uint64_t s = seed;
        for (auto& word : state_) word = splitmix64(s);
    }

    std::uint64_t seed() const noexcept { return seed_; }

    // A stream of its own, a function of (this stream's seed, `stream`) only.
    Random split(std::uint64_t stream) const noexcept {
        std::uint64_t s = seed_ ^ (0x9e3779b97f4a7c15ULL * (stream + 1));
        return Random(splitmix64(s));
    }

    std::uint64_t next() noexcept {
        const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const std::uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform in [0, n): draws below 2^64 mod n are rejected, so no value is
    // more likely than another. n must be > 0.
    std::uint64_t below(std::uint64_t n) {
        if (n == 0) throw std::invalid_argument("sim::Random::below(0)");
        const std::uint64_t threshold = (0 - n) % n;
        for (;;) {
            const std::uint64_t r = next();
            if (r >= threshold) return r % n;
        }
    }
    // Uniform in [low, high]; high >= low.
    std::uint64_t between(std::uint64_t low, std::uint64_t high) {
        if (high < low) throw std::invalid_argument("sim::Random::between: high < low");
        if (high - low == UINT64_MAX) return next();
        return low + below(high - low + 1);
    }
    // True with probability percent / 100.
    bool percent(unsigned percent) { return percent > 0 && below(100) < percent; }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    static std::uint64_t splitmix64(std::uint64_t& s) noexcept {
        std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

    std::uint64_t seed_;
    std::uint64_t state_[4];
};

}  // namespace reactor::testing::sim
