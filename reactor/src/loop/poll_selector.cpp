// SPDX-License-Identifier: MIT
// The poll backend: poll(2)/ppoll(2) over a dense pollfd array. Any fd number works;
// each wait costs O(registered fds) in the kernel and here. Stateless from
// the kernel's point of view, so a closed fd is reported at once (POLLNVAL)
// and a reused fd number simply watches the new file. Never owns the fds.
#include <poll.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "open_fd_check.hpp"
#include "reactor/selector.hpp"
#include "wait_budget.hpp"

namespace reactor {
namespace {

constexpr int kNotWatched = -1;

short poll_events(Interest interest) {
    short events = 0;
    if (wants(interest, Interest::read)) events |= POLLIN;
    if (wants(interest, Interest::write)) events |= POLLOUT;
    return events;
}

class PollSelector final : public Selector {
public:
    std::string_view name() const noexcept override { return "poll"; }

    // O(1): an fd -> position map over the pollfd array; removal moves the
    // last entry into the hole (order in the array carries no meaning).
    void set_interest(int fd, Interest interest) override {
        if (fd < 0) throw std::invalid_argument(fmt::format("reactor: invalid fd {} (negative)", fd));
        auto key = static_cast<std::size_t>(fd);
        int at = key < position_.size() ? position_[key] : kNotWatched;
        if (interest == Interest::none) {
            if (at != kNotWatched) unwatch(fd);
            return;
        }
        open_fds_.require_open(fd);
        if (at != kNotWatched) {
            fds_[static_cast<std::size_t>(at)].events = poll_events(interest);
            return;
        }
        if (key >= position_.size()) position_.resize(key + 1, kNotWatched);
        fds_.push_back(pollfd{fd, poll_events(interest), 0});
        position_[key] = static_cast<int>(fds_.size() - 1);
    }

    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<FdEvent>& out) override {
        detail::WaitBudget budget(timeout);
        for (;;) {
            int n = poll_for(budget.remaining());
            if (n > 0) {
                collect(n, out);
                return;
            }
            if (n == 0) return;
            // A signal: wait again for what is left, never return early.
            if (errno == EINTR) continue;
            throw std::system_error(errno, std::generic_category(), "poll");
        }
    }

private:
    // poll() when the timeout is none, zero or whole milliseconds (cheaper);
    // ppoll() for the rest, so nothing is rounded.
    int poll_for(std::optional<std::chrono::nanoseconds> timeout) {
        if (!timeout) return ::poll(fds_.data(), fds_.size(), -1);
        if (detail::exact_in_milliseconds(*timeout)) {
            return ::poll(fds_.data(), fds_.size(), detail::to_milliseconds_ceil(*timeout));
        }
        timespec ts = detail::to_timespec(*timeout);
        return ::ppoll(fds_.data(), fds_.size(), &ts, nullptr);
    }

    void unwatch(int fd) {
        auto at = static_cast<std::size_t>(position_[static_cast<std::size_t>(fd)]);
        fds_[at] = fds_.back();
        position_[static_cast<std::size_t>(fds_[at].fd)] = static_cast<int>(at);
        fds_.pop_back();
        position_[static_cast<std::size_t>(fd)] = kNotWatched;
    }

    // `ready` entries have non-zero revents: stop scanning once all are seen.
    void collect(int ready, std::vector<FdEvent>& out) {
        closed_.clear();
        for (const pollfd& p : fds_) {
            if (ready == 0) break;
            if (p.revents == 0) continue;
            --ready;
            if (p.revents & POLLNVAL) {
                // The fd was closed while registered.
                out.push_back(FdEvent{p.fd, false, false, EBADF});
                closed_.push_back(p.fd);
                continue;
            }
            // Error or hang-up: wake both directions; the owner's read or
            // write then returns the actual error (or 0 for EOF).
            bool failed = (p.revents & (POLLERR | POLLHUP)) != 0;
            out.push_back(FdEvent{p.fd, failed || (p.revents & POLLIN) != 0, failed || (p.revents & POLLOUT) != 0, 0});
        }
        // Forget reported closed fds ourselves (after the scan: removal moves
        // entries), so an owner that does not deregister cannot make us spin.
        for (int fd : closed_) unwatch(fd);
    }

    std::vector<pollfd> fds_;     // what ppoll watches, dense
    std::vector<int> position_;   // fd -> index in fds_, or kNotWatched
    std::vector<int> closed_;     // scratch for collect(), reused
    detail::OpenFdCheck open_fds_;
};

}  // namespace

std::unique_ptr<Selector> make_poll_selector() { return std::make_unique<PollSelector>(); }

}  // namespace reactor
