// SPDX-License-Identifier: MIT
// The reference backend: select(2). Keeps master fd_sets and copies them per
// call; O(max_fd) per wait, and fds must stay below FD_SETSIZE (select's
// fd_set is a fixed bitmap: FD_SET beyond it corrupts memory, so we refuse).
#include <sys/select.h>

#include <cerrno>
#include <fcntl.h>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "open_fd_check.hpp"
#include "reactor/selector.hpp"

namespace reactor {
namespace {

timeval to_timeval(std::chrono::nanoseconds d) {
    // Round up: waking a microsecond early would only make the loop spin.
    auto us = std::chrono::ceil<std::chrono::microseconds>(d).count();
    if (us < 0) us = 0;
    return timeval{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
}

class SelectSelector final : public Selector {
public:
    SelectSelector() {
        FD_ZERO(&read_set_);
        FD_ZERO(&write_set_);
    }

    std::string_view name() const noexcept override { return "select"; }

    void set_interest(int fd, Interest interest) override {
        if (fd < 0) throw std::invalid_argument(fmt::format("reactor: invalid fd {} (negative)", fd));
        if (fd >= FD_SETSIZE) {
            throw std::invalid_argument(fmt::format(
                "reactor: fd {} is >= FD_SETSIZE ({}): the select backend cannot watch it "
                "(use the poll or epoll backend)",
                fd, FD_SETSIZE));
        }
        if (interest != Interest::none) open_fds_.require_open(fd);
        if (wants(interest, Interest::read)) FD_SET(fd, &read_set_); else FD_CLR(fd, &read_set_);
        if (wants(interest, Interest::write)) FD_SET(fd, &write_set_); else FD_CLR(fd, &write_set_);
        if (interest != Interest::none) {
            if (fd > max_fd_) max_fd_ = fd;
        } else if (fd == max_fd_) {
            while (max_fd_ >= 0 && !FD_ISSET(max_fd_, &read_set_) && !FD_ISSET(max_fd_, &write_set_)) --max_fd_;
        }
    }

    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<FdEvent>& out) override {
        timeval tv{};
        if (timeout) tv = to_timeval(*timeout);
        for (;;) {
            fd_set readable = read_set_;
            fd_set writable = write_set_;
            // Linux select() rewrites tv with the time not slept, so retrying
            // after EINTR waits only for the remaining time.
            int n = ::select(max_fd_ + 1, &readable, &writable, nullptr, timeout ? &tv : nullptr);
            if (n > 0) {
                collect(readable, writable, out);
                return;
            }
            if (n == 0) return;
            if (errno == EINTR) continue;
            if (errno == EBADF) {
                report_closed_fds(out);
                return;
            }
            throw std::system_error(errno, std::generic_category(), "select");
        }
    }

private:
    void collect(const fd_set& readable, const fd_set& writable, std::vector<FdEvent>& out) const {
        for (int fd = 0; fd <= max_fd_; ++fd) {
            bool r = FD_ISSET(fd, &readable);
            bool w = FD_ISSET(fd, &writable);
            if (r || w) out.push_back(FdEvent{fd, r, w, 0});
        }
    }

    // select() says only "some fd is bad": find which (libev's fd_ebadf).
    void report_closed_fds(std::vector<FdEvent>& out) const {
        std::size_t before = out.size();
        for (int fd = 0; fd <= max_fd_; ++fd) {
            if ((FD_ISSET(fd, &read_set_) || FD_ISSET(fd, &write_set_)) && ::fcntl(fd, F_GETFD) == -1 &&
                errno == EBADF) {
                out.push_back(FdEvent{fd, false, false, EBADF});
            }
        }
        if (out.size() == before) {
            throw std::system_error(EBADF, std::generic_category(), "select (EBADF, yet every watched fd is open)");
        }
    }

    fd_set read_set_;
    fd_set write_set_;
    int max_fd_ = -1;
    detail::OpenFdCheck open_fds_;
};

}  // namespace

std::unique_ptr<Selector> make_select_selector() { return std::make_unique<SelectSelector>(); }

}  // namespace reactor
