// SPDX-License-Identifier: MIT
// futures::Stream over TLS (reactor::futures_tls, futures/tls/stream.hpp):
// open_connection and start_server with a context, start_tls (STARTTLS), the
// clean close_notify EOF against a truncation, failures carrying OpenSSL's
// text, the Scheduler's end with a TLS stream open, a read deadline on
// virtual time, and curl against a futures TLS server. Real sockets on
// 127.0.0.1 (or a socketpair), on every backend; certificates made in memory.
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/stream.hpp>
#include <futures/tls/stream.hpp>
#include <reactor/testing/virtual_loop.hpp>
#include <reactor/tls/connection.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/fds.hpp"
#include "support/futures_util.hpp"
#include "support/live_heap.hpp"
#include "support/net_util.hpp"
#include "support/outside_program.hpp"
#include "support/tls_fixtures.hpp"

using namespace std::chrono_literals;
namespace tls = reactor::tls;
using futures::Future;
using futures::Step;
using futures::Stream;
using reactor_test::on;
using reactor_test::pki;

namespace {

// Runs the loop until `f` is done (bounded), and returns it.
template <class T>
const Future<T>& wait(reactor::Scheduler& sched, const Future<T>& f) {
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return f.done(); }));
    return f;
}

// The StreamError a failed future holds (a test failure if it holds another).
template <class T>
futures::StreamError tls_error_of(const Future<T>& f) {
    try {
        f.result();
    } catch (const futures::StreamError& e) {
        return e;
    } catch (const std::exception& e) {
        BOOST_FAIL("not a StreamError: " << e.what());
    }
    BOOST_FAIL("the future did not fail");
    throw;  // not reached
}

// Server side: answers each line with "echo: <line>" until a clean EOF.
class LineEcho {
public:
    enum class State { reading, draining };
    explicit LineEcho(Stream stream) : stream_(std::move(stream)) {}

    Step<void> resume() {
        for (;;) {
            switch (state_) {
            case State::reading:
                if (!line_.valid()) return line_ = stream_.read_until("\n");
                try {
                    stream_.write("echo: " + line_.result());
                } catch (const futures::IncompleteReadError& e) {
                    if (e.partial.empty()) return futures::finished;  // the client's close_notify
                    throw;
                }
                line_ = {};
                state_ = State::draining;
                return drain_ = stream_.drain();
            case State::draining:
                drain_.result();
                state_ = State::reading;
                continue;
            }
        }
    }

private:
    Stream stream_;
    State state_ = State::reading;
    Future<std::string> line_;
    Future<void> drain_;
};

// Server side: every byte back (read -> write -> drain), until EOF.
class ByteEcho {
public:
    explicit ByteEcho(Stream stream) : stream_(std::move(stream)) {}
    Step<void> resume() {
        if (read_.valid() && !drain_.valid()) {
            std::string data = read_.result();
            if (data.empty()) return futures::finished;
            stream_.write(data);
            return drain_ = stream_.drain();
        }
        if (drain_.valid()) drain_.result();
        drain_ = {};
        return read_ = stream_.read();
    }

private:
    Stream stream_;
    Future<std::string> read_;
    Future<void> drain_;
};

// Client side, two tasks on one stream: one writes `data` in chunks with a
// drain after each and then write_eof(); the other reads until EOF.
class ChunkWriter {
public:
    ChunkWriter(Stream stream, const std::string& data) : stream_(std::move(stream)), data_(data) {}
    Step<void> resume() {
        if (drain_.valid()) drain_.result();
        if (sent_ == data_.size()) {
            stream_.write_eof();  // close_notify after the data
            return futures::finished;
        }
        const std::size_t n = std::min<std::size_t>(48 * 1024 + 17, data_.size() - sent_);
        if (!stream_.write(std::string_view(data_).substr(sent_, n))) throw std::runtime_error("write refused");
        sent_ += n;
        return drain_ = stream_.drain();
    }

private:
    Stream stream_;
    const std::string& data_;
    std::size_t sent_ = 0;
    Future<void> drain_;
};

class ReadToEof {
public:
    explicit ReadToEof(Stream stream) : stream_(std::move(stream)) {}
    Step<std::string> resume() {
        if (read_.valid()) {
            std::string data = read_.result();
            if (data.empty()) return std::move(got_);
            got_ += data;
        }
        return read_ = stream_.read();
    }

private:
    Stream stream_;
    Future<std::string> read_;
    std::string got_;
};

// Accepts the one client of `silent` and waits for its ClientHello (a
// handshake that has started and that nobody will answer); returns its fd.
reactor_test::Fd accept_hello(reactor::Scheduler& sched, reactor_test::SilentListener& silent) {
    ::fcntl(silent.fd, F_SETFL, ::fcntl(silent.fd, F_GETFL) | O_NONBLOCK);
    int fd = -1;
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] {
        if (fd < 0) fd = ::accept4(silent.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        char hello[5];
        return fd >= 0 && ::recv(fd, hello, sizeof hello, MSG_PEEK) == 5;
    }));
    return reactor_test::Fd(fd);
}

