// Test support: the selector backends this build provides, for I/O tests
// written once as BOOST_DATA_TEST_CASE(name, data::make(all_backends()), backend)
// and run on every backend unchanged, and for suites run whole once per
// backend (backend_under_test()).
#pragma once

#include <cstdlib>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/scheduler.hpp>
#include <reactor/selector.hpp>

namespace reactor_test {

// Every backend this build provides: the reference first.
inline std::vector<reactor::Backend> all_backends() {
    return {reactor::Backend::select, reactor::Backend::poll, reactor::Backend::epoll};
}

// The backend of suites that run whole on each backend (CTest runs them once
// per backend, see tests/CMakeLists.txt): REACTOR_TEST_BACKEND, default select.
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

}  // namespace reactor_test

namespace reactor {
// Boost.Test logs each data sample; this names it ("select", ...). Boost's log
// is an ostream, hence the one use of << in the tests.
inline std::ostream& boost_test_print_type(std::ostream& os, Backend backend) { return os << to_string(backend); }
}  // namespace reactor
