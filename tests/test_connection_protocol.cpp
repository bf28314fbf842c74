// SPDX-License-Identifier: MIT
// Connection::set_protocol (reactor/net/transport.hpp) over real sockets on
// 127.0.0.1, on every selector backend: a protocol is told the data, the
// peer's EOF (and keeps the connection writable if it says so), the rise
// above the high mark and the fall to the low mark, and the close; it
// replaces the callbacks, and a callback set later takes its place again;
// without one the peer's EOF closes the connection; a loop that ends before
// the close could be told tells the protocol on_abandoned instead; and the
// callbacks' own protocol may be replaced from inside one of its callbacks
// (STARTTLS does). Ordering comes from callbacks, never from sleeps.
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

// A protocol that records what it is told, in order, in `bag`.
class Recorder final : public reactor::Protocol {
public:
    explicit Recorder(std::vector<std::string>& bag) : bag_(bag) {}
    std::function<void()> at_eof;
    bool stay_open_at_eof = true;
    std::string data;

private:
    void on_data(std::string_view d) override { data += d; }
    bool on_eof() override {
        bag_.push_back("eof");
        if (at_eof) at_eof();
        return stay_open_at_eof;
    }
    void on_pause_writing() override { bag_.push_back("pause"); }
    void on_resume_writing() override { bag_.push_back("resume"); }
    void on_closed(const reactor::End& end) override { bag_.push_back("closed " + end.to_string()); }
    void on_abandoned() noexcept override { bag_.push_back("abandoned"); }

    std::vector<std::string>& bag_;
};

}  // namespace

// The client asks and shuts down its sending side; the server's protocol
// gets the data and the EOF (the callbacks set before it do not), replies
// on the open half and shuts down in turn: both ends close with reason eof,
// every byte arrives, and the protocol hears its close.
BOOST_AUTO_TEST_CASE(the_protocol_is_told_and_stays_writable_after_the_peers_eof) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    std::vector<std::string> bag;
    Recorder protocol(bag);
    ConnectionPtr server_side;
    protocol.at_eof = [&] {
        BOOST_TEST(server_side->write("reply to: " + protocol.data));
        server_side->write_eof();
    };
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const ConnectionPtr& c) {
        server_side = c;
        c->set_data_callback([&](Connection&, std::string_view) { bag.push_back("callback data"); });
        c->set_eof_callback([&](Connection&) { bag.push_back("callback eof"); });
        c->set_close_callback([&](Connection&, const CloseReason&) { bag.push_back("callback closed"); });
        c->set_protocol(&protocol);
        BOOST_TEST(c->protocol() == &protocol);
    });
    std::string client_got;
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
    BOOST_TEST(bag == (std::vector<std::string>{"eof", "closed eof"}));
    BOOST_TEST(protocol.data == "question");
    BOOST_TEST(client_got == "reply to: question");
    BOOST_TEST(server_side->protocol() == nullptr);  // let go as it was told
    BOOST_TEST(server_side->callbacks_dropped());
    server_side.reset();
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

// The server writes more than its high-water mark to a client that does not
// read yet: its protocol is told to pause from inside write(), and to resume
// once the client reads and the output falls to the low mark.
BOOST_AUTO_TEST_CASE(the_water_marks_go_to_the_protocol) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    std::vector<std::string> bag;
    Recorder protocol(bag);
    const std::string big(4 << 20, 'x');  // more than the socket buffers take
    ConnectionPtr server_side;
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const ConnectionPtr& c) {
        server_side = c;
        c->set_water_marks(64 * 1024, 0);
        c->set_protocol(&protocol);
        BOOST_TEST(c->write(big));
        BOOST_TEST(c->above_high_water());
        BOOST_TEST(bag == std::vector<std::string>{"pause"});  // told from inside write()
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
    BOOST_TEST(bag == std::vector<std::string>{"pause"});
    client->resume_reading();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client_got == big.size(); }));
    BOOST_TEST(bag == (std::vector<std::string>{"pause", "resume"}));
    BOOST_TEST(!server_side->above_high_water());
    server_side->set_protocol(nullptr);
    client->close();
    server_side->close();
    client.reset();
    server_side.reset();
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
    BOOST_TEST(bag == (std::vector<std::string>{"pause", "resume"}));  // cleared: not told of the close
}

