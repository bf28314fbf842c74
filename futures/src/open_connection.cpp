// SPDX-License-Identifier: MIT
// open_connection: one reactor::Connector per call, trying the addresses in
// turn until one connects (a name is first looked up with futures::resolve,
// off the loop thread, so that cancelling the future cancels the lookup as
// any future would). Cancelling the future abandons the attempt. The future
// is made through a Promise with the caller's line: if the attempt is
// dropped unfinished (its Scheduler destroyed), it is cancelled naming that
// line. StreamOptions::connect_timeout bounds the whole of it with
// with_timeout, whose error is made when the timer fires from what the
// attempt is doing then (ConnectProgress). Loop thread only.
#include <chrono>
#include <exception>
#include <stdexcept>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <reactor/net/connector.hpp>

#include "futures/leaves.hpp"
#include "futures/promise.hpp"
#include "futures/resolve.hpp"
#include "futures/stream.hpp"
#include "futures/with_timeout.hpp"

namespace futures {
namespace {

// What an open_connection is doing, for the error its connect_timeout makes.
struct ConnectProgress {
    std::string target;  // what the caller asked for: "localhost:8080"
    ConnectTimeoutError::Step step = ConnectTimeoutError::Step::connect;
    std::weak_ptr<reactor::Connector> connector;  // the connect under way
};

std::exception_ptr connect_timeout_error(const ConnectProgress& p, reactor::Duration timeout) {
    using Step = ConnectTimeoutError::Step;
    std::string doing;
    if (p.step == Step::lookup) {
        doing = "looking the name up";
    } else {
        const auto connector = p.connector.lock();
        doing = fmt::format("connecting to {}", connector ? connector->address().to_string() : p.target);
    }
    return std::make_exception_ptr(ConnectTimeoutError(
        p.step, fmt::format("open_connection to {}: timed out after {} ms {}", p.target,
                                  std::chrono::duration<double, std::milli>(timeout).count(), doing)));
}

// One open_connection: a reactor::Connector trying the addresses in turn.
// The loop owns the pending Connector; the attempt owns the result's promise.
struct ConnectAttempt : std::enable_shared_from_this<ConnectAttempt> {
    ConnectAttempt(reactor::Scheduler& sched, const StreamOptions& opt, std::shared_ptr<ConnectProgress> p,
                   std::source_location where)
        : result(sched, where, "connection attempt"), options(opt), progress(std::move(p)) {}

    void start(std::vector<reactor::Address> addresses) {
        reactor::Connector::Options copt;
        copt.connection = options.connection;
        connector = reactor::connect(
            result.scheduler(), std::move(addresses),
            [self = shared_from_this()](reactor::ConnectionPtr conn, std::error_code ec) {
                if (!self->result.is_pending()) {  // cancelled while the connect completed
                    if (conn) conn->abort();
                    return;
                }
                if (!ec) {
                    self->result.set_value(Stream::from(std::move(conn), self->options));
                    return;
                }
                // The Connector is calling us: it is alive, and names the last address tried.
                const auto connector = self->connector.lock();
                self->result.set_exception(std::system_error(
                    ec, fmt::format("connect to {}", connector ? connector->address().to_string() : "?")));
            },
            copt, result.where());
        if (progress) {
            progress->step = ConnectTimeoutError::Step::connect;
            progress->connector = connector;
        }
    }

    Promise<Stream> result;  // its where() is the user's open_connection line
    StreamOptions options;
    std::weak_ptr<reactor::Connector> connector;  // the loop owns it while it is pending
    std::shared_ptr<ConnectProgress> progress;      // with a connect_timeout only
};

Future<Stream> open_connection_to(reactor::Scheduler& sched, std::vector<reactor::Address> addresses,
                                  const StreamOptions& options, std::shared_ptr<ConnectProgress> progress,
                                  std::source_location where) {
    auto attempt = std::make_shared<ConnectAttempt>(sched, options, std::move(progress), where);
    Future<Stream> result = attempt->result.get_future();
    attempt->start(std::move(addresses));
    // Cancelling the future abandons the attempt. Weak: the attempt holds the
    // future, and the loop holds the attempt while a connect is pending.
    result.add_done_callback([weak = std::weak_ptr<ConnectAttempt>(attempt)](Future<Stream>& f) {
        if (!f.cancelled()) return;
        if (auto a = weak.lock())
            if (auto c = a->connector.lock()) c->cancel();
    }, where);
    return result;
}

// Bounds `attempt` by options.connect_timeout, if there is one.
Future<Stream> bounded(Future<Stream> attempt, const StreamOptions& options,
                       const std::shared_ptr<ConnectProgress>& progress, std::source_location where) {
    if (!progress) return attempt;
    return with_timeout(
        attempt, options.connect_timeout,
        [progress, timeout = options.connect_timeout] { return connect_timeout_error(*progress, timeout); }, where);
}

std::shared_ptr<ConnectProgress> progress_for(const StreamOptions& options, std::string target) {
    if (options.connect_timeout < reactor::Duration::zero())
        throw std::invalid_argument("open_connection: negative connect_timeout");
    if (options.connect_timeout == reactor::Duration::zero()) return nullptr;
    auto progress = std::make_shared<ConnectProgress>();
    progress->target = std::move(target);
    return progress;
}

}  // namespace

Future<Stream> open_connection(reactor::Scheduler& sched, const reactor::Address& address, StreamOptions options,
                               std::source_location where) {
    auto progress = progress_for(options, address.to_string());
    return bounded(open_connection_to(sched, {address}, options, progress, where), options, progress, where);
}

Future<Stream> open_connection(reactor::Scheduler& sched, std::vector<reactor::Address> addresses,
                               StreamOptions options, std::source_location where) {
    if (addresses.empty()) throw std::invalid_argument("open_connection: no address to connect to");
    auto progress = progress_for(options, addresses.size() == 1 ? addresses.front().to_string()
                                                                : fmt::format("{} and {} more", addresses.front().to_string(),
                                                                              addresses.size() - 1));
    return bounded(open_connection_to(sched, std::move(addresses), options, progress, where), options, progress,
                   where);
}

Future<Stream> open_connection(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                               StreamOptions options, std::source_location where) {
    std::optional<reactor::Address> numeric;
    try {
        numeric = reactor::Address::parse(host, port);
    } catch (const std::invalid_argument&) {
        // a name: looked up on the pool, then each address in turn
    }
    if (numeric) return open_connection(sched, *numeric, options, where);
    auto progress = progress_for(options, fmt::format("{}:{}", host, port));
    if (progress) progress->step = ConnectTimeoutError::Step::lookup;
    // Cancelling the result cancels the lookup, or the attempt that follows it.
    Future<Stream> attempt = resolve(sched, host, port, where)
                                 .then(
                                     [&sched, options, progress, where](std::vector<reactor::Address> addresses) {
                                         return open_connection_to(sched, std::move(addresses), options, progress,
                                                                   where);
                                     },
                                     where);
    return bounded(std::move(attempt), options, progress, where);
}

}  // namespace futures
