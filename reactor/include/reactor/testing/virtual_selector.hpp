// SPDX-License-Identifier: MIT
// reactor::testing::VirtualSelector: the driver of virtual time. A Selector
// that wraps a real backend and makes time pass only when the loop would
// sleep (Trio's MockClock with autojump_threshold=0, tokio's paused time,
// asyncio's TestLoop).
//
// Each wait(timeout):
//   1. polls the real backend without blocking, and takes the FdScript's
//      reports due now: if anything is ready, it returns that, and no
//      virtual time passes;
//   2. else, if the loop asked not to wait (timeout 0), returns;
//   3. else, while a TimeHold is alive, blocks in the real backend (virtual
//      time stays where it is) until a real fd is ready;
//   4. else jumps the VirtualClock to the loop's deadline or to the next
//      scripted report it watches, whichever comes first, and returns what
//      is due then. A day of timers passes in as many iterations as it has
//      deadlines, without sleeping.
// With no deadline and nothing scripted, the loop would sleep forever: it
// blocks in the real backend (another thread may post, a real fd may come
// ready), and if nothing comes within real_wait_limit(), throws
// std::runtime_error rather than hang the test. Step 3 has the same limit.
//
// Real fds work as usual (the backend is real): a pipe written by a callback
// is seen by the next wait, before any jump. What the driver cannot see is
// I/O still in flight, a TCP peer's reply not yet arrived: nothing is ready,
// so time jumps ahead of it. A test that waits for real I/O takes a
// TimeHold for as long as the I/O is in flight; the order of its output is
// then the same on every run.
//
// Loop thread only (the Scheduler calls it; holds are taken and dropped on
// the loop thread). Owned by the Scheduler; the VirtualClock must outlive it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reactor/selector.hpp"
#include "reactor/testing/fd_script.hpp"
#include "reactor/testing/virtual_clock.hpp"

namespace reactor::testing {

class VirtualSelector;

// While one is alive, virtual time does not jump: the loop waits for real
// fds for real. Movable; must not outlive its VirtualSelector (a hold kept in
// a callback is destroyed with the Scheduler's callbacks, before its selector).
class TimeHold {
public:
    TimeHold() = default;
    TimeHold(TimeHold&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)) {}
    TimeHold& operator=(TimeHold&& other) noexcept {
        if (this != &other) {
            release();
            owner_ = std::exchange(other.owner_, nullptr);
        }
        return *this;
    }
    TimeHold(const TimeHold&) = delete;
    TimeHold& operator=(const TimeHold&) = delete;
    ~TimeHold() { release(); }

    bool holds() const noexcept { return owner_ != nullptr; }
    inline void release() noexcept;  // idempotent

private:
    friend class VirtualSelector;
    explicit TimeHold(VirtualSelector* owner) noexcept : owner_(owner) {}
    VirtualSelector* owner_ = nullptr;
};

class VirtualSelector : public Selector {
public:
    VirtualSelector(VirtualClock& clock, std::unique_ptr<Selector> real)
        : clock_(clock), real_(std::move(real)), script_([this](int fd) { return watched_for_real(fd); }) {
        if (!real_) throw std::invalid_argument("VirtualSelector: needs a real selector to wrap");
    }

    std::string_view name() const noexcept override { return real_->name(); }

    void set_interest(int fd, Interest interest) override {
        if (script_.scripts(fd)) return script_.set_interest(fd, interest);
        real_->set_interest(fd, interest);  // validates first: on throw nothing changed
        if (fd >= 0) {
            auto index = static_cast<std::size_t>(fd);
            if (index >= real_interest_.size()) real_interest_.resize(index + 1, Interest::none);
            real_interest_[index] = interest;
        }
    }
    bool has_pending_changes() const noexcept override { return real_->has_pending_changes(); }
    void forget(int fd) noexcept override {
        if (script_.scripts(fd)) return script_.forget(fd);
        if (fd >= 0 && static_cast<std::size_t>(fd) < real_interest_.size()) {
            real_interest_[static_cast<std::size_t>(fd)] = Interest::none;
        }
        real_->forget(fd);
    }

    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<FdEvent>& out) override {
        const std::size_t before = out.size();
        real_->wait(std::chrono::nanoseconds::zero(), out);
        script_.deliver_due(clock_.now(), out);
        if (out.size() != before || timeout == std::chrono::nanoseconds::zero()) return;
        if (holds_ != 0) {
            return wait_real(out, "virtual time is held (a TimeHold is alive) and no real fd became ready");
        }
        std::optional<TimePoint> target;
        if (timeout) {
            const auto step = std::chrono::ceil<Duration>(*timeout);
            target = detail::saturating_add(clock_.now(), step);
        }
        if (auto next = script_.next_deliverable(); next && (!target || *next < *target)) {
            target = std::max(*next, clock_.now());
        }
        if (!target) {
            return wait_real(out, "the loop waits forever with nothing ready, no timer and nothing scripted (it would hang)");
        }
        ++jumps_;
        clock_.advance_to(*target);
        script_.deliver_due(clock_.now(), out);
    }

    // The scripted fds (see fd_script.hpp).
    FdScript& script() noexcept { return script_; }
    const FdScript& script() const noexcept { return script_; }

    // Freezes virtual time until the hold is released or destroyed.
    TimeHold hold_time() noexcept {
        ++holds_;
        return TimeHold(this);
    }
    bool time_held() const noexcept { return holds_ != 0; }

    // How long a wait that cannot jump blocks for real before it throws.
    std::chrono::nanoseconds real_wait_limit() const noexcept { return real_wait_limit_; }
    void set_real_wait_limit(std::chrono::nanoseconds limit) {
        if (limit <= std::chrono::nanoseconds::zero()) {
            throw std::invalid_argument("VirtualSelector: the real wait limit must be > 0");
        }
        real_wait_limit_ = limit;
    }

    // Counters, for tests of the driver itself: how many times virtual time
    // jumped, and how many waits blocked in the real backend.
    std::uint64_t jumps() const noexcept { return jumps_; }
    std::uint64_t real_blocks() const noexcept { return real_blocks_; }

private:
    friend class TimeHold;

    void wait_real(std::vector<FdEvent>& out, const char* why) {
        const std::size_t before = out.size();
        ++real_blocks_;
        real_->wait(real_wait_limit_, out);
        if (out.size() == before) throw std::runtime_error(std::string("VirtualSelector: ") + why);
    }

    bool watched_for_real(int fd) const noexcept {
        return fd >= 0 && static_cast<std::size_t>(fd) < real_interest_.size() &&
               real_interest_[static_cast<std::size_t>(fd)] != Interest::none;
    }

    VirtualClock& clock_;
    std::unique_ptr<Selector> real_;
    FdScript script_;
    std::vector<Interest> real_interest_;  // indexed by fd: what the real backend is asked to watch
    std::size_t holds_ = 0;
    std::chrono::nanoseconds real_wait_limit_ = std::chrono::seconds(5);
    std::uint64_t jumps_ = 0;
    std::uint64_t real_blocks_ = 0;
};

inline void TimeHold::release() noexcept {
    if (owner_) {
        --owner_->holds_;
        owner_ = nullptr;
    }
}

}  // namespace reactor::testing