// The process's open fds.
std::size_t open_fds() {
    return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                                  std::filesystem::directory_iterator()));
}

// Whether a nonblocking socket's peer has closed: what it sent is read, then
// the end (EOF, or a reset), not "nothing yet".
bool reads_to_the_end(int fd) {
    char buf[4096];
    for (int i = 0; i < 64; ++i) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
        if (n < 0 && errno != EINTR) return false;
    }
    return false;
}

struct Tls {
    tls::ContextPtr server = reactor_test::server_context();
    tls::ContextPtr client = reactor_test::client_context();
};

// A client's handshake under way against a peer that has read its
// ClientHello and answers nothing: the tests below end it one way each.
struct HandshakeUnderWay {
    reactor::Scheduler sched{on(reactor_test::backend_under_test())};
    reactor_test::SilentListener silent;
    Tls contexts;
    Future<Stream> client =
        futures::open_connection(sched, reactor::Address::loopback_v4(silent.port), contexts.client, "localhost");
    reactor_test::Fd peer = accept_hello(sched, silent);
};

// A TLS stream server whose handler keeps each stream for the test and
// converses until it closes.
struct KeepingServer {
    std::vector<Stream> streams;
    futures::StreamServer server;
    KeepingServer(reactor::Scheduler& sched, tls::ContextPtr context, futures::StreamOptions options = {}) {
        server = futures::start_server(
            sched, reactor_test::any_loopback(),
            [this](Stream s) {
                streams.push_back(s);
                return s.wait_closed();
            },
            options, std::move(context));
    }
};

// A plaintext conversation on 127.0.0.1, before a STARTTLS: a stream server
// that keeps its one client's stream (server_side), and that client.
struct PlaintextPair {
    reactor::Scheduler sched{on(reactor_test::backend_under_test())};
    Tls contexts;
    std::optional<Stream> server_side;
    futures::StreamServer server = futures::start_server(sched, reactor::Address::loopback_v4(0), [this](Stream s) {
        server_side = s;
        return s.wait_closed();
    });
    Stream client = wait(sched, futures::open_connection(sched, server.address())).result();
    PlaintextPair() { BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server_side.has_value(); })); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(echo_of_lines_over_tls_with_both_open_connection_forms) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::Reports reports(sched);
    auto server_options = reactor_test::server_options();
    server_options.alpn = {"echo/1"};
    auto client_options = reactor_test::client_options();
    client_options.alpn = {"echo/1"};
    auto client_context = tls::Context::client(client_options);
    std::vector<Stream> served;
    auto server = futures::start_server(
        sched, reactor::Address::loopback_v4(0),
        [&](Stream s) {
            served.push_back(s);
            BOOST_TEST(s.tls() != nullptr);
            BOOST_TEST(s.tls()->handshake_done());  // the handler sees a finished handshake
            return futures::spawn(sched, LineEcho(s));
        },
        {}, tls::Context::server(server_options));
    const std::uint16_t port = server.address().port();
    // One after the other: the third offers the session the first one got.
    for (int i = 0; i < 3; ++i) {
        BOOST_TEST_CONTEXT("client " << i) {
            Future<Stream> connect =
                i == 1 ? futures::open_connection(sched, "127.0.0.1", port, client_context)  // the IP is the name checked
                       : futures::open_connection(sched, server.address(), client_context, "localhost");
            Stream client = wait(sched, connect).result();
            BOOST_REQUIRE(client.tls() != nullptr);
            BOOST_TEST(client.tls()->handshake_done());
            BOOST_TEST(client.tls()->alpn_protocol() == "echo/1");
            BOOST_TEST(client.tls()->peer_subject().find("CN=localhost") != std::string::npos,
                       client.tls()->peer_subject());
            BOOST_TEST(client.peer_address().port() == port);
            BOOST_TEST(client.tls()->session_reused() == (i == 2));
            for (std::string line : {std::string("one\n"), std::string("two\n"), std::string(5000, 'x') + "\n"}) {
                BOOST_REQUIRE(client.write(line));
                BOOST_TEST(wait(sched, client.read_until("\n")).result() == "echo: " + line);
            }
            // write_eof sends close_notify: the server's read_until ends clean,
            // its conversation finishes and closes: a clean EOF here too.
            client.write_eof();
            BOOST_TEST(wait(sched, client.read()).result() == "");
            BOOST_TEST(client.at_eof());
            wait(sched, client.wait_closed()).result();
        }
    }
    BOOST_TEST(served.size() == 3u);
    BOOST_TEST(served.at(2).tls()->session_reused());
    BOOST_TEST(reports.size() == 0u);
    server.close();
    served.clear();
    sched.run();
    CHECK_EMPTY(sched);
}