// A protocol cleared again leaves nobody to tell: the peer's EOF closes the
// connection (reason eof: the peer reads its end). A callback set after a
// protocol takes its place: the close callback hears the close, the
// protocol nothing.
BOOST_AUTO_TEST_CASE(without_a_protocol_the_eof_closes_and_a_later_callback_takes_its_place) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    std::vector<std::string> bag;
    Recorder first(bag), second(bag);
    ConnectionPtr cleared, replaced;
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const ConnectionPtr& c) {
        if (!cleared) {
            cleared = c;
            c->set_protocol(&first);
            c->set_protocol(nullptr);
        } else {
            replaced = c;
            c->set_protocol(&second);
            c->set_close_callback([&](Connection&, const CloseReason& r) { bag.push_back("callback " + r.to_string()); });
            BOOST_TEST(c->protocol() != &second);
        }
    });
    int client_ends = 0;
    for (int i = 0; i < 2; ++i) {
        reactor::connect(sched, listener->address(), [&](ConnectionPtr c, std::error_code ec) {
            BOOST_REQUIRE(!ec);
            c->set_close_callback([&](Connection&, const CloseReason& r) {
                BOOST_TEST(r.to_string() == "eof");
                ++client_ends;
            });
            c->write_eof();
        });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return i == 0 ? cleared != nullptr : replaced != nullptr; }));
    }
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client_ends == 2 && !bag.empty(); }));
    BOOST_TEST(bag == std::vector<std::string>{"callback eof"});
    BOOST_TEST(!cleared->is_open());
    cleared.reset();
    replaced.reset();
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

// STARTTLS replaces the protocol from inside a data callback: the callbacks'
// protocol, running, must outlive that (AddressSanitizer would see it freed).
// The new protocol gets the next bytes; the data callback never runs again.
BOOST_AUTO_TEST_CASE(a_callback_may_hand_the_connection_to_a_protocol) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    std::vector<std::string> bag;
    Recorder protocol(bag);
    int callback_calls = 0;
    ConnectionPtr server_side;
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const ConnectionPtr& c) {
        server_side = c;
        c->set_data_callback([&](Connection& conn, std::string_view d) {
            ++callback_calls;
            BOOST_TEST(d == "STARTTLS\n");
            conn.set_protocol(&protocol);
            conn.write("go ahead\n");
        });
    });
    ConnectionPtr client;
    std::string client_got;
    reactor::connect(sched, listener->address(), [&](ConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        client = c;
        c->set_data_callback([&](Connection& conn, std::string_view d) {
            client_got += d;
            if (client_got == "go ahead\n") conn.write("hello");
        });
        c->write("STARTTLS\n");
    });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return protocol.data == "hello"; }));
    BOOST_TEST(callback_calls == 1);
    client->abort();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !bag.empty(); }));
    BOOST_TEST(bag.back().starts_with("closed reset"));
    client.reset();
    server_side.reset();
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

// The loop ends (~Scheduler, no close()) with one connection open and the
// other's close still queued: neither protocol is told on_closed; each hears
// on_abandoned once, as it is let go.
BOOST_AUTO_TEST_CASE(a_loop_ending_before_the_close_tells_the_protocol) {
    std::vector<std::string> open_bag, closing_bag;
    Recorder open_protocol(open_bag), closing_protocol(closing_bag);
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
        open_side->set_protocol(&open_protocol);
        closing_side->set_protocol(&closing_protocol);
        closing_side->abort();  // its close is queued, not told: the loop does not run again
        BOOST_TEST(!closing_side->callbacks_dropped());
        BOOST_TEST(open_bag.empty());
        BOOST_TEST(closing_bag.empty());
    }
    BOOST_TEST(open_bag == std::vector<std::string>{"abandoned"});
    BOOST_TEST(closing_bag == std::vector<std::string>{"abandoned"});
    BOOST_TEST(open_side->callbacks_dropped());
    BOOST_TEST(closing_side->callbacks_dropped());
}

// A close that was told is the end the protocol hears of: no on_abandoned
// when the loop ends afterwards, and a protocol set from then on is told
// nothing.
BOOST_AUTO_TEST_CASE(a_told_close_leaves_nothing_to_abandon) {
    std::vector<std::string> bag, late_bag;
    Recorder protocol(bag), late(late_bag);
    ConnectionPtr server_side;
    {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const ConnectionPtr& c) {
            server_side = c;
            c->set_protocol(&protocol);
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
        server_side->set_protocol(&late);
        BOOST_TEST(server_side->protocol() == nullptr);
        client->abort();
    }
    BOOST_TEST(bag == std::vector<std::string>{"closed local"});
    BOOST_TEST(late_bag.empty());
}
