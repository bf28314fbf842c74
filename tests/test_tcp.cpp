// TcpListener, TcpConnection and connect() over real sockets on 127.0.0.1,
// on every selector backend. Ordering comes from callbacks, never from sleeps.
#define BOOST_TEST_MODULE tcp
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <reactor/connector.hpp>
#include <reactor/tcp_connection.hpp>
#include <reactor/tcp_listener.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"

using namespace std::chrono_literals;
using reactor::CloseKind;
using reactor::CloseReason;
using reactor::TcpConnection;
using reactor::TcpConnectionPtr;

namespace reactor {
// Boost.Test names values in failure messages through this (its log is an ostream).
inline std::ostream& boost_test_print_type(std::ostream& os, const Address& a) { return os << a.to_string(); }
inline std::ostream& boost_test_print_type(std::ostream& os, CloseKind k) { return os << to_string(k); }
inline std::ostream& boost_test_print_type(std::ostream& os, TcpConnection::State s) { return os << to_string(s); }
}  // namespace reactor

// A named namespace: the test-case lambdas capture these types.
namespace tcp_test {

using reactor_test::on;

reactor::Address any_loopback() { return reactor::Address::loopback_v4(0); }

// The echo server of these tests: bytes back unchanged; reading pauses while
// the echoes wait above the high mark and resumes at the low mark.
struct EchoServer {
    reactor::TcpListenerPtr listener;
    std::vector<CloseReason> closes;
    std::vector<std::string> events;  // "high", "low" in order
    std::size_t open = 0;

    EchoServer(reactor::Scheduler& sched, reactor::ConnectionOptions copt = {}) {
        reactor::TcpListener::Options lopt;
        lopt.connection = copt;
        listener = reactor::TcpListener::listen(
            sched, any_loopback(),
            [this](const TcpConnectionPtr& c) {
                ++open;
                c->set_data_callback([](TcpConnection& c, std::string_view d) { c.write(d); });
                c->set_high_water_callback([this](TcpConnection& c) {
                    events.push_back("high");
                    c.pause_reading();
                });
                c->set_low_water_callback([this](TcpConnection& c) {
                    events.push_back("low");
                    c.resume_reading();
                });
                c->set_close_callback([this](TcpConnection&, const CloseReason& r) {
                    --open;
                    closes.push_back(r);
                });
            },
            lopt);
    }
    std::uint16_t port() const { return listener->address().port(); }
};

// One load-generating client: keeps `window` messages of random sizes in
// flight, checks every echoed byte against what it sent, and closes after
// `messages` round trips.
class LoadClient {
public:
    LoadClient(reactor::Scheduler& sched, std::uint16_t port, std::uint32_t seed, int messages, const std::string& pool)
        : rng_(seed), messages_(messages), pool_(pool) {
        reactor::connect(sched, reactor::Address::loopback_v4(port), [this](TcpConnectionPtr c, std::error_code ec) {
            if (ec) {
                failure = "connect: " + ec.message();
                return;
            }
            conn_ = c;
            c->set_data_callback([this](TcpConnection& c, std::string_view d) { on_data(c, d); });
            c->set_close_callback([this](TcpConnection&, const CloseReason& r) {
                reason = r;
                closed = true;
                conn_.reset();
            });
            for (int i = 0; i < kWindow; ++i) send_one();
        });
    }

    bool closed = false;
    CloseReason reason;
    std::string failure;
    std::size_t bytes_echoed = 0;
    int completed = 0;

private:
    static constexpr int kWindow = 4;
    static constexpr std::size_t kMaxMessage = 512;

    void send_one() {
        if (sent_ == messages_) return;
        std::size_t size = 1 + rng_() % kMaxMessage;
        std::size_t offset = rng_() % (pool_.size() - size);
        std::string_view msg(pool_.data() + offset, size);
        expected_.append(msg);
        ends_.push_back(sent_bytes_ += size);
        ++sent_;
        conn_->write(msg);
    }

    void on_data(TcpConnection& c, std::string_view d) {
        if (d.size() > expected_.size() || std::memcmp(d.data(), expected_.data(), d.size()) != 0) {
            failure = "echoed bytes differ from the bytes sent";
            return c.abort();
        }
        expected_.consume(d.size());
        bytes_echoed += d.size();
        while (!ends_.empty() && ends_.front() <= bytes_echoed) {
            ends_.pop_front();
            ++completed;
            send_one();
        }
        if (completed == messages_) c.close();
    }

