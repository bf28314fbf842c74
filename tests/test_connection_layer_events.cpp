// SPDX-License-Identifier: MIT
// Connection::set_layer_events over real sockets on 127.0.0.1, on every
// selector backend: the peer's EOF and the fall to the low-water mark go to
// the layer's receiver instead of the EOF and low-water callbacks, the
// connection stays writable after the peer's EOF as with an EOF callback,
// a cleared receiver gives the callbacks (or, without one, the close at
// EOF) back, and a loop that ends before the close callback could run tells
// the receiver so. Ordering comes from callbacks, never from sleeps.
#include <sys/socket.h>

#include <boost/test/unit_test.hpp>

#include <functional>
#include <string>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"

using reactor::CloseReason;
using reactor::Connection;
using reactor::ConnectionPtr;
using reactor_test::on;

namespace {

// A layer's receiver that records what it got, in order, in `bag`.
class Recorder final : public Connection::LayerEvents {
public:
    explicit Recorder(std::vector<std::string>& bag) : bag_(bag) {}
    std::function<void(Connection&)> at_eof;

private:
    void on_eof(Connection& conn) override {
        bag_.push_back("layer eof");
        if (at_eof) at_eof(conn);
    }
    void on_low_water(Connection&) override { bag_.push_back("layer low"); }
    void on_abandoned(Connection&) noexcept override { bag_.push_back("layer abandoned"); }

    std::vector<std::string>& bag_;
};

}  // namespace

// The client asks and shuts down its sending side; the server's layer gets
// the EOF (its EOF callback does not), replies on the open half and shuts
// down in turn: both ends close with reason eof and every byte arrives.
BOOST_AUTO_TEST_CASE(the_peers_eof_goes_to_the_layer_and_the_connection_stays_writable) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    std::vector<std::string> bag;
    Recorder layer(bag);
    std::string server_got, client_got;
    layer.at_eof = [&](Connection& c) {
        BOOST_TEST(c.write("reply to: " + server_got));
        c.write_eof();
    };
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const ConnectionPtr& c) {
        c->set_data_callback([&](Connection&, std::string_view d) { server_got += d; });
        c->set_eof_callback([&](Connection&) { bag.push_back("callback eof"); });
        c->set_layer_events(&layer);
        c->set_close_callback([&](Connection&, const CloseReason& r) { bag.push_back("server " + r.to_string()); });
    });
    bool client_closed = false;
    reactor::connect(sched, listener->address(), [&](ConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        c->set_data_callback([&](Connection&, std::string_view d) { client_got += d; });
        c->set_close_callback([&](Connection&, const CloseReason& r) {
            BOOST_TEST(r.to_string() == "eof");
            client_closed = true;
        });
        c->write("question");
        c->write_eof();
    });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client_closed && bag.size() == 2; }));
    BOOST_TEST(bag == (std::vector<std::string>{"layer eof", "server eof"}));
    BOOST_TEST(server_got == "question");
    BOOST_TEST(client_got == "reply to: question");
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

// The server writes more than its high-water mark to a client that does not
// read yet; once the client reads, the server's output falls to the low mark
// and its layer is told (its low-water callback is not).
BOOST_AUTO_TEST_CASE(the_fall_to_low_water_goes_to_the_layer) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    std::vector<std::string> bag;
    Recorder layer(bag);
    const std::string big(4 << 20, 'x');  // more than the socket buffers take
    ConnectionPtr server_side;
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const ConnectionPtr& c) {
        server_side = c;
        c->set_water_marks(64 * 1024, 0);
        c->set_low_water_callback([&](Connection&) { bag.push_back("callback low"); });
        c->set_layer_events(&layer);
        BOOST_TEST(c->write(big));
        BOOST_TEST(c->above_high_water());
    });
    ConnectionPtr client;
    std::size_t client_got = 0;
    reactor::connect(sched, listener->address(), [&](ConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        client = c;
        c->pause_reading();
        c->set_data_callback([&](Connection&, std::string_view d) { client_got += d.size(); });
    });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client && server_side; }));
    BOOST_TEST(bag.empty());
    client->resume_reading();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client_got == big.size(); }));
    BOOST_TEST(bag == std::vector<std::string>{"layer low"});
    BOOST_TEST(!server_side->above_high_water());
    server_side->set_layer_events(nullptr);
    client->close();
    server_side->close();
    client.reset();
    server_side.reset();
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

