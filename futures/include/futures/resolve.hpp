// SPDX-License-Identifier: MIT
// futures::resolve: name lookup that does not block the loop. getaddrinfo
// runs on a thread pool (as libuv's uv_getaddrinfo and asyncio's
// loop.getaddrinfo do: the C library has no asynchronous lookup that reads
// /etc/hosts, nsswitch and DNS alike) and the future completes on the loop.
//
//   futures::resolve(sched, "localhost", "8080")  ->  Future<std::vector<reactor::Address>>
//
// The value: every IPv4 and IPv6 address found, once each, in the resolver's
// order, with the service's port. A failure is a std::system_error in
// reactor::resolve_category() whose message names the host and service
// (reactor/net/resolve_error.hpp), the same error the blocking
// reactor::Address::resolve throws. Cancelling the future cancels the lookup:
// one still queued never runs; one in progress finishes on its worker and its
// answer is dropped. A full pool fails the future with
// reactor::ThreadPoolFull (see futures/executor.hpp). On a simulated host
// (reactor/testing/sim/), the host's kernel answers with its world's names,
// on the loop, without a pool. Loop thread only.
#pragma once

#include <cstdint>
#include <source_location>
#include <string_view>
#include <vector>

#include <reactor/export.hpp>
#include <reactor/net/address.hpp>
#include <reactor/net/resolve_error.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/thread_pool.hpp>

#include "futures/future.hpp"

namespace futures {

// `service`: a port number ("8080") or a name from /etc/services ("http").
// On `pool` (default: futures::default_executor()).
[[nodiscard]] REACTOR_API Future<std::vector<reactor::Address>> resolve(
    reactor::Scheduler& sched, reactor::ThreadPool& pool, std::string_view host, std::string_view service,
    reactor::ResolveOptions options = {}, std::source_location where = std::source_location::current());
[[nodiscard]] REACTOR_API Future<std::vector<reactor::Address>> resolve(
    reactor::Scheduler& sched, std::string_view host, std::string_view service,
    reactor::ResolveOptions options = {}, std::source_location where = std::source_location::current());
// With a port number. A numeric host ("127.0.0.1", "::1") needs no lookup:
// the future is done at once, without the pool.
[[nodiscard]] REACTOR_API Future<std::vector<reactor::Address>> resolve(
    reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
    std::source_location where = std::source_location::current());

}  // namespace futures
