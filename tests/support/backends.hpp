// SPDX-License-Identifier: MIT
// Test support: which selector backend a suite runs on. Every suite that
// touches the loop is written once and run whole once per backend: CTest
// runs test_x[select], test_x[poll] and test_x[epoll] (tests/CMakeLists.txt),
// telling each which through REACTOR_TEST_BACKEND. This is the suite's only
// per-backend mechanism: a case reads backend_under_test() (a VirtualLoop is
// made with it, support/virtual_time.hpp; a Scheduler with on()), and never
// loops over backends itself.
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

#include <boost/test/unit_test.hpp>

#include <reactor/scheduler.hpp>
#include <reactor/selector.hpp>

namespace reactor_test {

// REACTOR_TEST_BACKEND, default select (a suite run by hand, outside CTest).
inline reactor::Backend backend_under_test() {
    const char* name = std::getenv("REACTOR_TEST_BACKEND");
    if (!name || !*name) return reactor::Backend::select;
    if (auto backend = reactor::parse_backend(name)) return *backend;
    throw std::invalid_argument(std::string("REACTOR_TEST_BACKEND: unknown backend ") + name);
}

// Options for a Scheduler on `backend`: Scheduler s(on(backend)).
inline reactor::Scheduler::Options on(reactor::Backend backend) {
    reactor::Scheduler::Options options;
    options.backend = backend;
    return options;
}

// A precondition that skips a case on one backend, with the reason, instead
// of letting it pass silently:
//   BOOST_AUTO_TEST_CASE(name, *reactor_test::skip_on(Backend::select, "why"))
inline boost::unit_test::precondition skip_on(reactor::Backend backend, const char* why) {
    return boost::unit_test::precondition([backend, why](boost::unit_test::test_unit_id) {
        boost::test_tools::assertion_result result(backend_under_test() != backend);
        result.message() << why;
        return result;
    });
}

// A precondition for cases about one backend's internals (epoll's batching):
//   BOOST_AUTO_TEST_CASE(name, *reactor_test::only_on(Backend::epoll))
inline boost::unit_test::precondition only_on(reactor::Backend backend) {
    return boost::unit_test::precondition([backend](boost::unit_test::test_unit_id) {
        boost::test_tools::assertion_result result(backend_under_test() == backend);
        result.message() << "a case about the " << reactor::to_string(backend) << " backend";
        return result;
    });
}

}  // namespace reactor_test
