// open_connection: one attempt per call, trying the resolved addresses in
// turn until one connects (a name is first looked up with futures::resolve,
// off the loop thread). The loop owns the pending reactor::Connector; the
// attempt owns the result future, and cancelling that future abandons it.
// Loop thread only.
#include <exception>
#include <stdexcept>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <reactor/net/connector.hpp>

#include "futures/leaves.hpp"
#include "futures/resolve.hpp"
#include "futures/stream.hpp"

namespace futures {
namespace {

// One open_connection: tries the addresses in turn until one connects. Public
// fields: it never leaves this file, and its connect callback and the
// cancellation hook below are the only code that touches them.
struct ConnectAttempt : std::enable_shared_from_this<ConnectAttempt> {
    ConnectAttempt(reactor::Scheduler& sched, std::vector<reactor::Address> addrs, const StreamOptions& opt)
        : result(sched), addresses(std::move(addrs)), options(opt) {}

    void next() {
        reactor::Connector::Options copt;
        copt.connection = options.connection;
        const reactor::Address& address = addresses[index];
        connector = reactor::connect(
            result.scheduler(), address,
            [self = shared_from_this(), address](reactor::ConnectionPtr conn, std::error_code ec) {
                if (self->result.done()) {  // cancelled while the connect completed
                    if (conn) conn->abort();
                    return;
                }
                if (!ec) return self->result.set_result(Stream::from(std::move(conn), self->options));
                if (++self->index < self->addresses.size()) return self->next();
                self->result.set_exception(std::system_error(ec, fmt::format("connect to {}", address.to_string())));
            },
            copt);
    }

    Future<Stream> result;
    std::vector<reactor::Address> addresses;
    std::size_t index = 0;
    StreamOptions options;
    std::weak_ptr<reactor::Connector> connector;  // the loop owns it while it is pending
};

Future<Stream> open_connection_to(reactor::Scheduler& sched, std::vector<reactor::Address> addresses,
                                  const StreamOptions& options) {
    auto attempt = std::make_shared<ConnectAttempt>(sched, std::move(addresses), options);
    Future<Stream> result = attempt->result;
    attempt->next();
    // Cancelling the future abandons the attempt. Weak: the attempt holds the
    // future, and the loop holds the attempt while a connect is pending.
    result.add_done_callback([weak = std::weak_ptr<ConnectAttempt>(attempt)](Future<Stream>& f) {
        if (!f.cancelled()) return;
        if (auto a = weak.lock())
            if (auto c = a->connector.lock()) c->cancel();
    });
    return result;
}

}  // namespace

Future<Stream> open_connection(reactor::Scheduler& sched, const reactor::Address& address, StreamOptions options) {
    return open_connection_to(sched, {address}, options);
}

Future<Stream> open_connection(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                               StreamOptions options) {
    try {
        return open_connection_to(sched, {reactor::Address::parse(host, port)}, options);
    } catch (const std::invalid_argument&) {
        // a name: looked up on the pool, then each address in turn
    }
    // Cancelling the result cancels the lookup, or the attempt that follows it.
    return resolve(sched, host, port).then([&sched, options](std::vector<reactor::Address> addresses) {
        return open_connection_to(sched, std::move(addresses), options);
    });
}

}  // namespace futures
