// SPDX-License-Identifier: MIT
// A simulated host's selector: what its Scheduler watches, and what is ready
// among it, asked of the host's kernel (host_kernel.hpp) at every wait. It
// never blocks: a wait with nothing ready tells the World that the host is
// idle until its next timer (the timeout the loop passed), and the World
// runs other hosts or moves virtual time on. So it may only be called while
// the World steps the host; a Scheduler run directly (run(), run_once())
// is refused with std::logic_error, which would otherwise spin or wait for
// nothing. Watched fds are reported in fd order: the same on every run.
// Loop thread only.
#pragma once

#include <cstddef>
#include <map>

#include "reactor/selector.hpp"

namespace reactor::testing::sim::detail {

class HostClock;
class HostKernel;
class Network;

class HostSelector final : public Selector {
public:
    HostSelector(Network& network, HostKernel& kernel, HostClock& clock, std::size_t host) noexcept
        : network_(network), kernel_(kernel), clock_(clock), host_(host) {}

    std::string_view name() const noexcept override { return "sim"; }
    void set_interest(int fd, Interest interest) override;
    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<FdEvent>& out) override;
    // The loop's own eventfd is a real fd: not watched. A wait that finds
    // nothing leaves the loop resting (HostKernel::loop_rests): a post to it
    // from another host's step then goes to its kernel, which wakes the
    // host in the world (Kernel::wake_loop), instead of the eventfd.
    bool watch_wakeup(int /*fd*/) override { return true; }
    void forget(int fd) noexcept override { interest_.erase(fd); }

    // The World's side: a step is one run_once of the host's loop.
    void begin_step() noexcept {
        stepping_ = true;
        idle_ = false;
    }
    // True if the loop found nothing to do in that step: nothing ready, no
    // timer due (it rests until the network or its timer wakes it).
    bool end_step() noexcept {
        stepping_ = false;
        return idle_;
    }

private:
    Network& network_;
    HostKernel& kernel_;
    HostClock& clock_;  // the timeout is in the host's time: its deadline is woken at the world's instant
    std::size_t host_;
    std::map<int, Interest> interest_;
    bool stepping_ = false;
    bool idle_ = false;
};

}  // namespace reactor::testing::sim::detail
