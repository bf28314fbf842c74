// docs/networking.md: the callback echo server with backpressure, and the
// same server with streams. Loopback only; every case ends by itself.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <boost/test/unit_test.hpp>
#include <futures/futures.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/scheduler.hpp>

namespace {

// [snippet:echo_session]
// One client's conversation: read, write it back, wait until the output has
// drained (backpressure), read again; done at EOF.
class EchoSession {
public:
    enum class State { start, reading, draining };

    explicit EchoSession(futures::Stream stream) : stream_(std::move(stream)) {}

    futures::Step<void> resume() {
        switch (state_) {
        case State::start:
            state_ = State::reading;
            return read_ = stream_.read();
        case State::reading: {
            std::string data = read_.result();
            if (data.empty()) return futures::finished;  // EOF; the server then closes the stream
            stream_.write(data);
            state_ = State::draining;
            return drain_ = stream_.drain();
        }
        case State::draining:
            drain_.result();
            state_ = State::reading;
            return read_ = stream_.read();
        }
        throw std::logic_error("EchoSession: unknown state");
    }

private:
    futures::Stream stream_;
    State state_ = State::start;
    futures::Future<std::string> read_;
    futures::Future<void> drain_;
};
// [end-snippet:echo_session]

}  // namespace

BOOST_AUTO_TEST_SUITE(networking_md)

BOOST_AUTO_TEST_CASE(callback_echo_server) {
    reactor::Scheduler sched;
    const reactor::Address address = reactor::Address::parse("127.0.0.1", 0);
    // [snippet:echo_server]
    std::size_t open = 0;
    auto listener = reactor::Listener::listen(sched, address, [&](const reactor::ConnectionPtr& c) {
        ++open;
        c->set_data_callback([](reactor::Connection& c, std::string_view data) { c.write(data); });
        // Backpressure: a client that does not read its echoes stops being read from.
        c->set_high_water_callback([](reactor::Connection& c) { c.pause_reading(); });
        c->set_low_water_callback([](reactor::Connection& c) { c.resume_reading(); });
        c->set_close_callback([&](reactor::Connection&, const reactor::CloseReason&) { --open; });
    });
    // [end-snippet:echo_server]

    // A client that sends 1 MiB at once: whatever the water marks do
    // meanwhile, every byte comes back, in order.
    std::string message(1 << 20, '\0');
    for (std::size_t i = 0; i < message.size(); ++i) message[i] = static_cast<char>('a' + i % 26);
    std::string echoed;
    reactor::CloseReason client_closed{reactor::CloseKind::error, -1};
    std::error_code connect_error;
    reactor::connect(sched, listener->address(), [&](reactor::ConnectionPtr c, std::error_code error) {
        if (error) {
            connect_error = error;
            return listener->close();
        }
        c->set_data_callback([&](reactor::Connection& c, std::string_view data) {
            echoed += data;
            if (echoed.size() == message.size()) c.close();
        });
        c->set_close_callback([&](reactor::Connection&, const reactor::CloseReason& why) {
            client_closed = why;
            listener->close();
        });
        c->write(message);
    });
    sched.run();
    BOOST_TEST(!connect_error);
    BOOST_TEST(echoed == message);
    BOOST_TEST((client_closed.kind == reactor::CloseKind::local));
    BOOST_TEST(open == 0u);
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(streams_echo_server) {
    reactor::Scheduler sched;
    const reactor::Address address = reactor::Address::parse("127.0.0.1", 0);
    // [snippet:start_server]
    futures::StreamServer server = futures::start_server(
        sched, address, [&](futures::Stream s) { return futures::spawn(sched, EchoSession(s)); });
    // [end-snippet:start_server]

    futures::Future<std::string> reply =
        futures::open_connection(sched, server.address()).then([](futures::Stream s) {
            s.write("ping\n");
            return s.read_until("\n").then([s](std::string line) mutable {
                s.close();
                return line;
            });
        });
    BOOST_TEST(futures::run_until_complete(sched, reply) == "ping\n");
    server.close();
    sched.run();  // the session reads EOF and ends
    BOOST_TEST(server.active() == 0u);
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_SUITE_END()