    std::mt19937 rng_;
    int messages_;
    const std::string& pool_;
    TcpConnectionPtr conn_;
    reactor::ByteBuffer expected_;
    std::deque<std::size_t> ends_;
    std::size_t sent_bytes_ = 0;
    int sent_ = 0;
};

}  // namespace tcp_test

using namespace tcp_test;

BOOST_AUTO_TEST_CASE(echo_200_clients_1000_messages_every_byte_back_in_order) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    constexpr int kClients = 200;
    constexpr int kMessages = 1000;
    reactor::Scheduler sched(on(backend));
    EchoServer server(sched);
    const std::string pool = nettest::random_bytes(1 << 20, 42);
    std::vector<std::unique_ptr<LoadClient>> clients;
    for (int i = 0; i < kClients; ++i)
        clients.push_back(std::make_unique<LoadClient>(sched, server.port(), 1000 + i, kMessages, pool));

    bool all_closed = nettest::run_until(sched, [&] {
        for (auto& c : clients)
            if (!c->closed) return false;
        return server.open == 0 && server.closes.size() == kClients;
    }, 120s);
    BOOST_REQUIRE(all_closed);
    for (auto& c : clients) {
        BOOST_TEST(c->failure == "");
        BOOST_TEST(c->completed == kMessages);
        BOOST_TEST(c->reason.kind == CloseKind::local);
    }
    for (auto& r : server.closes) BOOST_TEST(r.to_string() == "eof");
    BOOST_TEST(server.listener->accepted() == kClients);
    server.listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(half_close_peer_eof_then_reply_then_shutdown) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // The client sends a request and shuts down its sending side; the server
    // sees EOF, still replies on its open half, and shuts down in turn: both
    // ends close with reason eof and every byte arrives.
    reactor::Scheduler sched(on(backend));
    std::string server_got, client_got;
    std::vector<std::string> bag;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        c->set_data_callback([&](TcpConnection&, std::string_view d) { server_got += d; });
        c->set_eof_callback([&](TcpConnection& c) {
            bag.push_back("server eof");
            BOOST_TEST(c.write("reply to: " + server_got));
            c.shutdown_write();
        });
        c->set_close_callback([&](TcpConnection&, const CloseReason& r) { bag.push_back("server " + r.to_string()); });
    });
    reactor::connect(sched, listener->address(), [&](TcpConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        c->set_data_callback([&](TcpConnection&, std::string_view d) { client_got += d; });
        c->set_eof_callback([&](TcpConnection&) { bag.push_back("client eof"); });
        c->set_close_callback([&](TcpConnection&, const CloseReason& r) { bag.push_back("client " + r.to_string()); });
        c->write("question");
        c->shutdown_write();
        BOOST_TEST(!c->write("too late"));  // no writes after shutdown_write
    });
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return bag.size() == 4; }));
    BOOST_TEST(server_got == "question");
    BOOST_TEST(client_got == "reply to: question");
    BOOST_TEST(bag[0] == "server eof");
    // Both sides finished both directions, so both close with eof.
    std::multiset<std::string> rest(bag.begin() + 1, bag.end());
    BOOST_TEST(rest.count("client eof") == 2);  // the event, then the close reason
    BOOST_TEST(rest.count("server eof") == 1);
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(shutdown_write_waits_for_buffered_output_and_reading_goes_on) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    const std::string big = nettest::random_bytes(4 << 20, 7);
    TcpConnectionPtr server_conn;
    std::string server_got;
    bool server_closed = false;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        server_conn = c;
        c->set_eof_callback([](TcpConnection& c) { c.close(); });
        c->set_data_callback([&](TcpConnection&, std::string_view d) { server_got += d; });
        c->set_close_callback([&](TcpConnection&, const CloseReason& r) {
            BOOST_TEST(r.to_string() == "local");
            server_closed = true;
        });
        c->write(big);
        c->shutdown_write();
    });
    int fd = nettest::connect_blocking(listener->address().port());
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return server_conn != nullptr; }));
    // 4 MiB cannot fit in the kernel buffers of a peer that has not read yet:
    // the shutdown is still pending behind buffered output.
    BOOST_TEST(server_conn->buffered() > 0u);
    BOOST_TEST(server_conn->is_open());

    // The peer now reads everything, to EOF, on a helper that drives the
    // loop: a blocking reader here would stall the server.
    std::string client_got;
    bool client_eof = false;
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    sched.add_reader(fd, [&] {
        char buf[65536];
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) client_got.append(buf, static_cast<std::size_t>(n));
        if (n == 0) {
            client_eof = true;
            sched.remove_reader(fd);
        }
    });
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return client_eof; }));
    BOOST_TEST(client_got.size() == big.size());
    BOOST_TEST((client_got == big));
    // The server's reading half is still open after its shutdown_write.
    BOOST_TEST(nettest::send_all(fd, "ack"));
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return server_got == "ack"; }));
    ::shutdown(fd, SHUT_WR);
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return server_closed; }));
    ::close(fd);
    server_conn.reset();
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(peer_reset_mid_write_reaches_close_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    bool high = false;
    std::optional<CloseReason> reason;
    std::size_t writes_after_close = 0;
    TcpConnectionPtr server_conn;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        server_conn = c;
        c->set_high_water_callback([&](TcpConnection&) { high = true; });
        c->set_close_callback([&](TcpConnection& c, const CloseReason& r) {
            reason = r;
            if (!c.write("x")) ++writes_after_close;
        });
        c->write(std::string(16 << 20, 'z'));  // far more than the kernel buffers hold
    });
    int fd = nettest::connect_blocking(listener->address().port());
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return high; }));
    BOOST_TEST(server_conn->buffered() > 0u);
    // The peer resets: SO_LINGER 0 then close() sends RST.
    linger lg{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    ::close(fd);
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return reason.has_value(); }));
    BOOST_TEST(reason->kind == CloseKind::reset);
    BOOST_TEST((reason->error == ECONNRESET || reason->error == EPIPE), "error " << reason->error);
    BOOST_TEST(writes_after_close == 1u);
    BOOST_TEST(server_conn->state() == TcpConnection::State::closed);
    BOOST_TEST(server_conn->fd() == -1);
    server_conn.reset();
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(slow_reader_triggers_high_water_and_pause) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // The client floods an echo server without reading. The echoes back up on
    // the server, which crosses its high mark and pauses reading; then the
    // client's own writes back up and cross its high mark. When the client
    // reads again everything drains, and every byte comes back in order.
    reactor::Scheduler sched(on(backend));
    EchoServer server(sched);
    const std::string pool = nettest::random_bytes(1 << 20, 3);
    std::vector<std::string> bag;
    std::string sent, got;
    TcpConnectionPtr client;
    bool client_closed = false;
    std::function<void()> pump;
    pump = [&] {
        // One 64 KiB chunk per iteration until our own buffer crosses the high mark.
        if (!client || client->above_high_water() || !client->is_open()) return;
        std::string_view chunk(pool.data() + (sent.size() % (pool.size() / 2)), 64 * 1024);
        sent += chunk;
        client->write(chunk);
        sched.call_soon([&] { pump(); });
    };
    reactor::connect(sched, server.listener->address(), [&](TcpConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        client = c;
        c->pause_reading();
        c->set_data_callback([&](TcpConnection&, std::string_view d) { got += d; });
        c->set_high_water_callback([&](TcpConnection&) { bag.push_back("client high"); });
        c->set_low_water_callback([&](TcpConnection& c) {
            bag.push_back("client low");
            c.shutdown_write();  // enough: the echo server answers EOF by closing once flushed
        });
        c->set_close_callback([&](TcpConnection&, const CloseReason& r) {
            bag.push_back("client " + r.to_string());
            client_closed = true;
        });
        pump();
    });
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return !bag.empty(); }));
    BOOST_TEST(bag == std::vector<std::string>{"client high"});
    BOOST_TEST(server.events == std::vector<std::string>{"high"}, "the server paused first");
    client->resume_reading();
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return client_closed && server.open == 0; }));
    BOOST_TEST(bag == (std::vector<std::string>{"client high", "client low", "client eof"}));
    BOOST_TEST(server.events == (std::vector<std::string>{"high", "low"}));
    BOOST_TEST(got.size() == sent.size());
    BOOST_TEST((got == sent));
    client.reset();
    server.listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