// Tried as a new user would (issue 46): a TLS client chain that writes,
// closes and returns wait_closed() drops its last handle as it returns. The
// wait keeps the stream until its close_notify exchange is over and
// completes; the server reads the line, then a clean end of input.
BOOST_AUTO_TEST_CASE(close_then_wait_closed_at_the_end_of_a_tls_chain_completes) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::Reports reports(sched);
    Tls tls;
    KeepingServer keeping(sched, tls.server);
    Future<void> done = futures::open_connection(sched, keeping.server.address(), tls.client, "localhost")
                            .then([](Stream s) {
                                s.write("bye\n");
                                s.close();
                                return s.wait_closed();
                            });
    wait(sched, done);
    BOOST_TEST((done.status() == futures::Status::done));
    BOOST_REQUIRE(keeping.streams.size() == 1u);
    BOOST_TEST(wait(sched, keeping.streams[0].read_until("\n")).result() == "bye\n");
    BOOST_TEST(wait(sched, keeping.streams[0].read()).result() == "");
    keeping.streams[0].close();  // still open for writing after the peer's close_notify
    wait(sched, keeping.streams[0].wait_closed()).result();
    BOOST_TEST(reports.size() == 0u);
    keeping.server.close();
    keeping.streams.clear();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(one_mebibyte_each_way_with_drain) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    futures::StreamOptions options;
    options.connection.high_water = 32 * 1024;  // drain() waits often
    options.connection.low_water = 8 * 1024;
    auto server = futures::start_server(
        sched, reactor::Address::loopback_v4(0), [&](Stream s) { return futures::spawn(sched, ByteEcho(s)); }, options,
        reactor_test::server_context());
    Stream client =
        wait(sched, futures::open_connection(sched, server.address(), reactor_test::client_context(), "localhost", options))
            .result();
    const std::string data = reactor_test::random_bytes(1 << 20, 23);
    Future<void> writer = futures::spawn(sched, ChunkWriter(client, data));
    Future<std::string> reader = futures::spawn(sched, ReadToEof(client));
    wait(sched, writer).result();
    const std::string& echoed = wait(sched, reader).result();
    BOOST_TEST(echoed.size() == data.size());
    BOOST_TEST((echoed == data));
    wait(sched, client.wait_closed()).result();
    server.close();
    client = {};
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_wrong_server_name_fails_open_connection_with_openssls_text_and_the_server_goes_on) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::Reports reports(sched);
    Tls contexts;
    int handled = 0;
    auto server = futures::start_server(
        sched, reactor::Address::loopback_v4(0),
        [&](Stream s) {
            ++handled;
            return futures::spawn(sched, LineEcho(s));
        },
        {}, contexts.server);
    // The name is only a string: never resolved.
    Future<Stream> wrong = futures::open_connection(sched, server.address(), contexts.client, "alt.test");
    wait(sched, wrong);
    const futures::StreamError e = tls_error_of(wrong);
    BOOST_TEST(e.end.kind == reactor::EndKind::handshake_failed);
    BOOST_TEST(e.code().value() == EPROTO);
    BOOST_TEST(std::string(e.what()).find("stream: TLS handshake failed: ") == 0u, e.what());
    BOOST_TEST(std::string(e.what()).find("certificate verify failed") != std::string::npos, e.what());
    BOOST_TEST(e.end.detail.find("hostname mismatch") != std::string::npos, e.end.detail);
    // A plaintext client to the TLS port: closed, never handed to the handler.
    int plain = reactor_test::connect_blocking(server.address().port());
    BOOST_REQUIRE(reactor_test::send_all(plain, "GET / HTTP/1.0\r\n\r\n"));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.accepted() == 2 && server.active() == 0; }));
    ::close(plain);
    // The server goes on: a right client is served.
    Stream good = wait(sched, futures::open_connection(sched, server.address(), contexts.client, "localhost")).result();
    good.write("still here\n");
    BOOST_TEST(wait(sched, good.read_until("\n")).result() == "echo: still here\n");
    BOOST_TEST(handled == 1);
    // The refused handshakes are nobody's error: nothing was reported.
    BOOST_TEST(reports.size() == 0u);
    good.close();
    wait(sched, good.wait_closed()).result();
    server.close();
    good = {};
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_server_that_speaks_no_tls_fails_open_connection) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    // A plaintext server that greets in clear text.
    auto server = futures::start_server(sched, reactor::Address::loopback_v4(0), [](Stream s) {
        s.write("220 plain text server, no TLS here\r\n");
        return s.wait_closed();
    });
    Future<Stream> f = futures::open_connection(sched, server.address(), reactor_test::client_context(), "localhost");
    wait(sched, f);
    const futures::StreamError e = tls_error_of(f);
    BOOST_TEST(e.end.kind == reactor::EndKind::handshake_failed, e.what());
    BOOST_TEST(!e.end.detail.empty());
    server.close();
    server.close_clients();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(cancelling_open_connection_mid_handshake_aborts_the_connection) {
    HandshakeUnderWay h;
    h.client.cancel();
    // The peer sees the connection end (after the ClientHello it already has).
    char buf[4096];
    BOOST_REQUIRE(reactor_test::run_until(h.sched, [&] {
        const ssize_t n = ::recv(h.peer.get(), buf, sizeof buf, MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    }));
    BOOST_TEST(h.client.cancelled());
    h.sched.run();  // nothing is left: not the handshake timeout's 60 s
    CHECK_EMPTY(h.sched);
}

// Issue 48: the socket under the handshake is reset (the peer read the
// ClientHello, then closed with SO_LINGER 0). open_connection fails with the
// reset, ECONNRESET, as over a plain connection (asyncio's
// ConnectionResetError), not with a TLS failure (EPROTO).
BOOST_AUTO_TEST_CASE(a_reset_under_the_handshake_fails_open_connection_with_econnreset) {
    HandshakeUnderWay h;
    const linger abortive{1, 0};
    BOOST_REQUIRE(::setsockopt(h.peer.get(), SOL_SOCKET, SO_LINGER, &abortive, sizeof abortive) == 0);
    h.peer.close();
    wait(h.sched, h.client);
    const futures::StreamError e = tls_error_of(h.client);
    BOOST_TEST(e.end.kind == reactor::EndKind::reset, e.end.to_string());
    BOOST_TEST((e.code() == std::errc::connection_reset), e.what());
    h.sched.run();
    CHECK_EMPTY(h.sched);
}

BOOST_FIXTURE_TEST_CASE(start_tls_upgrades_a_plaintext_conversation_in_place, PlaintextPair) {
    Stream& srv = *server_side;
    BOOST_TEST(client.tls() == nullptr);
    // The plaintext part (SMTP-like): a greeting, then STARTTLS and its go-ahead.
    client.write("EHLO client\n");
    BOOST_TEST(wait(sched, srv.read_until("\n")).result() == "EHLO client\n");
    srv.write("250 STARTTLS\n");
    BOOST_TEST(wait(sched, client.read_until("\n")).result() == "250 STARTTLS\n");
    client.write("STARTTLS\n");
    BOOST_TEST(wait(sched, srv.read_until("\n")).result() == "STARTTLS\n");
    srv.write("220 go ahead\n");
    Future<void> server_handshake = futures::start_tls(srv, contexts.server);
    BOOST_TEST(srv.tls() != nullptr);
    // A read issued during the handshake is served with the decrypted bytes.
    Future<std::string> secret = srv.read_until("\n");
    BOOST_TEST(wait(sched, client.read_until("\n")).result() == "220 go ahead\n");
    Future<void> client_handshake = futures::start_tls(client, contexts.client, "localhost");
    BOOST_REQUIRE(client.tls() != nullptr);
    client.write("secret over TLS\n");  // kept until the handshake is done
    wait(sched, client_handshake).result();
    wait(sched, server_handshake).result();
    BOOST_TEST(client.tls()->peer_subject().find("CN=localhost") != std::string::npos);
    BOOST_TEST(wait(sched, secret).result() == "secret over TLS\n");
    srv.write("and back\n");
    BOOST_TEST(wait(sched, client.read_until("\n")).result() == "and back\n");
    // The addresses and deadlines are still the socket's.
    BOOST_TEST(client.peer_address().port() == server.address().port());
    // Misuse fails at once and leaves the stream as it was.
    BOOST_CHECK_THROW((void)futures::start_tls(client, contexts.client, "localhost"), futures::InvalidStateError);
    client.write("still fine\n");
    BOOST_TEST(wait(sched, srv.read_until("\n")).result() == "still fine\n");
    client.close();
    BOOST_TEST(wait(sched, srv.read()).result() == "");  // close() sent close_notify: a clean EOF
    wait(sched, client.wait_closed()).result();
    srv.close();
    server.close();
    server_side.reset();
    client = {};
    sched.run();
    CHECK_EMPTY(sched);
}

// start_tls waits with the TLS connection's handshake waiter: the handshake
// callback stays the user's, and setting one during start_tls leaves the
// wait whole; both run once the handshake is done.
BOOST_FIXTURE_TEST_CASE(a_handshake_callback_set_during_start_tls_runs_and_start_tls_still_completes, PlaintextPair) {
    Stream& srv = *server_side;
    Future<void> server_handshake = futures::start_tls(srv, contexts.server);
    Future<void> client_handshake = futures::start_tls(client, contexts.client, "localhost");
    int handshakes_seen = 0;
    client.tls()->set_handshake_callback([&](tls::Connection& c) {
        BOOST_TEST(c.handshake_done());
        BOOST_TEST(client_handshake.done());  // the waiter ran first
        ++handshakes_seen;
    });
    srv.tls()->set_handshake_callback(nullptr);  // cleared: the server's wait is whole too
    BOOST_TEST(!client_handshake.done());
    wait(sched, client_handshake).result();
    wait(sched, server_handshake).result();
    BOOST_TEST(handshakes_seen == 1);
    client.write("encrypted\n");
    BOOST_TEST(wait(sched, srv.read_until("\n")).result() == "encrypted\n");
    // Too late for a waiter: the handshake is done.
    BOOST_CHECK_THROW(client.tls()->set_handshake_waiter([](tls::Connection&) {}), std::logic_error);
    client.close();
    wait(sched, client.wait_closed()).result();
    srv.close();
    server.close();
    server_side.reset();
    client = {};
    sched.run();
    BOOST_TEST(handshakes_seen == 1);
    CHECK_EMPTY(sched);
}

// A TLS stream server's handshakes carry both start_tls's waiter and, under
// max_handshakes, the limit's token: silent clients beyond the limit are
// ended oldest first (their waits fail quietly: no handler runs), and a
// real client is served and echoed.
BOOST_AUTO_TEST_CASE(a_tls_stream_server_with_max_handshakes_ends_the_oldest_silent_client_and_serves_a_real_one) {
    constexpr std::size_t kMax = 2;
    constexpr std::size_t kSilent = 5;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::Reports reports(sched);
    Tls contexts;
    std::vector<Stream> served;
    auto server = futures::start_server(
        sched, reactor::Address::loopback_v4(0),
        [&](Stream s) {
            served.push_back(s);
            return futures::spawn(sched, LineEcho(s));
        },
        {}, contexts.server, tls::Options{.max_handshakes = kMax});
    std::vector<reactor_test::Fd> silent;  // connect, then never send a byte
    for (std::size_t i = 0; i < kSilent; ++i) {
        silent.emplace_back(reactor_test::connect_blocking(server.address().port()));
        BOOST_REQUIRE(silent.back().get() >= 0);
    }
    const auto ended = [&](std::size_t i) {
        char c;
        const ssize_t n = ::recv(silent[i].get(), &c, 1, MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    };
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] {
        std::size_t n = 0;
        for (std::size_t i = 0; i < kSilent; ++i) n += ended(i);
        return n == kSilent - kMax;
    }));
    for (std::size_t i = 0; i < kSilent; ++i) BOOST_TEST(ended(i) == (i < kSilent - kMax), "silent client " << i);
    Stream client = wait(sched, futures::open_connection(sched, server.address(), contexts.client, "localhost")).result();
    BOOST_REQUIRE(client.write("over the limit\n"));
    BOOST_TEST(wait(sched, client.read_until("\n")).result() == "echo: over the limit\n");
    BOOST_TEST(served.size() == 1u);
    BOOST_TEST(ended(kSilent - kMax));  // the oldest still waiting made room for it
    BOOST_TEST(reports.size() == 0u);  // a handshake that never finished is no error of the server's
    client.close();
    wait(sched, client.wait_closed()).result();
    server.close();
    silent.clear();
    served.clear();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_FIXTURE_TEST_CASE(start_tls_refuses_a_stream_holding_unread_bytes, PlaintextPair) {
    client.write("STARTTLS\nnot yet\n");  // a peer that speaks before its turn
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server_side->buffered() == 17u; }));
    BOOST_CHECK_THROW((void)futures::start_tls(*server_side, contexts.server), futures::InvalidStateError);
    BOOST_TEST(server_side->tls() == nullptr);
    // Still a working plaintext stream.
    BOOST_TEST(wait(sched, server_side->read_until("\n")).result() == "STARTTLS\n");
    BOOST_TEST(wait(sched, server_side->read_until("\n")).result() == "not yet\n");
    // No context, or one of the wrong role: refused at once.
    BOOST_CHECK_THROW((void)futures::start_tls(client, nullptr), std::invalid_argument);
    BOOST_CHECK_THROW((void)futures::open_connection(sched, server.address(), contexts.server, "localhost"),
                      std::invalid_argument);
    client.close();
    wait(sched, client.wait_closed()).result();
    server.close();
    server.close_clients();
    server_side.reset();
    client = {};
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(close_notify_is_a_clean_eof_and_a_bare_tcp_eof_is_a_truncation) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    Tls contexts;
    KeepingServer server(sched, contexts.server);
    // Clean: the client's write_eof() sends close_notify.
    {
        Stream client = wait(sched, futures::open_connection(sched, server.server.address(), contexts.client, "localhost"))
                            .result();
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.streams.size() == 1; }));
        Stream srv = server.streams.back();
        client.write("last words");
        client.write_eof();
        BOOST_TEST(wait(sched, srv.read(100)).result() == "last words");
        BOOST_TEST(wait(sched, srv.read()).result() == "");
        BOOST_TEST(srv.at_eof());
        Future<std::string> line = srv.read_until("\n");
        BOOST_CHECK_THROW(wait(sched, line).result(), futures::IncompleteReadError);
        // Still open for writing after the peer's close_notify.
        BOOST_TEST(srv.write("goodbye\n"));
        BOOST_TEST(wait(sched, client.read_until("\n")).result() == "goodbye\n");
        srv.close();
        BOOST_TEST(wait(sched, client.read()).result() == "");
        wait(sched, client.wait_closed()).result();
    }
    // Truncated: the client's TCP sending side shut without close_notify.
    {
        Stream client = wait(sched, futures::open_connection(sched, server.server.address(), contexts.client, "localhost"))
                            .result();
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.streams.size() == 2; }));
        Stream srv = server.streams.back();
        Future<std::string> line = srv.read_until("\n");
        client.write("cut sho");
        wait(sched, client.drain()).result();
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return srv.buffered() == 7u; }));
        BOOST_REQUIRE(::shutdown(client.tls()->transport().fd(), SHUT_WR) == 0);
        wait(sched, line);
        const futures::StreamError e = tls_error_of(line);
        BOOST_TEST(e.end.kind == reactor::EndKind::truncated);
        BOOST_TEST(e.code().value() == EPROTO);
        BOOST_TEST(std::string(e.what()).find("truncated") != std::string::npos, e.what());
        // The bytes that did arrive are still read, then the error again.
        BOOST_TEST(wait(sched, srv.read()).result() == "cut sho");
        BOOST_CHECK_THROW(wait(sched, srv.read()).result(), futures::StreamError);
        BOOST_CHECK_THROW(wait(sched, srv.drain()).result(), futures::StreamError);
        client.abort();
        wait(sched, client.wait_closed()).result();
    }
    server.server.close();
    server.streams.clear();
    sched.run();
    CHECK_EMPTY(sched);
}

