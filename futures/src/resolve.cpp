// SPDX-License-Identifier: MIT
// futures::resolve: Address::resolve run on a thread pool.
#include "futures/resolve.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "futures/executor.hpp"
#include "futures/leaves.hpp"

namespace futures {

Future<std::vector<reactor::Address>> resolve(reactor::Scheduler& sched, reactor::ThreadPool& pool,
                                              std::string_view host, std::string_view service,
                                              reactor::ResolveOptions options, std::source_location where) {
    // Copies: the worker must not read the caller's strings, which may be gone.
    return run_in_executor(
        sched, pool,
        [host = std::string(host), service = std::string(service), options] {
            return reactor::Address::resolve(host, service, options);
        },
        where);
}

Future<std::vector<reactor::Address>> resolve(reactor::Scheduler& sched, std::string_view host,
                                              std::string_view service, reactor::ResolveOptions options,
                                              std::source_location where) {
    return resolve(sched, default_executor(), host, service, options, where);
}

Future<std::vector<reactor::Address>> resolve(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                                              std::source_location where) {
    try {
        return make_ready_future(sched, std::vector<reactor::Address>{reactor::Address::parse(host, port)}, where);
    } catch (const std::invalid_argument&) {
        // a name: look it up on the pool
    }
    return resolve(sched, default_executor(), host, std::to_string(port), {}, where);
}

}  // namespace futures
