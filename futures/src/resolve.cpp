// SPDX-License-Identifier: MIT
// futures::resolve: Address::resolve run on a thread pool.
#include "futures/resolve.hpp"

#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include <reactor/kernel.hpp>

#include "futures/executor.hpp"
#include "futures/leaves.hpp"

namespace futures {

Future<std::vector<reactor::Address>> resolve(reactor::Scheduler& sched, reactor::ThreadPool& pool,
                                              std::string_view host, std::string_view service,
                                              reactor::ResolveOptions options, std::source_location where) {
    // A simulated host's kernel knows its world's names and answers at once,
    // on the loop: no thread, and no real resolver, inside a world.
    if (reactor::Kernel* kernel = sched.kernel(); kernel != nullptr && kernel->simulated()) {
        try {
            return make_ready_future(sched, reactor::Address::resolve(kernel, host, service, options), where);
        } catch (const std::system_error&) {
            return make_exception_future<std::vector<reactor::Address>>(sched, std::current_exception(), where);
        }
    }
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