// issue 47: read_all works unchanged over TLS: to the close_notify, within
// its limit (LimitOverrunError beyond, the bytes kept), and a truncation (a
// bare TCP EOF) fails it with the TLS error.
BOOST_AUTO_TEST_CASE(read_all_over_tls_to_the_close_notify_within_a_limit) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    Tls contexts;
    KeepingServer server(sched, contexts.server);
    auto connect = [&] {
        Stream client = wait(sched, futures::open_connection(sched, server.server.address(), contexts.client, "localhost"))
                            .result();
        const std::size_t n = server.streams.size();
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.streams.size() == n + 1; }));
        return client;
    };
    {  // Clean: everything up to the client's close_notify.
        Stream client = connect();
        Stream srv = server.streams.back();
        Future<std::string> all = srv.read_all(100000);
        const std::string body = std::string(40000, 'a') + "end";  // several TLS records
        client.write(body);
        wait(sched, client.drain()).result();
        client.write_eof();
        BOOST_TEST(wait(sched, all).result() == body);
        srv.close();
        wait(sched, client.wait_closed()).result();
    }
    {  // Beyond the limit: LimitOverrunError, the bytes stay.
        Stream client = connect();
        Stream srv = server.streams.back();
        Future<std::string> all = srv.read_all(10);
        client.write("eleven byte");
        wait(sched, all);
        BOOST_CHECK_THROW(all.result(), futures::LimitOverrunError);
        BOOST_TEST(srv.buffered() == 11u);
        BOOST_TEST(wait(sched, srv.read_exactly(11)).result() == "eleven byte");
        srv.close();
        client.close();
        wait(sched, client.wait_closed()).result();
    }
    {  // Truncated (no close_notify): the TLS error.
        Stream client = connect();
        Stream srv = server.streams.back();
        Future<std::string> all = srv.read_all(100);
        client.write("cut");
        wait(sched, client.drain()).result();
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return srv.buffered() == 3u; }));
        BOOST_REQUIRE(::shutdown(client.tls()->transport().fd(), SHUT_WR) == 0);
        wait(sched, all);
        BOOST_TEST(tls_error_of(all).end.kind == reactor::EndKind::truncated);
        client.abort();
        wait(sched, client.wait_closed()).result();
    }
    server.server.close();
    server.streams.clear();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(garbage_after_the_handshake_fails_the_pending_read_with_openssls_text) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    Tls contexts;
    KeepingServer server(sched, contexts.server);
    Stream client =
        wait(sched, futures::open_connection(sched, server.server.address(), contexts.client, "localhost")).result();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.streams.size() == 1; }));
    Stream srv = server.streams.back();
    Future<std::string> pending = srv.read_until("\n");
    // Bytes that are no TLS record, straight onto the client's socket.
    BOOST_REQUIRE(reactor_test::send_all(client.tls()->transport().fd(), "this is not a TLS record\r\n\r\n"));
    wait(sched, pending);
    const futures::StreamError e = tls_error_of(pending);
    BOOST_TEST(e.end.kind == reactor::EndKind::tls_error, e.what());
    BOOST_TEST(!e.end.detail.empty());
    BOOST_TEST(std::string(e.what()).find(e.end.detail) != std::string::npos, e.what());
    wait(sched, srv.wait_closed()).result();
    // The client sees the end of the connection (no close_notify came).
    BOOST_CHECK_THROW(wait(sched, client.read()).result(), std::system_error);
    server.server.close();
    server.streams.clear();
    srv = {};
    client = {};
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(scheduler_close_with_tls_streams_open_cancels_their_reads) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    Tls contexts;
    KeepingServer server(sched, contexts.server);
    Stream client =
        wait(sched, futures::open_connection(sched, server.server.address(), contexts.client, "localhost")).result();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.streams.size() == 1; }));
    Future<std::string> pending = client.read();
    Future<std::string> server_pending = server.streams.back().read();
    // A second client whose handshake will not finish: its server never answers.
    reactor_test::SilentListener silent;
    Future<Stream> stuck = futures::open_connection(sched, reactor::Address::loopback_v4(silent.port), contexts.client,
                                                    "localhost");
    reactor_test::Fd peer = accept_hello(sched, silent);
    (void)sched.close();
    BOOST_TEST(pending.cancelled());
    BOOST_TEST(server_pending.cancelled());
    BOOST_TEST(stuck.cancelled());
    BOOST_TEST(client.is_closing());
    server.streams.clear();
    client = {};
    CHECK_EMPTY(sched);
}

