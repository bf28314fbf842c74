// SPDX-License-Identifier: MIT
// Test support: raising RLIMIT_NOFILE for cases that need many fds or fd
// numbers above FD_SETSIZE.
#pragma once

#include <sys/resource.h>

namespace reactor_test {

// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit.
inline rlim_t raise_fd_limit() {
    rlimit rl{};
    ::getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &rl);
        ::getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur;
}

// Makes at least `n` fds available, if the hard limit allows. False otherwise.
inline bool ensure_fd_limit(rlim_t n) {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
    if (lim.rlim_cur >= n) return true;
    if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < n) return false;
    lim.rlim_cur = lim.rlim_max == RLIM_INFINITY ? n : lim.rlim_max;
    return ::setrlimit(RLIMIT_NOFILE, &lim) == 0;
}

}  // namespace reactor_test
