// SPDX-License-Identifier: MIT
// How a simulated kernel answers a system call as the C library does: -1
// with errno set, and socket addresses copied into the caller's buffer,
// truncated to its length. Loop thread only.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace reactor::testing::sim::detail {

inline int fail(int error) noexcept {
    errno = error;
    return -1;
}

inline void give_address(const sockaddr_in& a, sockaddr* out, socklen_t* length) noexcept {
    if (out == nullptr || length == nullptr) return;
    std::memcpy(out, &a, std::min<std::size_t>(*length, sizeof a));
    *length = sizeof a;
}

inline bool take_address(const sockaddr* address, socklen_t length, sockaddr_in& out) noexcept {
    if (address == nullptr || length < static_cast<socklen_t>(sizeof(sockaddr_in)) || address->sa_family != AF_INET)
        return false;
    std::memcpy(&out, address, sizeof out);
    return true;
}

}  // namespace reactor::testing::sim::detail