// Issue 47's key-value server over TLS: the server's scope holds each
// conversation (the handshake, then the handler's chain), so serve_until
// returns only after the handlers' catch_error and finally ran on the idle
// timeout that fired during the drain, and nothing is reported.
BOOST_AUTO_TEST_CASE(tls_serve_until_returns_after_the_handlers_catch_error_and_finally_ran) {
    std::vector<std::string> reports;
    int caught = 0;
    int finished = 0;
    {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(reactor::describe(ctx)); });
        Tls contexts;
        futures::StreamOptions options;
        options.connection.idle_timeout = 100ms;
        auto server = futures::start_server(
            sched, reactor_test::any_loopback(),
            [&](Stream s) {
                return s.read_until("\n")
                    .then([s](std::string request) mutable { s.write("VALUE " + request); })
                    .catch_error([&](const std::system_error&) { ++caught; })
                    .finally([&] { ++finished; });
            },
            options, contexts.server);
        std::vector<Stream> clients;
        for (int i = 0; i < 2; ++i)
            clients.push_back(
                wait(sched, futures::open_connection(sched, server.address(), contexts.client, "localhost")).result());
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.active() == 2; }));
        Future<void> stop(sched);
        stop.set_result();
        Future<void> done = server.serve_until(stop, 10s);  // the idle timeout comes first
        BOOST_REQUIRE(futures::run_until(sched, done, 20s));
        BOOST_TEST(!done.failed());
        BOOST_TEST(caught == 2);
        BOOST_TEST(finished == 2);
        for (Stream& c : clients) c.abort();
        clients.clear();
    }
    BOOST_TEST(caught == 2);
    BOOST_TEST(finished == 2);
    for (const std::string& r : reports) BOOST_TEST_MESSAGE(r);
    BOOST_TEST(reports.empty());
}

