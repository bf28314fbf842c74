// Test support: the selector backends this build provides, for I/O tests
// written once as BOOST_DATA_TEST_CASE(name, data::make(all_backends()), backend)
// and run on every backend unchanged.
#pragma once

#include <ostream>
#include <vector>

#include <reactor/scheduler.hpp>
#include <reactor/selector.hpp>

namespace reactor_test {

// Every backend this build provides: the reference first.
inline std::vector<reactor::Backend> all_backends() {
    return {reactor::Backend::select, reactor::Backend::poll, reactor::Backend::epoll};
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