// Regression (issue 10): write() returned true although the high-water
// callback it ran had aborted the connection, and the data was gone.
BOOST_AUTO_TEST_CASE(write_returns_false_when_its_high_water_callback_aborted) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    std::vector<std::string> bag;
    std::optional<bool> accepted;
    TcpConnectionPtr server_conn;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        server_conn = c;
        c->set_high_water_callback([&](TcpConnection& c) {
            bag.push_back("high " + std::string(to_string(c.state())));
            c.abort();
        });
        c->set_close_callback([&](TcpConnection&, const CloseReason& r) { bag.push_back("close " + r.to_string()); });
        // The peer reads nothing: far more than the kernel buffers hold stays
        // in ours, above the high mark.
        accepted = c->write(std::string(16 << 20, 'h'));
        bag.push_back("write returned");
    });
    int fd = nettest::connect_blocking(listener->address().port());
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return bag.size() == 3; }));
    BOOST_REQUIRE(accepted.has_value());
    BOOST_TEST(!*accepted, "the abort in the high-water callback discarded the data");
    BOOST_TEST(bag == (std::vector<std::string>{"high open", "write returned", "close local"}));
    BOOST_TEST(server_conn->buffered() == 0u);
    BOOST_TEST(server_conn->state() == TcpConnection::State::closed);
    ::close(fd);
    server_conn.reset();
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

