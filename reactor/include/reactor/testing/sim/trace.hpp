// SPDX-License-Identifier: MIT
// reactor::testing::sim::Trace: what a simulated world delivered, as one
// 64-bit hash and a count. Each event the network delivers (a connection
// request, its answer, bytes, an end of stream, a reset) is folded in with
// its virtual time, so two runs of one seed that differ anywhere (an event,
// its time, its bytes, their order) end with different hashes: the
// determinism check compares two numbers (madsim's
// MADSIM_TEST_CHECK_DETERMINISM). With keep_lines(true) each event is also
// kept as a line of text, for printing the run of a failing seed.
// Loop thread only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace reactor::testing::sim {

class Trace {
public:
    // Folds one value in (FNV-1a over its 8 bytes, then a final mix at hash()).
    void add(std::uint64_t value) noexcept {
        for (int i = 0; i < 8; ++i) {
            hash_ ^= (value >> (8 * i)) & 0xff;
            hash_ *= kPrime;
        }
    }
    void add(std::string_view bytes) noexcept {
        add(bytes.size());
        for (unsigned char c : bytes) {
            hash_ ^= c;
            hash_ *= kPrime;
        }
    }
    // One event: its fields are folded in by the caller; this counts it and,
    // when lines are kept, records `line`.
    // The hash after each kept event is kept with its line: two runs' first
    // divergent event is the first whose hashes differ, even when the lines
    // (which name sizes, not bytes) read the same (first_divergence).
    void event(std::string_view line) {
        ++events_;
        if (keep_lines_) {
            lines_.emplace_back(line);
            hashes_.push_back(hash());
        }
    }

    std::uint64_t hash() const noexcept {
        std::uint64_t z = hash_ ^ events_;
        z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdULL;
        return z ^ (z >> 33);
    }
    std::uint64_t events() const noexcept { return events_; }

    void keep_lines(bool on) { keep_lines_ = on; }
    bool keeps_lines() const noexcept { return keep_lines_; }
    const std::vector<std::string>& lines() const noexcept { return lines_; }
    const std::vector<std::uint64_t>& hashes() const noexcept { return hashes_; }

private:
    static constexpr std::uint64_t kPrime = 0x100000001b3ULL;
    std::uint64_t hash_ = 0xcbf29ce484222325ULL;
    std::uint64_t events_ = 0;
    bool keep_lines_ = false;
    std::vector<std::string> lines_;
    std::vector<std::uint64_t> hashes_;
};

}  // namespace reactor::testing::sim
