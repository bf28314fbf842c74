// SPDX-License-Identifier: MIT
// ConnectionOptions::pause_reading_above_high_water over real sockets on
// 127.0.0.1, on every selector backend: an echo server whose client sends
// 4 MiB without reading stops reading by itself once its buffer passes the
// high mark, so the buffer stays bounded; it reads again at the low mark; a
// pause_reading() of the user's holds across that; the water-mark callbacks
// still run; and without the option reading goes on (the default). Small
// socket buffers on both sides make the backlog reach the server's buffer
// early. Ordering comes from callbacks, never from sleeps.
#include <sys/socket.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <reactor/net/connector.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/listener.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/tcp_echo.hpp"

using reactor::Connection;
using reactor::ConnectionPtr;
using reactor_test::on;

namespace {

void small_buffers(int fd) {
    const int size = 16 * 1024;
    BOOST_REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size) == 0);
    BOOST_REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size) == 0);
}

// An echo server and one client that sends `payload` at once without
// reading; the test says when the client reads.
struct Flood {
    reactor::Scheduler sched{on(reactor_test::backend_under_test())};
    reactor::ConnectionOptions options;
    std::shared_ptr<reactor::Listener> listener;
    ConnectionPtr server, client;
    std::string payload = reactor_test::random_bytes(4 << 20, 5), got;
    std::size_t most_buffered = 0;   // the server's buffer at its fullest
    std::vector<std::string> marks;  // the server's water-mark callbacks, and whether it was reading then

    explicit Flood(bool pause_above_high) {
        options.pause_reading_above_high_water = pause_above_high;
        reactor::Listener::Options listen_options;
        listen_options.connection = options;
        listener = reactor::Listener::listen(
            sched, reactor_test::any_loopback(),
            [this](const ConnectionPtr& c) {
                server = c;
                small_buffers(c->fd());
                c->set_data_callback([this](Connection& c, std::string_view d) {
                    c.write(d);
                    most_buffered = std::max(most_buffered, c.buffered());
                });
                c->set_high_water_callback([this](Connection& c) {
                    marks.push_back(c.is_reading() ? "high, reading" : "high, paused");
                });
                c->set_low_water_callback([this](Connection& c) {
                    marks.push_back(c.is_reading() ? "low, reading" : "low, paused");
                });
            },
            listen_options);
        reactor::connect(sched, listener->address(), [this](ConnectionPtr c, std::error_code ec) {
            BOOST_REQUIRE(!ec);
            client = c;
            small_buffers(c->fd());
            c->pause_reading();
            c->set_data_callback([this](Connection& c, std::string_view d) {
                got += d;
                if (got.size() == payload.size()) c.close();
            });
            c->write(payload);
        });
    }

    void finish() {
        listener->close();
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !server->is_open() && !client->is_open(); }));
        server.reset();
        client.reset();
        listener.reset();
        sched.run();
        BOOST_TEST(sched.empty());
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(reading_pauses_above_the_high_mark_and_resumes_at_the_low_mark) {
    Flood f(true);
    BOOST_REQUIRE(reactor_test::run_until(f.sched, [&] { return f.server && f.server->above_high_water(); }));
    BOOST_TEST(!f.server->is_reading(), "paused by itself, before its high-water callback ran");
    BOOST_TEST(f.marks == std::vector<std::string>{"high, paused"});
    f.client->resume_reading();
    BOOST_REQUIRE(reactor_test::run_until(f.sched, [&] { return f.got.size() == f.payload.size(); }));
    BOOST_TEST((f.got == f.payload));
    BOOST_TEST(f.marks.size() >= 2u);
    BOOST_TEST(f.marks[1] == "low, reading", "reading again before its low-water callback ran");
    // One read past the high mark at most: the buffer stays bounded.
    BOOST_TEST(f.most_buffered <= f.options.high_water + f.options.read_size);
    f.finish();
}

BOOST_AUTO_TEST_CASE(a_pause_of_the_users_holds_across_the_low_mark) {
    Flood f(true);
    BOOST_REQUIRE(reactor_test::run_until(f.sched, [&] { return f.server && f.server->above_high_water(); }));
    f.server->pause_reading();
    f.client->resume_reading();
    BOOST_REQUIRE(reactor_test::run_until(f.sched, [&] { return !f.server->above_high_water(); }));
    BOOST_TEST(!f.server->is_reading(), "the user paused it: the low mark does not resume it");
    BOOST_TEST(f.marks == (std::vector<std::string>{"high, paused", "low, paused"}));
    f.server->resume_reading();
    BOOST_TEST(f.server->is_reading());
    BOOST_REQUIRE(reactor_test::run_until(f.sched, [&] { return f.got.size() == f.payload.size(); }));
    BOOST_TEST((f.got == f.payload));
    f.finish();
}

BOOST_AUTO_TEST_CASE(without_the_option_reading_goes_on_above_the_high_mark) {
    Flood f(false);
    BOOST_REQUIRE(reactor_test::run_until(f.sched, [&] { return f.server && f.server->above_high_water(); }));
    BOOST_TEST(f.server->is_reading());
    BOOST_TEST(f.marks == std::vector<std::string>{"high, reading"});
    f.client->resume_reading();
    BOOST_REQUIRE(reactor_test::run_until(f.sched, [&] { return f.got.size() == f.payload.size(); }));
    BOOST_TEST((f.got == f.payload));
    f.finish();
}