// The other half of that promise: a graceful close() from the high-water
// callback keeps the data, so write() says true and every byte arrives.
BOOST_AUTO_TEST_CASE(write_returns_true_when_its_high_water_callback_closed_gracefully) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    const std::string big = nettest::random_bytes(16 << 20, 5);
    std::optional<bool> accepted;
    std::optional<CloseReason> server_reason;
    TcpConnectionPtr server_conn;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        server_conn = c;
        c->set_high_water_callback([](TcpConnection& c) { c.close(); });
        c->set_close_callback([&](TcpConnection&, const CloseReason& r) { server_reason = r; });
        accepted = c->write(big);
        BOOST_TEST((c->state() == TcpConnection::State::closing));
    });
    int fd = nettest::connect_blocking(listener->address().port());
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return accepted.has_value(); }));
    BOOST_TEST(*accepted);
    // Read everything to EOF on the loop: a blocking reader would stall the flush.
    std::string got;
    bool eof = false;
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    sched.add_reader(fd, [&] {
        char buf[65536];
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) got.append(buf, static_cast<std::size_t>(n));
        if (n == 0) {
            eof = true;
            sched.remove_reader(fd);
        }
    });
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return eof && server_reason.has_value(); }));
    BOOST_TEST(got.size() == big.size());
    BOOST_TEST((got == big));
    BOOST_TEST(server_reason->to_string() == "local");
    ::close(fd);
    server_conn.reset();
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

// Regression (issue 10): inside the close callback peer_address() said
// "unspecified", because it asked the already closed fd. Both sides, after
// a reset, when the address matters most for a log line.
BOOST_AUTO_TEST_CASE(addresses_outlive_the_socket_into_the_close_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    struct Seen {
        reactor::Address local_open, peer_open, local_closed, peer_closed;
        std::optional<CloseReason> reason;
    } server, client;
    auto watch = [](const TcpConnectionPtr& c, Seen& seen) {
        seen.local_open = c->local_address();
        seen.peer_open = c->peer_address();
        c->set_close_callback([&seen](TcpConnection& c, const CloseReason& r) {
            BOOST_TEST(c.fd() == -1);
            seen.local_closed = c.local_address();
            seen.peer_closed = c.peer_address();
            seen.reason = r;
        });
    };
    TcpConnectionPtr server_conn, client_conn;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        server_conn = c;
        watch(c, server);
    });
    reactor::connect(sched, listener->address(), [&](TcpConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        client_conn = c;
        watch(c, client);
    });
    // Both ends adopted (the server's accept and the client's connect
    // callback come in either order); only then does the client reset.
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return server_conn && client_conn; }));
    client_conn->abort();
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return server.reason && client.reason; }));
    BOOST_TEST(client.reason->to_string() == "local");
    BOOST_TEST(server.reason->kind == CloseKind::reset, server.reason->to_string());
    BOOST_TEST(client.peer_open == listener->address());
    BOOST_TEST(client.local_open.is_ip());
    BOOST_TEST(server.local_open == listener->address());
    BOOST_TEST(server.peer_open == client.local_open);
    BOOST_TEST(client.local_closed == client.local_open);
    BOOST_TEST(client.peer_closed == client.peer_open);
    BOOST_TEST(server.local_closed == server.local_open);
    BOOST_TEST(server.peer_closed == server.peer_open);
    BOOST_TEST(server_conn->peer_address() == server.peer_open);  // and after the close callback
    server_conn.reset();
    client_conn.reset();
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(connect_refused_reaches_the_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // A port that is bound but not listening refuses, and nobody else can take it meanwhile.
    int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto addr = reactor::Address::loopback_v4(0);
    BOOST_REQUIRE(::bind(holder, addr.data(), addr.size()) == 0);
    auto port = reactor::Address::local_of(holder).port();

    reactor::Scheduler sched(on(backend));
    std::optional<std::error_code> result;
    bool got_connection = false;
    auto connector = reactor::connect(sched, reactor::Address::loopback_v4(port), [&](TcpConnectionPtr c, std::error_code ec) {
        got_connection = c != nullptr;
        result = ec;
    });
    BOOST_TEST(!result.has_value());  // never synchronous
    BOOST_TEST(connector->pending());
    sched.run();
    BOOST_REQUIRE(result.has_value());
    BOOST_TEST(result->value() == ECONNREFUSED);
    BOOST_TEST(!got_connection);
    BOOST_TEST(!connector->pending());
    BOOST_TEST(sched.empty());
    ::close(holder);
}

