// SPDX-License-Identifier: MIT
// The open connections of one loop: a service (LoopService) that ends them
// with the loop. A Connection owns itself while open (nobody else would free
// it), so the loop's end must reach it: Scheduler::close() aborts every open
// connection with CloseKind::scheduler_closed and then runs its close
// callback; abandonment (close()'s last phase, ~Scheduler) aborts what is
// still open and releases it, its callbacks destroyed unrun. live() lists
// each once, named by the line that accepted or connected it. Loop thread only.
//
// An open connection is its fd's owner in the loop (Scheduler::fd_owner), so
// the service keeps one bit per fd number, set while that fd is an open
// connection's, and finds the connection through the loop: a connection
// pays for its place here one bit, not the links of a list (issue 22,
// bench/results/memory.md). The loop's end takes them in fd order.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "reactor/loop_service.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/scheduler.hpp"

namespace reactor::detail {

class OpenConnections final : public LoopService {
public:
    explicit OpenConnections(Scheduler& sched) noexcept : LoopService(sched) {}

    // From start() on, once the connection owns its fd in the loop; may throw
    // (std::bad_alloc), before the connection owns itself.
    void add(int fd) {
        const auto word = static_cast<std::size_t>(fd) / 64;
        if (word >= open_.size()) open_.resize(word + 1);
        open_[word] |= bit(fd);
    }
    // As the connection closes (release_fd), before it forgets its fd.
    void remove(int fd) noexcept {
        const auto word = static_cast<std::size_t>(fd) / 64;
        if (word < open_.size()) open_[word] &= ~bit(fd);
    }

    // Those open now; one opened by a close callback is abandoned later, in
    // close()'s abandon phase (close callbacks run after this returns).
    void close() override {
        std::vector<int> now;
        for_each_fd([&now](int fd) { now.push_back(fd); });
        for (int fd : now)
            if (is_open(fd)) connection(fd).end_with_loop_closing();
    }
    void abandon() noexcept override {
        // Ending one may end another (a callback destroyed with it held the
        // last reference to a set or a stream): look again until none is left.
        for (std::size_t word = 0; word < open_.size(); ++word)
            while (open_[word] != 0) {
                const int fd = first_fd(word);
                Connection& c = connection(fd);
                remove(fd);  // as release_fd does: this loop ends whatever happens
                c.end_with_loop_abandoned();
            }
    }
    void describe(std::vector<LiveItem>& out) const override {
        for_each_fd([&](int fd) { connection(fd).describe_for_live(out); });
    }

private:
    std::vector<std::uint64_t> open_;  // bit fd % 64 of word fd / 64: fd is an open connection's

    static std::uint64_t bit(int fd) noexcept { return std::uint64_t{1} << (static_cast<unsigned>(fd) % 64); }
    static int first_fd(std::size_t word, std::uint64_t bits) noexcept {
        return static_cast<int>(word * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
    }
    int first_fd(std::size_t word) const noexcept { return first_fd(word, open_[word]); }
    bool is_open(int fd) const noexcept {
        const auto word = static_cast<std::size_t>(fd) / 64;
        return word < open_.size() && (open_[word] & bit(fd)) != 0;
    }
    Connection& connection(int fd) const noexcept {
        return static_cast<Connection&>(*scheduler().fd_owner(fd));  // the bit is set only while it is
    }
    template <class F>
    void for_each_fd(F&& f) const {
        for (std::size_t word = 0; word < open_.size(); ++word)
            for (std::uint64_t bits = open_[word]; bits != 0; bits &= bits - 1) f(first_fd(word, bits));
    }
};

}  // namespace reactor::detail