// ~Scheduler without close(): what the loop abandons breaks the promises,
// the handshake's too (its continuations hold the stream: without that, a
// cycle that LeakSanitizer reports). Leaks nothing: the client's socket is
// closed (the peer reads its end), no fd the attempt opened stays open, and
// every heap block it allocated is freed. Counted around a second attempt:
// the first fills what lives as long as the program (OpenSSL's tables, the
// futures' state pool).
BOOST_AUTO_TEST_CASE(a_scheduler_destroyed_mid_handshake_leaks_nothing) {
    reactor_test::SilentListener silent;
    Tls contexts;
    // The accepted peer of a client left mid-handshake by its loop's end.
    auto attempt = [&] {
        std::optional<reactor::Scheduler> sched(std::in_place, on(reactor_test::backend_under_test()));
        Future<Stream> stuck = futures::open_connection(*sched, reactor::Address::loopback_v4(silent.port),
                                                        contexts.client, "localhost");
        reactor_test::Fd peer = accept_hello(*sched, silent);
        stuck = {};
        sched.reset();
        return peer;
    };
    reactor_test::Fd first = attempt();
    BOOST_TEST(reads_to_the_end(first.get()));
    first = reactor_test::Fd();
    const std::size_t fds_before = open_fds();
    const long blocks_before = reactor_test::live_heap_blocks.load();
    reactor_test::Fd peer = attempt();
    BOOST_TEST(reactor_test::live_heap_blocks.load() == blocks_before);
    BOOST_TEST(open_fds() == fds_before + 1);  // the peer's
    BOOST_TEST(reads_to_the_end(peer.get()));
}

