// SPDX-License-Identifier: MIT
// docs/networking.md: a callback server's graceful end with
// reactor::ServerLifetime (here on SIGTERM, sent to ourselves), and
// open_connection's connect_timeout against a loopback listener whose accept
// queue is full. Loopback only; every case ends by itself.
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/stream.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/net/server_lifetime.hpp>
#include <reactor/scheduler.hpp>

using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(server_lifetime_on_sigterm) {
    reactor::Scheduler sched;
    std::vector<std::string> said;
    auto echo = [](const reactor::ConnectionPtr& c) {
        c->set_data_callback([](reactor::Connection& c, std::string_view d) { c.write(d); });
    };
    // The stop comes from a timer: SIGTERM, sent to ourselves once run() runs.
    sched.call_later(10ms, [] { ::kill(::getpid(), SIGTERM); });
    // [snippet:server_lifetime]
    auto listener = reactor::Listener::listen(sched, reactor::Address::parse("127.0.0.1", 0), echo);
    reactor::ServerLifetime::Options options;
    options.drain_time = 5s;  // stop_signals: SIGINT and SIGTERM
    reactor::ServerLifetime lifetime(sched, listener, options, [&](const reactor::ServerLifetime::Report& r) {
        if (r.kind == reactor::ServerLifetime::Report::Kind::draining)
            said.push_back(fmt::format("{}: draining {} connection(s)", r.why, r.connections));
    });
    sched.run();  // returns once the listener is closed and its last connection is gone
    // [end-snippet:server_lifetime]
    BOOST_TEST(said == std::vector<std::string>{"SIGTERM: draining 0 connection(s)"});
    BOOST_TEST(lifetime.ended());
    BOOST_TEST(lifetime.aborted() == 0u);
}

// Work a close callback starts holds the server's gate: the end waits for it.
BOOST_AUTO_TEST_CASE(server_gate_holds_the_end) {
    reactor::Scheduler sched;
    std::vector<std::string> records;
    std::optional<reactor::ServerLifetime> lifetime;
    reactor::Listener::Options one;
    one.max_accepts = 1;  // the listener closes after one client
    auto listener = reactor::Listener::listen(
        sched, reactor::Address::parse("127.0.0.1", 0),
        [&](const reactor::ConnectionPtr& conn) {
            conn->set_eof_callback([](reactor::Connection& c) { c.close(); });
            // [snippet:server_gate]
            conn->set_close_callback([&](reactor::Connection&, const reactor::CloseReason&) {
                auto hold = std::make_shared<reactor::ServerGate::Hold>(lifetime->gate().hold());
                sched.call_later(10ms, [&records, hold] {  // work that outlives the connection
                    records.push_back("written");
                    hold->release();  // the end may come now
                });
            });
            // [end-snippet:server_gate]
        },
        one);
    reactor::ServerLifetime::Options options;
    options.stop_signals = {};
    lifetime.emplace(sched, listener, options);
    std::size_t records_at_end = 99;
    lifetime->on_ended([&] { records_at_end = records.size(); });
    const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(listener->address().port());
    BOOST_REQUIRE(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::close(client);  // EOF: the server closes its end
    sched.run();
    BOOST_TEST(records_at_end == 1u);
    BOOST_TEST(lifetime->ended());
}

// A listener whose accept queue is full: the kernel drops new SYNs, so a
// connect to it hangs, as one to an address that never answers would.
struct Unanswering {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    std::vector<int> fillers;
    std::uint16_t port = 0;
    Unanswering() {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0);
        BOOST_REQUIRE(::listen(fd, 0) == 0);
        BOOST_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
        port = ntohs(addr.sin_port);
        for (int i = 0; i < 3; ++i) {
            int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
            fillers.push_back(c);
        }
        pollfd first{fillers[0], POLLOUT, 0};
        BOOST_REQUIRE(::poll(&first, 1, 5000) == 1);
    }
    ~Unanswering() {
        for (int c : fillers) ::close(c);
        ::close(fd);
    }
};

BOOST_AUTO_TEST_CASE(open_connection_connect_timeout) {
    reactor::Scheduler sched;
    Unanswering silent;
    const std::uint16_t port = silent.port;
    std::string error;
    // [snippet:connect_timeout]
    futures::StreamOptions options;
    options.connect_timeout = 200ms;  // the lookup, every address, and a TLS handshake
    auto connecting = futures::open_connection(sched, reactor::Address::loopback_v4(port), options);
    futures::run_until(sched, connecting);
    try {
        connecting.result();
    } catch (const futures::ConnectTimeoutError& e) {  // a futures::TimeoutError
        error = e.what();  // "open_connection to 127.0.0.1:PORT: timed out after 200 ms connecting to 127.0.0.1:PORT"
    }
    // [end-snippet:connect_timeout]
    const std::string p = std::to_string(port);
    BOOST_TEST(error == "open_connection to 127.0.0.1:" + p + ": timed out after 200 ms connecting to 127.0.0.1:" + p);
}
