// SPDX-License-Identifier: MIT
// Test support: the ways a subprocess's exit is watched (futures::ExitWatch)
// that a suite can test on the backend under test. ThreadSanitizer defers a
// signal that arrives while the thread is blocked in select(2) until the
// call returns (see .ci/run), so a SIGCHLD could never wake a select loop
// there: under TSan, SIGCHLD cases run on poll and epoll only.
#pragma once

#include <vector>

#include <boost/test/unit_test.hpp>

#include <futures/process.hpp>
#include <reactor/selector.hpp>

#include "support/backends.hpp"

namespace reactor_test {

inline bool sigchld_testable() {
#ifdef __SANITIZE_THREAD__
    return backend_under_test() != reactor::Backend::select;
#else
    return true;
#endif
}

inline std::vector<futures::ExitWatch> watches() {
    if (sigchld_testable()) return {futures::ExitWatch::pidfd, futures::ExitWatch::sigchld};
    BOOST_TEST_MESSAGE("SIGCHLD watch not run: select under ThreadSanitizer");
    return {futures::ExitWatch::pidfd};
}

}  // namespace reactor_test
