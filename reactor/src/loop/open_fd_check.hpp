// SPDX-License-Identifier: MIT
// Internal: refuses an fd number that is not open when a selector first sees
// it, shared by the three backends. Loop thread only.
//
// Why at registration: select(2) silently ignores an fd above the process's
// fd table (the kernel clips nfds to the table's size), so a waiter on a
// never-opened number would never fire and nothing would say why. Refusing it
// in set_interest, with std::invalid_argument as for a negative fd, gives every
// backend the same answer at the same place.
//
// Why only the first time: the kernel's fd table never shrinks, so once a
// number has been open, closing it later is something every backend reports
// at its next wait (select: EBADF, poll: POLLNVAL, epoll: EBADF from epoll_ctl
// or from its closed-fd check). Remembering the numbers already seen open keeps
// the hot path (a one-shot waiter re-arming itself) free of an fcntl per call.
#pragma once

#include <fcntl.h>

#include <cerrno>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace reactor::detail {

class OpenFdCheck {
public:
    // Throws std::invalid_argument if `fd` (>= 0) was never seen open and is
    // not open now.
    void require_open(int fd) {
        auto key = static_cast<std::size_t>(fd);
        if (key < seen_open_.size() && seen_open_[key]) return;
        // F_GETFD is the cheapest call that fails with EBADF for a closed fd.
        if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
            throw std::invalid_argument(fmt::format("reactor: fd {} is not open", fd));
        }
        if (key >= seen_open_.size()) seen_open_.resize(key + 1);
        seen_open_[key] = true;
    }

private:
    std::vector<bool> seen_open_;  // indexed by fd
};

}  // namespace reactor::detail
