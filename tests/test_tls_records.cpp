// SPDX-License-Identifier: MIT
// The records one call into the TLS engine writes leave in one write: a TLS
// 1.3 server's two session tickets are one send(2), not two. Seen through
// SOCK_SEQPACKET socket pairs, which keep every send(2) a message of its own:
// the server's transport is one end of a pair, the client's one end of
// another, and the test relays between the two other ends, counting what the
// server sent. Loopback only (Unix sockets); on every selector backend.
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <array>
#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/tls/connection.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/tls_fixtures.hpp"

namespace tls = reactor::tls;
using reactor_test::on;

namespace {

std::array<int, 2> seqpacket_pair() {
    std::array<int, 2> fds{-1, -1};
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds.data()) == 0);
    return fds;
}

// Moves each message from `from` to `to` as one message, noting its size;
// the end of `from` shuts `to`'s writing down.
void relay(reactor::Scheduler& sched, int from, int to, std::vector<std::size_t>* sizes) {
    sched.add_reader(from, [&sched, from, to, sizes] {
        std::array<char, 65536> buf;
        const ssize_t n = ::recv(from, buf.data(), buf.size(), 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (n <= 0) {
            sched.remove_reader(from);
            ::shutdown(to, SHUT_WR);
            return;
        }
        if (sizes) sizes->push_back(static_cast<std::size_t>(n));
        ::send(to, buf.data(), static_cast<std::size_t>(n), MSG_NOSIGNAL);  // the peer may have gone: ignored
    });
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_records_of_one_engine_call_leave_in_one_write) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    const auto server_pair = seqpacket_pair();
    const auto client_pair = seqpacket_pair();
    std::vector<std::size_t> server_sent;  // the size of each of the server's writes, in order
    relay(sched, server_pair[1], client_pair[1], &server_sent);
    relay(sched, client_pair[1], server_pair[1], nullptr);

    std::optional<tls::CloseReason> server_reason, client_reason;
    std::string client_got;
    auto server = tls::Connection::start_server(reactor::Connection::adopt(sched, server_pair[0]),
                                                reactor_test::server_context());
    server->set_data_callback([](tls::Connection& c, std::string_view d) { c.write(d); });
    server->set_close_callback([&](tls::Connection&, const tls::CloseReason& r) { server_reason = r; });
    auto client = tls::Connection::start_client(reactor::Connection::adopt(sched, client_pair[0]),
                                                reactor_test::client_context(), "localhost");
    std::string protocol;
    client->set_handshake_callback([&](tls::Connection& c) {
        protocol = c.protocol_version();
        c.write("ping");
    });
    client->set_data_callback([&](tls::Connection& c, std::string_view d) {
        client_got += d;
        if (client_got == "ping") c.close();
    });
    client->set_close_callback([&](tls::Connection&, const tls::CloseReason& r) { client_reason = r; });
    server.reset();
    client.reset();

    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server_reason && client_reason; }));
    BOOST_TEST(protocol == "TLSv1.3");
    BOOST_TEST(client_got == "ping");
    BOOST_TEST(server_reason->to_string() == "close_notify");
    // The server wrote: its flight (ServerHello to Finished), the two session
    // tickets (one engine call: one write; two before the records were held),
    // the echo, and its close_notify in answer to the client's.
    BOOST_TEST(server_sent.size() == 4u);
    if (server_sent.size() == 4u) {
        // Two tickets in one message: longer than the echo and the alert together.
        BOOST_TEST(server_sent[1] > server_sent[2] + server_sent[3]);
    }

    sched.remove_reader(server_pair[1]);
    sched.remove_reader(client_pair[1]);
    ::close(server_pair[1]);
    ::close(client_pair[1]);
}