BOOST_AUTO_TEST_CASE(read_timeout_under_tls_on_virtual_time) {
    reactor::testing::VirtualLoop loop(reactor_test::backend_under_test());
    reactor_test::SocketPair sockets;
    Tls contexts;
    futures::StreamOptions options;
    options.connection.read_timeout = 90s;
    auto adopt = [&](reactor_test::Fd& fd, const futures::StreamOptions& o) {
        Stream s = Stream::adopt(loop.sched, ::dup(fd.get()), o);
        fd = reactor_test::Fd();
        return s;
    };
    Stream server = adopt(sockets.a, options);
    Stream client = adopt(sockets.b, {});
    Future<void> server_handshake = futures::start_tls(server, contexts.server);
    Future<void> client_handshake = futures::start_tls(client, contexts.client, "localhost");
    auto run_until = [&](auto done) {
        for (int i = 0; i < 100000 && !done(); ++i) loop.sched.run_once();
        BOOST_REQUIRE(done());
    };
    run_until([&] { return server_handshake.done() && client_handshake.done(); });
    server_handshake.result();
    client_handshake.result();
    BOOST_TEST(loop.clock.elapsed() == 0s);
    // A line at 30 s pushes the deadline to 120 s.
    loop.sched.call_later(30s, [&] { client.write("tick\n"); });
    Future<std::string> first = server.read_until("\n");
    run_until([&] { return first.done(); });
    BOOST_TEST(first.result() == "tick\n");
    BOOST_TEST(loop.clock.elapsed() == 30s);
    Future<std::string> second = server.read_until("\n");
    Future<std::string> client_read = client.read();
    run_until([&] { return second.done(); });
    BOOST_TEST(loop.clock.elapsed() == 120s);
    const std::exception_ptr error = reactor_test::error_of(second);
    BOOST_TEST(reactor_test::what(error) ==
               "stream: read_timeout passed (nothing received for that long): Connection timed out");
    try {
        std::rethrow_exception(error);
    } catch (const std::system_error& e) {
        BOOST_TEST(e.code().value() == ETIMEDOUT);
    }
    // The server's socket closed without close_notify: a truncation to the client.
    run_until([&] { return client_read.done(); });
    BOOST_TEST(tls_error_of(client_read).end.kind == reactor::EndKind::truncated);
    // The handshake timeout, on the same clock: a peer that never answers.
    reactor_test::SocketPair silent;
    Stream lonely = adopt(silent.a, {});
    const auto started = loop.clock.now();
    Future<void> never = futures::start_tls(lonely, contexts.client, "localhost", tls::Options{.handshake_timeout = 7s});
    run_until([&] { return never.done(); });
    BOOST_TEST((loop.clock.now() - started == 7s));
    const futures::StreamError e = tls_error_of(never);
    BOOST_TEST(e.end.kind == reactor::EndKind::handshake_timeout);
    BOOST_TEST(e.code().value() == ETIMEDOUT);
    server = {};
    client = {};
    lonely = {};
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(curl_fetches_from_a_futures_tls_server, *reactor_test::needs_program("curl")) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::TempDir dir;
    const std::string ca = dir.write("ca.pem", pki().ca.certificate_pem());
    auto options = reactor_test::server_options();
    options.alpn = {"http/1.1"};
    auto server = futures::start_server(
        sched, reactor::Address::loopback_v4(0),
        [](Stream s) {
            return s.read_until("\r\n\r\n").then([s](std::string request) mutable {
                const std::string body = "hello from a futures TLS stream\n";
                s.write(fmt::format("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", body.size(),
                                    request.starts_with("GET /page ") ? body : std::string(body.size(), '?')));
                return s.drain();
            });
        },
        {}, tls::Context::server(options));
    const std::string url = "https://localhost:" + std::to_string(server.address().port()) + "/page";
    reactor_test::OutsideProgram curl(sched, "curl",
                                      {"-sS", "--noproxy", "*", "--max-time", "20", "--resolve",
                                       "localhost:" + std::to_string(server.address().port()) + ":127.0.0.1",
                                       "--cacert", ca, url});
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return curl.output_closed() && server.active() == 0; }, 30s));
    BOOST_TEST(curl.wait(10s) == 0, curl.output());
    BOOST_TEST(curl.output() == "hello from a futures TLS stream\n");
    server.close();
    sched.run();
    CHECK_EMPTY(sched);
}
