// SPDX-License-Identifier: MIT
#include "host_selector.hpp"

#include <cerrno>
#include <stdexcept>

#include <fmt/format.h>

#include "host_clock.hpp"
#include "host_kernel.hpp"
#include "network.hpp"

namespace reactor::testing::sim::detail {

void HostSelector::set_interest(int fd, Interest interest) {
    if (interest == Interest::none) {
        interest_.erase(fd);
        return;
    }
    // As the real backends: a number that is not open cannot be watched.
    if (!kernel_.readiness(fd).open)
        throw std::invalid_argument(
            fmt::format("sim: fd {} is not open on host {}", fd, network_.name_of(host_)));
    interest_[fd] = interest;
}

void HostSelector::wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<FdEvent>& out) {
    if (!stepping_)
        throw std::logic_error(fmt::format(
            "sim: the loop of host {} was run directly; a simulated host's Scheduler is run by its World "
            "(world.run_for, world.run_until)",
            network_.name_of(host_)));
    kernel_.set_loop_rests(false);
    const std::size_t before = out.size();
    for (auto it = interest_.begin(); it != interest_.end();) {
        const auto [fd, interest] = *it;
        const Readiness r = kernel_.readiness(fd);
        if (!r.open) {
            out.push_back(FdEvent{fd, false, false, EBADF});  // closed while watched, as select reports it
            it = interest_.erase(it);  // reported once; the loop drops its waiters
            continue;
        }
        ++it;
        const bool readable = r.readable && wants(interest, Interest::read);
        const bool writable = r.writable && wants(interest, Interest::write);
        if (readable || writable) out.push_back(FdEvent{fd, readable, writable, 0});
    }
    if (out.size() != before || timeout == std::chrono::nanoseconds::zero()) return;
    idle_ = true;
    kernel_.set_loop_rests(true);  // a post now wakes it through its kernel (Kernel::wake_loop)
    if (timeout)
        network_.wake_at(host_, clock_.world_time_for(reactor::detail::saturating_add(
                                    clock_.now(), std::chrono::ceil<Duration>(*timeout))));
}

}  // namespace reactor::testing::sim::detail