// Tests send traffic to loopback only, so "the peer never answers" is made
// locally: a listener whose accept queue is full makes the kernel drop new
// SYNs, and our connect timeout has to fire (ETIMEDOUT).
BOOST_AUTO_TEST_CASE(connect_timeout_reaches_the_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    BOOST_REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    BOOST_REQUIRE(::listen(lfd, 0) == 0);  // never accepted from
    BOOST_REQUIRE(::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    std::vector<int> fillers;  // fill the accept queue (backlog 0 holds one)
    for (int i = 0; i < 3; ++i) {
        int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        fillers.push_back(c);
    }
    // Wait (bounded, no fixed sleep) until the first filler's handshake is
    // done, i.e. the queue is full: later SYNs, ours included, are dropped.
    pollfd first{fillers[0], POLLOUT, 0};
    BOOST_REQUIRE(::poll(&first, 1, 5000) == 1);

    reactor::Scheduler sched(on(backend));
    std::optional<std::error_code> result;
    TcpConnectionPtr unexpected;
    reactor::Connector::Options opt;
    opt.timeout = 200ms;
    reactor::connect(sched, reactor::Address::parse(fmt::format("127.0.0.1:{}", ntohs(addr.sin_port))),
                     [&](TcpConnectionPtr c, std::error_code ec) {
                         result = ec;
                         unexpected = c;
                     },
                     opt);
    sched.run();
    BOOST_REQUIRE(result.has_value());
    BOOST_TEST(!unexpected);
    BOOST_TEST(result->value() == ETIMEDOUT, result->message());
    BOOST_TEST(sched.empty());
    for (int c : fillers) ::close(c);
    ::close(lfd);
}

// A server that accepts and at once aborts (SO_LINGER {1, 0}, then close)
// resets a connection the client has not yet seen complete: connect reports
// ECONNRESET, not a connection. Deterministic on loopback: the kernel does
// the whole handshake while our loop is not running, and the test waits for
// the reset to land on the client socket before the loop first polls it.
BOOST_AUTO_TEST_CASE(connect_reset_by_the_server_at_once_reaches_the_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto any = reactor::Address::loopback_v4(0);
    BOOST_REQUIRE(::bind(lfd, any.data(), any.size()) == 0);
    BOOST_REQUIRE(::listen(lfd, 1) == 0);
    const auto server_address = reactor::Address::local_of(lfd);

    // The connector's socket is the lowest free fd (POSIX allocates the
    // lowest), so the test can watch it without reaching into the Connector.
    const int client_fd = ::dup(0);
    BOOST_REQUIRE(client_fd >= 0);
    ::close(client_fd);
    std::optional<std::error_code> result;
    TcpConnectionPtr unexpected;
    auto connector = reactor::connect(sched, server_address, [&](TcpConnectionPtr c, std::error_code ec) {
        result = ec;
        unexpected = c;
    });
    BOOST_REQUIRE(connector->pending());

    pollfd listening{lfd, POLLIN, 0};
    BOOST_REQUIRE(::poll(&listening, 1, 5000) == 1);  // handshake done in the kernel
    int accepted = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    BOOST_REQUIRE(accepted >= 0);
    BOOST_REQUIRE((reactor::Address::peer_of(accepted) == reactor::Address::local_of(client_fd)));
    linger lg{1, 0};
    ::setsockopt(accepted, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    ::close(accepted);  // sends RST
    // poll() always reports POLLERR and POLLHUP, asked for or not: waiting
    // with no events asked returns once the reset has reached the client
    // socket (it does not consume the pending error, SO_ERROR does).
    pollfd client{client_fd, 0, 0};
    BOOST_REQUIRE(::poll(&client, 1, 5000) == 1);
    BOOST_TEST((client.revents & (POLLERR | POLLHUP)) != 0);

    sched.run();
    BOOST_REQUIRE(result.has_value());
    BOOST_TEST(result->value() == ECONNRESET, result->message());
    BOOST_TEST(!unexpected);
    BOOST_TEST(!connector->pending());
    BOOST_TEST(sched.empty());
    ::close(lfd);
}

BOOST_AUTO_TEST_CASE(cancelled_connect_never_calls_back) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    EchoServer server(sched);
    bool called = false;
    auto c = reactor::connect(sched, server.listener->address(), [&](TcpConnectionPtr, std::error_code) { called = true; });
    BOOST_TEST(c->cancel());
    BOOST_TEST(!c->cancel());
    server.listener->close();
    sched.run();
    BOOST_TEST(!called);
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(write_to_closed_peer_does_not_raise_sigpipe) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // SIGPIPE at its default disposition kills the process: this test only
    // passes if every send uses MSG_NOSIGNAL.
    BOOST_REQUIRE(::signal(SIGPIPE, SIG_DFL) != SIG_ERR);
    reactor::Scheduler sched(on(backend));
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [](const TcpConnectionPtr& c) { c->close(); });
    std::optional<CloseReason> reason;
    int writes = 0;
    TcpConnectionPtr client;
    std::function<void()> pump = [&] {
        if (client && client->write(std::string(1024, 'p'))) {
            ++writes;
            sched.call_soon([&] { pump(); });
        }
    };
    reactor::connect(sched, listener->address(), [&](TcpConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        client = c;
        c->set_eof_callback([](TcpConnection&) {});  // stay writable after the peer's FIN
        c->set_close_callback([&](TcpConnection&, const CloseReason& r) { reason = r; });
        pump();
    });
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return reason.has_value(); }));
    BOOST_TEST(reason->kind == CloseKind::reset, reason->to_string());
    BOOST_TEST(writes >= 1);
    client.reset();
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(close_flushes_buffered_output_first) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    const std::string big = nettest::random_bytes(3 << 20, 11);
    std::optional<CloseReason> server_reason;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        c->set_close_callback([&](TcpConnection&, const CloseReason& r) { server_reason = r; });
        // Write until some output waits in our buffer (kernel buffers vary).
        while (c->buffered() == 0) c->write(big);
        c->close();
        BOOST_TEST((c->state() == TcpConnection::State::closing));
        BOOST_TEST(!c->write("more"));
    });
    std::string got;
    std::optional<CloseReason> client_reason;
    reactor::connect(sched, listener->address(), [&](TcpConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        c->set_data_callback([&](TcpConnection&, std::string_view d) { got += d; });
        c->set_close_callback([&](TcpConnection&, const CloseReason& r) { client_reason = r; });
    });
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return server_reason && client_reason; }));
    BOOST_TEST(server_reason->to_string() == "local");
    BOOST_TEST(client_reason->to_string() == "eof");
    BOOST_TEST(got.size() % big.size() == 0u);
    BOOST_TEST((got.substr(0, big.size()) == big));
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(abort_discards_output_and_the_peer_sees_a_reset) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    std::optional<CloseReason> server_reason, client_reason;
    TcpConnectionPtr server_conn;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        server_conn = c;
        c->set_close_callback([&](TcpConnection&, const CloseReason& r) { server_reason = r; });
    });
    reactor::connect(sched, listener->address(), [&](TcpConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        c->set_close_callback([&](TcpConnection&, const CloseReason& r) { client_reason = r; });
    });
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return server_conn != nullptr; }));
    server_conn->write(std::string(8 << 20, 'a'));
    server_conn->abort();
    server_conn->abort();  // idempotent
    BOOST_TEST(server_conn->buffered() == 0u);
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return server_reason && client_reason; }));
    BOOST_TEST(server_reason->to_string() == "local");
    BOOST_TEST(client_reason->kind == CloseKind::reset, client_reason->to_string());
    server_conn.reset();
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(drain_callback_after_immediate_and_after_buffered_writes) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    std::vector<std::string> bag;
    TcpConnectionPtr server_conn;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) { server_conn = c; });
    int fd = nettest::connect_blocking(listener->address().port());
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return server_conn != nullptr; }));
    server_conn->set_drain_callback([&](TcpConnection& c) { bag.push_back(fmt::format("drain {}", c.buffered())); });
    server_conn->write("small");
    BOOST_TEST(bag.empty());  // never from inside write()
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return bag.size() == 1; }));
    BOOST_TEST(nettest::recv_exactly(fd, 5) == "small");

    const std::size_t big = 8 << 20;
    server_conn->write(std::string(big, 'b'));
    BOOST_TEST(server_conn->buffered() > 0u);
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    std::size_t got = 0;
    sched.add_reader(fd, [&] {
        char buf[65536];
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) got += static_cast<std::size_t>(n);
    });
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return bag.size() == 2 && got == big; }));
    BOOST_TEST(bag == (std::vector<std::string>{"drain 0", "drain 0"}));
    sched.remove_reader(fd);
    server_conn->close();
    ::close(fd);
    server_conn.reset();
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(pause_reading_holds_data_until_resume) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    TcpConnectionPtr server_conn;
    std::string got;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        server_conn = c;
        c->pause_reading();
        c->set_data_callback([&](TcpConnection&, std::string_view d) { got += d; });
    });
    int fd = nettest::connect_blocking(listener->address().port());
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return server_conn != nullptr; }));
    BOOST_TEST(nettest::send_all(fd, "held"));
    BOOST_TEST(!server_conn->reading());
    // Nothing is registered for this connection while it is paused, so once
    // the listener is gone the loop has nothing to wait for: run() returns
    // without delivering data.
    listener.reset();
    sched.run();
    BOOST_TEST(got == "");
    server_conn->resume_reading();
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return got == "held"; }));
    ::close(fd);
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return !server_conn->is_open(); }));
    server_conn.reset();
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(callbacks_may_close_and_drop_the_last_reference) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // Regression guard for lifetimes (run it under ASan): the user's only
    // reference is dropped from inside the connection's own callbacks.
    reactor::Scheduler sched(on(backend));
    std::map<int, TcpConnectionPtr> registry;
    int next_id = 0, closed = 0;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        int id = next_id++;
        registry[id] = c;
        c->set_data_callback([&, id](TcpConnection& c, std::string_view d) {
            c.write(d);
            c.abort();
            registry.erase(id);  // the last user reference, while on_data is on the stack
            c.write("ignored");   // still safe: the connection releases itself later
        });
        c->set_close_callback([&](TcpConnection&, const CloseReason&) { ++closed; });
    });
    std::vector<int> fds;
    for (int i = 0; i < 5; ++i) fds.push_back(nettest::connect_blocking(listener->address().port()));
    for (int fd : fds) nettest::send_all(fd, "hi");
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return closed == 5; }));
    BOOST_TEST(registry.empty());
    for (int fd : fds) ::close(fd);
    listener.reset();
    // The listener may also be dropped from its own accept callback.
    reactor::TcpListenerPtr once;
    int accepted = 0;
    once = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        ++accepted;
        c->abort();
        once.reset();
    });
    int fd1 = nettest::connect_blocking(once->address().port());
    sched.run();
    BOOST_TEST(accepted == 1);
    BOOST_TEST(once == nullptr);
    ::close(fd1);
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(callbacks_may_replace_themselves_while_running) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // Regression guard (run under ASan): a data callback that switches the
    // connection to another handler from inside itself, as a protocol upgrade
    // would, must not destroy itself mid-call.
    reactor::Scheduler sched(on(backend));
    std::vector<std::string> bag;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        auto big = std::make_shared<std::string>(1000, 'c');  // a capture that lives on the heap
        c->set_data_callback([&bag, big](TcpConnection& c, std::string_view d) {
            c.set_data_callback([&bag](TcpConnection&, std::string_view d) { bag.push_back("second " + std::string(d)); });
            bag.push_back("first " + std::string(d) + " " + std::to_string(big->size()));
        });
        c->set_eof_callback([&bag](TcpConnection& c) {
            c.set_eof_callback(nullptr);
            bag.push_back("eof");
            c.close();
        });
    });
    int fd = nettest::connect_blocking(listener->address().port());
    nettest::send_all(fd, "a");
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return bag.size() == 1; }));
    nettest::send_all(fd, "b");
    ::shutdown(fd, SHUT_WR);
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return bag.size() == 3; }));
    BOOST_TEST(bag == (std::vector<std::string>{"first a 1000", "second b", "eof"}));
    ::close(fd);
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(emfile_pauses_accepting_reports_and_recovers) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    reactor::TcpListener::Options lopt;
    lopt.accept_pause = 20ms;
    std::vector<std::error_code> errors;
    std::string got;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        c->set_data_callback([&](TcpConnection& c, std::string_view d) {
            got += d;
            c.close();
        });
    }, lopt);
    listener->set_error_callback([&](reactor::TcpListener&, std::error_code ec, std::string_view) { errors.push_back(ec); });
    int fd = nettest::connect_blocking(listener->address().port());  // waits in the backlog
    BOOST_REQUIRE(fd >= 0);
    nettest::send_all(fd, "late");

    // No fd can be allocated any more: accept fails with EMFILE.
    rlimit saved{};
    ::getrlimit(RLIMIT_NOFILE, &saved);
    int lowest_free = ::dup(0);
    ::close(lowest_free);
    rlimit tight = saved;
    tight.rlim_cur = static_cast<rlim_t>(lowest_free);
    BOOST_REQUIRE(::setrlimit(RLIMIT_NOFILE, &tight) == 0);
    // The watchdog of run_until is a timer, not an fd, so this is safe.
    bool reported = nettest::run_until(sched, [&] { return !errors.empty(); }, 5s);
    ::setrlimit(RLIMIT_NOFILE, &saved);
    BOOST_REQUIRE(reported);
    BOOST_TEST(errors.size() == 1u, "one report per pause, no busy loop");
    BOOST_TEST(errors[0].value() == EMFILE);
    BOOST_TEST(listener->accepted() == 0u);
    // After the pause the waiting client is accepted and served.
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return got == "late"; }));
    BOOST_TEST(nettest::recv_all(fd) == "");  // closed by the server
    ::close(fd);
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(connection_whose_fd_the_backend_cannot_watch_is_refused_cleanly) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // select cannot watch fd >= FD_SETSIZE: such a connection is accepted,
    // closed, and reported. Other backends simply serve it.
    rlimit saved{};
    ::getrlimit(RLIMIT_NOFILE, &saved);
    if (saved.rlim_max < FD_SETSIZE + 64) {
        BOOST_TEST_MESSAGE("RLIMIT_NOFILE too low to reach FD_SETSIZE; skipped");
        return;
    }
    rlimit wide = saved;
    wide.rlim_cur = FD_SETSIZE + 64;
    BOOST_REQUIRE(::setrlimit(RLIMIT_NOFILE, &wide) == 0);

    reactor::Scheduler sched(on(backend));
    std::vector<std::string> reports;
    std::string served;
    auto listener = reactor::TcpListener::listen(sched, any_loopback(), [&](const TcpConnectionPtr& c) {
        c->set_data_callback([&](TcpConnection& c, std::string_view d) {
            served += d;
            c.close();
        });
    });
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    int fd = nettest::connect_blocking(listener->address().port());
    nettest::send_all(fd, "ping");
    // Fill every fd below FD_SETSIZE, so the accepted socket lands above it.
    std::vector<int> fillers;
    for (;;) {
        int f = ::dup(0);
        if (f < 0) break;
        fillers.push_back(f);
        if (f >= FD_SETSIZE - 1) break;
    }
    bool done = nettest::run_until(sched, [&] { return !reports.empty() || !served.empty(); }, 5s);
    for (int f : fillers) ::close(f);
    BOOST_REQUIRE(done);
    if (backend == reactor::Backend::select) {
        BOOST_REQUIRE(reports.size() == 1u);
        BOOST_TEST(reports[0].find("FD_SETSIZE") != std::string::npos, reports[0]);
        BOOST_TEST(listener->refused() == 1u);
        BOOST_TEST(nettest::recv_all(fd) == "");  // closed on us
    } else {
        BOOST_TEST(served == "ping");
        BOOST_TEST(listener->accepted() == 1u);
    }
    ::close(fd);
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
    ::setrlimit(RLIMIT_NOFILE, &saved);
}

