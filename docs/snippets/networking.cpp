// SPDX-License-Identifier: MIT
// docs/networking.md: a reactor::Protocol of one's own over a plain
// connection; the callback echo server with backpressure, and the same server
// with streams; connection deadlines; graceful shutdown, of a Listener and of
// a StreamServer on SIGTERM. Loopback only; every case ends by itself.
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <futures/futures.hpp>
#include <reactor/net/connection_set.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/net/transport.hpp>
#include <reactor/scheduler.hpp>

using namespace std::chrono_literals;

namespace {

// [snippet:user_protocol]
// Echoes what it receives in upper case. Owned as the library's layers are
// (reactor/ref.hpp): it holds one count of itself from start() until its
// transport tells it the end; the transport keeps only a plain pointer to it.
class UpperEcho final : public reactor::Protocol, public reactor::RefCounted {
public:
    static reactor::Ref<UpperEcho> start(reactor::TransportPtr transport) {
        reactor::Ref<UpperEcho> echo(new UpperEcho(transport));
        echo->add_ref();                      // its own count, given back in on_closed
        transport->set_protocol(echo.get());  // told everything from now on
        return echo;
    }

    void on_data(std::string_view data) override {  // valid only during the call
        std::string upper(data);
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        transport_->write(upper);
    }
    // on_eof() is not overridden: at the peer's EOF the transport flushes
    // what was written, then closes (End eof).
    void on_closed(const reactor::End&) override { let_go(); }  // the transport let go of us
    void on_abandoned() noexcept override { let_go(); }         // the loop ended first

private:
    explicit UpperEcho(reactor::TransportPtr transport) : transport_(std::move(transport)) {}
    void let_go() noexcept { reactor::Ref<UpperEcho>::adopt(this).reset(); }  // may free us: touch nothing after
    reactor::TransportPtr transport_;  // plain, TLS or yours: the same calls
};
// [end-snippet:user_protocol]

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

BOOST_AUTO_TEST_CASE(a_protocol_of_ones_own) {
    reactor::Scheduler sched;
    const reactor::Address address = reactor::Address::parse("127.0.0.1", 0);
    reactor::Ref<UpperEcho> server_side;  // kept, to count who else holds it
    // [snippet:user_protocol_listen]
    auto listener = reactor::Listener::listen(sched, address, [&](const reactor::ConnectionPtr& c) {
        server_side = UpperEcho::start(c);  // the connection's protocol: no callbacks made
    });
    // [end-snippet:user_protocol_listen]

    // A client that sends "hello" and its EOF: the protocol answers, then
    // the server's connection flushes and closes, and the protocol goes.
    std::string reply;
    std::optional<reactor::End> client_end;
    std::error_code connect_error;
    reactor::connect(sched, listener->address(), [&](reactor::ConnectionPtr c, std::error_code error) {
        if (error) {
            connect_error = error;
            return listener->close();
        }
        c->set_data_callback([&](reactor::Connection&, std::string_view data) { reply += data; });
        c->set_close_callback([&](reactor::Connection&, const reactor::End& why) {
            client_end = why;
            listener->close();
        });
        c->write("hello");
        c->write_eof();
    });
    sched.run();
    BOOST_TEST(!connect_error);
    BOOST_TEST(reply == "HELLO");
    BOOST_REQUIRE(client_end.has_value());
    BOOST_TEST((client_end->kind == reactor::EndKind::eof));  // the server closed after its answer
    BOOST_TEST(server_side.use_count() == 1u);  // it let itself go when told the close: ours alone
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(callback_echo_server) {
    reactor::Scheduler sched;
    const reactor::Address address = reactor::Address::parse("127.0.0.1", 0);
    // [snippet:echo_server]
    std::size_t open = 0;
    reactor::Listener::Options options;
    // Backpressure: a client that does not read its echoes stops being read from.
    options.connection.pause_reading_above_high_water = true;
    auto listener = reactor::Listener::listen(
        sched, address,
        [&](const reactor::ConnectionPtr& c) {
            ++open;
            c->set_data_callback([](reactor::Connection& c, std::string_view data) { c.write(data); });
            c->set_close_callback([&](reactor::Connection&, const reactor::End&) { --open; });
        },
        options);
    // [end-snippet:echo_server]

    // A client that sends 1 MiB at once: whatever the water marks do
    // meanwhile, every byte comes back, in order.
    std::string message(1 << 20, '\0');
    for (std::size_t i = 0; i < message.size(); ++i) message[i] = static_cast<char>('a' + i % 26);
    std::string echoed;
    reactor::End client_closed{reactor::EndKind::error, {}};  // a sentinel: only .kind is checked
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
        c->set_close_callback([&](reactor::Connection&, const reactor::End& why) {
            client_closed = why;
            listener->close();
        });
        c->write(message);
    });
    sched.run();
    BOOST_TEST(!connect_error);
    BOOST_TEST(echoed == message);
    BOOST_TEST((client_closed.kind == reactor::EndKind::local));
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

BOOST_AUTO_TEST_CASE(read_until_at_the_end_of_input) {
    reactor::Scheduler sched;
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    BOOST_REQUIRE(::write(fds[1], "one\ntwo", 7) == 7);
    ::close(fds[1]);  // the end of input comes after "two", without a '\n'
    futures::Stream in = futures::Stream::adopt(sched, fds[0]);
    // [snippet:read_lines]
    std::vector<std::string> lines;
    for (;;) {
        try {
            lines.push_back(futures::run_until_complete(sched, in.read_until("\n")));  // "one\n"
        } catch (const futures::IncompleteReadError& eof) {  // the end of input: read_until fails
            if (!eof.partial.empty()) lines.push_back(eof.partial);  // "two": the bytes after the last '\n'
            break;
        }
    }
    // lines == {"one\n", "two"}
    // [end-snippet:read_lines]
    BOOST_TEST(lines == (std::vector<std::string>{"one\n", "two"}), boost::test_tools::per_element());
    // At the end of input with nothing left, `partial` is "" (and read() gives "").
    try {
        futures::run_until_complete(sched, in.read_until("\n"));
        BOOST_FAIL("read_until at the end of input succeeded");
    } catch (const futures::IncompleteReadError& eof) {
        BOOST_TEST(eof.partial == "");
        BOOST_TEST(!eof.expected.has_value());
    }
    BOOST_TEST(in.at_eof());
    in.close();
    futures::run_until(sched, in.wait_closed(), 5s);
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(connection_deadlines) {
    reactor::Scheduler sched;
    const reactor::Address address = reactor::Address::parse("127.0.0.1", 0);
    std::vector<reactor::EndKind> server_saw;
    // [snippet:deadlines]
    const reactor::Duration idle_limit = 20ms;  // short for the example; a keep-alive server might say 30s
    reactor::Listener::Options options;
    options.connection.idle_timeout = idle_limit;  // nothing received or sent for that long: closed
    options.connection.write_timeout = 10s;        // a peer that stops reading: aborted
    auto listener = reactor::Listener::listen(
        sched, address,
        [&](const reactor::ConnectionPtr& c) {
            c->set_data_callback([](reactor::Connection& c, std::string_view data) { c.write(data); });
            c->set_close_callback([&](reactor::Connection&, const reactor::End& why) {
                server_saw.push_back(why.kind);  // EndKind::idle_timeout for a client gone quiet
            });
        },
        options);
    // [end-snippet:deadlines]

    // A client that connects and says nothing: the server closes it
    // gracefully, and the client sees EOF.
    reactor::End client_saw{reactor::EndKind::error, {}};  // a sentinel: only .kind is checked
    // If no deadline ever passed, this ends the case, and the checks below fail it.
    reactor::Handle guard = sched.call_later(10s, [&] { sched.stop(); });
    reactor::connect(sched, listener->address(), [&](reactor::ConnectionPtr c, std::error_code error) {
        BOOST_TEST(!error);
        if (error) return listener->close();
        c->set_close_callback([&](reactor::Connection&, const reactor::End& why) {
            client_saw = why;
            listener->close();
            guard.cancel();
        });
    });
    sched.run();
    BOOST_TEST_REQUIRE(server_saw.size() == 1u);
    BOOST_TEST((server_saw[0] == reactor::EndKind::idle_timeout));
    BOOST_TEST((client_saw.kind == reactor::EndKind::eof));
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(listener_graceful_shutdown) {
    reactor::Scheduler sched;
    auto listener = reactor::Listener::listen(sched, reactor::Address::parse("127.0.0.1", 0),
                                              [](const reactor::ConnectionPtr& c) {
                                                  c->set_data_callback([](reactor::Connection& c, std::string_view d) {
                                                      c.write(d);
                                                  });
                                              });
    // Two clients that stay connected, and close when the server does.
    std::vector<reactor::EndKind> clients_saw;
    for (int i = 0; i < 2; ++i) {
        reactor::connect(sched, listener->address(), [&](reactor::ConnectionPtr c, std::error_code error) {
            BOOST_TEST(!error);
            if (error) return;
            c->set_close_callback(
                [&](reactor::Connection&, const reactor::End& why) { clients_saw.push_back(why.kind); });
        });
    }
    for (int i = 0; i < 500 && listener->connections().size() < 2; ++i) sched.run_for(10ms);
    BOOST_TEST_REQUIRE(listener->connections().size() == 2u);

    // [snippet:listener_shutdown]
    listener->close();                    // stop accepting; the connections it accepted go on
    listener->connections().close_all();  // each flushes its output, then closes
    // A drain deadline: whatever is still open in 5 s is aborted.
    reactor::Handle deadline = sched.call_later(5s, [listener] { listener->connections().abort_all(); });
    bool all_closed = false;
    listener->wait_closed([&] {
        all_closed = true;  // after the close callback of the last connection
        deadline.cancel();
    });
    sched.run();
    // [end-snippet:listener_shutdown]

    BOOST_TEST(all_closed);
    BOOST_TEST(listener->connections().empty());
    BOOST_TEST_REQUIRE(clients_saw.size() == 2u);
    for (reactor::EndKind kind : clients_saw) BOOST_TEST((kind == reactor::EndKind::eof));
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(stream_server_stops_on_sigterm) {
    reactor::Scheduler sched;
    const reactor::Address address = reactor::Address::parse("127.0.0.1", 0);
    futures::StreamServer server = futures::start_server(
        sched, address, [&](futures::Stream s) { return futures::spawn(sched, EchoSession(s)); });
    // A client: one echo, then SIGTERM to this process (what `kill -TERM <pid>`
    // does), then it leaves.
    std::string echoed;
    futures::Future<void> client = futures::open_connection(sched, server.address()).then([&](futures::Stream s) {
        s.write("ping\n");
        return s.read_until("\n").then([&, s](std::string line) mutable {
            echoed = line;
            sched.call_soon([] { BOOST_TEST(::kill(::getpid(), SIGTERM) == 0); });
            s.close();
        });
    });

    // If the signal never stopped the server, this ends the case (served is false).
    reactor::Handle guard = sched.call_later(10s, [&] { sched.stop(); });
    // [snippet:serve_until_signal]
    futures::Future<void> stop(sched);
    auto request_stop = [stop] {
        if (!stop.done()) stop.set_result();  // a second signal finds it done
    };
    sched.add_signal_handler(SIGINT, request_stop);
    sched.add_signal_handler(SIGTERM, request_stop);
    // On a signal: stop accepting, give the open connections 5 s to finish, abort the rest.
    futures::Future<void> finished = server.serve_until(stop, 5s);
    // true once every connection has closed and every handler's future has
    // settled, with the continuations (catch_error, finally) that queued.
    bool served = futures::run_until(sched, finished);
    sched.remove_signal_handler(SIGINT);
    sched.remove_signal_handler(SIGTERM);
    // [end-snippet:serve_until_signal]
    guard.cancel();

    BOOST_TEST(served);
    BOOST_TEST(stop.done());  // it was the signal that ended the serving
    BOOST_TEST(!finished.failed());
    BOOST_TEST(!server.is_serving());
    BOOST_TEST(server.active() == 0u);
    BOOST_TEST(echoed == "ping\n");
    sched.run();
    BOOST_TEST(client.done());
    BOOST_TEST(!client.failed());
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_SUITE_END()
