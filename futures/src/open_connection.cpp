// SPDX-License-Identifier: MIT
// open_connection: one reactor::Connector per call, trying the addresses in
// turn until one connects (a name is first looked up with futures::resolve,
// off the loop thread, so that cancelling the future cancels the lookup as
// any future would). Cancelling the future abandons the attempt. The future
// is made through a Promise with the caller's line: if the attempt is
// dropped unfinished (its Scheduler destroyed), it is cancelled naming that
// line. Loop thread only.
#include <exception>
#include <stdexcept>
#include <memory>
#include <optional>
#include <source_location>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <reactor/net/connector.hpp>

#include "futures/leaves.hpp"
#include "futures/promise.hpp"
#include "futures/resolve.hpp"
#include "futures/stream.hpp"

namespace futures {
namespace {

// One open_connection: a reactor::Connector trying the addresses in turn.
// The loop owns the pending Connector; the attempt owns the result's promise.
struct ConnectAttempt : std::enable_shared_from_this<ConnectAttempt> {
    ConnectAttempt(reactor::Scheduler& sched, const StreamOptions& opt, std::source_location where)
        : result(sched, where, "connection attempt"), options(opt) {}

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
    }

    Promise<Stream> result;  // its where() is the user's open_connection line
    StreamOptions options;
    std::weak_ptr<reactor::Connector> connector;  // the loop owns it while it is pending
};

Future<Stream> open_connection_to(reactor::Scheduler& sched, std::vector<reactor::Address> addresses,
                                  const StreamOptions& options, std::source_location where) {
    auto attempt = std::make_shared<ConnectAttempt>(sched, options, where);
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

}  // namespace

Future<Stream> open_connection(reactor::Scheduler& sched, const reactor::Address& address, StreamOptions options,
                               std::source_location where) {
    return open_connection_to(sched, {address}, options, where);
}

Future<Stream> open_connection(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                               StreamOptions options, std::source_location where) {
    std::optional<reactor::Address> numeric;
    try {
        numeric = reactor::Address::parse(host, port);
    } catch (const std::invalid_argument&) {
        // a name: looked up on the pool, then each address in turn
    }
    if (numeric) return open_connection_to(sched, {*numeric}, options, where);
    // Cancelling the result cancels the lookup, or the attempt that follows it.
    return resolve(sched, host, port, where)
        .then(
            [&sched, options, where](std::vector<reactor::Address> addresses) {
                return open_connection_to(sched, std::move(addresses), options, where);
            },
            where);
}

}  // namespace futures