BOOST_AUTO_TEST_CASE(ipv6_loopback_round_trip) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    reactor::TcpListenerPtr listener;
    try {
        listener = reactor::TcpListener::listen(sched, reactor::Address::loopback_v6(0), [](const TcpConnectionPtr& c) {
            c->set_data_callback([](TcpConnection& c, std::string_view d) { c.write(d); });
        });
    } catch (const std::system_error& e) {
        BOOST_TEST_MESSAGE("no IPv6 loopback here (" << e.what() << "); skipped");
        return;
    }
    BOOST_TEST(listener->address().to_string().starts_with("[::1]:"));
    std::string got;
    reactor::connect(sched, listener->address(), [&](TcpConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        BOOST_TEST(c->peer_address() == listener->address());
        c->set_data_callback([&](TcpConnection& c, std::string_view d) {
            got += d;
            if (got.size() == 4) c.close();
        });
        c->write("six!");
    });
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return got == "six!"; }));
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(water_marks_must_be_ordered) {
    reactor::Scheduler sched;
    reactor::ConnectionOptions bad;
    bad.high_water = 10;
    bad.low_water = 20;
    int fds[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    BOOST_CHECK_THROW(reactor::TcpConnection::adopt(sched, fds[0], bad), std::invalid_argument);
    BOOST_TEST(::fcntl(fds[0], F_GETFD) == -1, "adopt closed the fd it refused");
    auto c = reactor::TcpConnection::adopt(sched, fds[1]);
    BOOST_CHECK_THROW(c->set_water_marks(1, 2), std::invalid_argument);
    c->set_water_marks(2, 1);
    c->abort();
    sched.run();
    BOOST_TEST(sched.empty());
}