// A receiver set and cleared again leaves the connection as it was: without
// an EOF callback, the peer's EOF closes it (reason eof), and the layer hears
// nothing.
BOOST_AUTO_TEST_CASE(a_cleared_layer_gives_the_eof_back_to_the_connection) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    std::vector<std::string> bag;
    Recorder layer(bag);
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const ConnectionPtr& c) {
        c->set_layer_events(&layer);
        c->set_layer_events(nullptr);
        c->set_close_callback([&](Connection&, const CloseReason& r) { bag.push_back("server " + r.to_string()); });
    });
    reactor::connect(sched, listener->address(), [&](ConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        c->set_close_callback([](Connection&, const CloseReason&) {});
        c->write_eof();
    });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !bag.empty(); }));
    BOOST_TEST(bag == std::vector<std::string>{"server eof"});
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

// The loop ends (~Scheduler, no close()) with one connection open and the
// other's close callback still queued: neither close callback runs, and each
// layer hears on_abandoned once, as its callbacks are dropped.
BOOST_AUTO_TEST_CASE(a_loop_ending_before_the_close_callback_tells_the_layer) {
    std::vector<std::string> open_bag, closing_bag;
    Recorder open_layer(open_bag), closing_layer(closing_bag);
    ConnectionPtr open_side, closing_side;
    {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const ConnectionPtr& c) {
            (open_side ? closing_side : open_side) = c;
        });
        ConnectionPtr first, second;
        reactor::connect(sched, listener->address(), [&](ConnectionPtr c, std::error_code ec) {
            BOOST_REQUIRE(!ec);
            first = std::move(c);
        });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return first && open_side; }));
        reactor::connect(sched, listener->address(), [&](ConnectionPtr c, std::error_code ec) {
            BOOST_REQUIRE(!ec);
            second = std::move(c);
        });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return second && closing_side; }));
        for (auto* side : {&open_side, &closing_side}) {
            Recorder& layer = side == &open_side ? open_layer : closing_layer;
            std::vector<std::string>& bag = side == &open_side ? open_bag : closing_bag;
            (*side)->set_layer_events(&layer);
            (*side)->set_close_callback([&bag](Connection&, const CloseReason& r) { bag.push_back("closed " + r.to_string()); });
        }
        closing_side->abort();  // its close callback is queued, not run: the loop does not run again
        BOOST_TEST(!closing_side->callbacks_dropped());
        BOOST_TEST(open_bag.empty());
        BOOST_TEST(closing_bag.empty());
    }
    BOOST_TEST(open_bag == std::vector<std::string>{"layer abandoned"});
    BOOST_TEST(closing_bag == std::vector<std::string>{"layer abandoned"});
    BOOST_TEST(open_side->callbacks_dropped());
    BOOST_TEST(closing_side->callbacks_dropped());
}

// A close callback that runs is the end the layer hears of: no
// on_abandoned, even when the loop ends afterwards; and from then on the
// connection says its callbacks are dropped.
BOOST_AUTO_TEST_CASE(a_close_callback_that_ran_leaves_nothing_to_abandon) {
    std::vector<std::string> bag;
    Recorder layer(bag);
    ConnectionPtr server_side;
    {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const ConnectionPtr& c) {
            server_side = c;
            c->set_layer_events(&layer);
            c->set_close_callback([&](Connection&, const CloseReason& r) { bag.push_back("closed " + r.to_string()); });
        });
        ConnectionPtr client;
        reactor::connect(sched, listener->address(), [&](ConnectionPtr c, std::error_code ec) {
            BOOST_REQUIRE(!ec);
            client = std::move(c);
        });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client && server_side; }));
        BOOST_TEST(!server_side->callbacks_dropped());
        server_side->abort();
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !bag.empty(); }));
        BOOST_TEST(server_side->callbacks_dropped());
        client->abort();
    }
    BOOST_TEST(bag == std::vector<std::string>{"closed local"});
}
