// SPDX-License-Identifier: MIT
// futures streams (open_connection, start_server, read*, write, drain, close)
// over real sockets on 127.0.0.1, on every backend. Conversations are
// hand-written state machines run as tasks, as the library intends.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/stream.hpp>

#include "support/backends.hpp"
#include "support/fds.hpp"
#include "support/name_resolution.hpp"
#include "support/net_util.hpp"

using namespace std::chrono_literals;
using futures::Future;
using futures::Step;
using futures::Stream;

namespace stream_test {

using reactor_test::on;

// Server side: echo until EOF (read -> write -> drain -> read ...).
class EchoSession {
public:
    enum class State { reading, draining };
    explicit EchoSession(Stream stream) : stream_(std::move(stream)) {}

    Step<void> resume() {
        for (;;) {
            switch (state_) {
            case State::reading:
                if (read_.valid()) {
                    std::string data = read_.result();
                    if (data.empty()) return futures::finished;  // EOF: the server closes the stream
                    stream_.write(data);
                    state_ = State::draining;
                    return drain_ = stream_.drain();
                }
                return read_ = stream_.read();
            case State::draining:
                drain_.result();
                state_ = State::reading;
                return read_ = stream_.read();
            }
        }
    }

private:
    Stream stream_;
    State state_ = State::reading;
    Future<std::string> read_;
    Future<void> drain_;
};

// Client side: connect, send `count` random messages, read each echo with
// read_exactly and compare, then close. Returns the number verified.
class EchoClient {
public:
    enum class State { connecting, sending, checking, closing };
    EchoClient(reactor::Scheduler& sched, reactor::Address server, int count, std::uint32_t seed)
        : sched_(sched), server_(server), count_(count), rng_(seed) {}

    Step<int> resume() {
        for (;;) {
            switch (state_) {
            case State::connecting:
                if (!connect_.valid()) return connect_ = futures::open_connection(sched_, server_);
                stream_ = connect_.result();
                state_ = State::sending;
                continue;
            case State::sending:
                if (verified_ == count_) {
                    stream_.close();
                    state_ = State::closing;
                    return closed_ = stream_.wait_closed();
                }
                sent_ = reactor_test::random_bytes(1 + rng_() % 3000, rng_());
                stream_.write(sent_);
                state_ = State::checking;
                return echo_ = stream_.read_exactly(sent_.size());
            case State::checking:
                if (echo_.result() != sent_) throw std::runtime_error("echo differs");
                ++verified_;
                state_ = State::sending;
                continue;
            case State::closing:
                closed_.result();
                return verified_;
            }
        }
    }

private:
    reactor::Scheduler& sched_;
    reactor::Address server_;
    int count_;
    std::mt19937 rng_;
    State state_ = State::connecting;
    Future<Stream> connect_;
    Stream stream_;
    std::string sent_;
    Future<std::string> echo_;
    Future<void> closed_;
    int verified_ = 0;
};

futures::StreamServer echo_server(reactor::Scheduler& sched, const reactor::Address& where = reactor::Address::loopback_v4(0)) {
    return futures::start_server(sched, where, [&sched](Stream s) { return futures::spawn(sched, EchoSession(std::move(s))); });
}

// A raw peer connected to a stream server: returns the peer fd once the
// server has the stream (set by the handler).
int accept_one(reactor::Scheduler& sched, futures::StreamServer& server, Stream& out) {
    int fd = reactor_test::connect_blocking(server.address().port());
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return out.valid(); }));
    return fd;
}

}  // namespace stream_test

using namespace stream_test;

BOOST_AUTO_TEST_CASE(echo_through_streams_with_state_machine_tasks) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    auto server = echo_server(sched);
    std::vector<Future<int>> clients;
    for (int i = 0; i < 20; ++i) clients.push_back(futures::spawn(sched, EchoClient(sched, server.address(), 50, 100 + i)));
    auto all = futures::run_until_complete(sched, futures::when_all(clients));
    for (int n : all) BOOST_TEST(n == 50);
    BOOST_TEST(server.accepted() == 20u);
    server.close();
    sched.run();  // the sessions see EOF and end; the server closes their streams
    BOOST_TEST(server.active() == 0u);
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(read_exactly_and_read_until_with_eof_and_limit) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    Stream stream;
    futures::StreamOptions opt;
    opt.limit = 16;
    auto server = futures::start_server(
        sched, reactor::Address::loopback_v4(0),
        [&](Stream s) {
            stream = s;
            return s.wait_closed();  // the conversation is driven by hand below
        },
        opt);
    int fd = accept_one(sched, server, stream);

    reactor_test::send_all(fd, "line one\nline two\r\nhead");
    BOOST_TEST(futures::run_until_complete(sched, stream.read_until()) == "line one\n");
    BOOST_TEST(futures::run_until_complete(sched, stream.read_until("\r\n")) == "line two\r\n");
    BOOST_TEST(futures::run_until_complete(sched, stream.read_exactly(4)) == "head");
    BOOST_TEST(futures::run_until_complete(sched, stream.read_exactly(0)) == "");

    // A delimiter split across two arrivals is still found.
    auto split = stream.read_until("--");
    reactor_test::send_all(fd, "ab-");
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return stream.buffered() == 3; }));
    BOOST_TEST(!split.done());
    reactor_test::send_all(fd, "-cd");
    BOOST_TEST(futures::run_until_complete(sched, split) == "ab--");

    // Longer than the limit (16) without a delimiter: LimitOverrunError, and
    // the bytes stay in the buffer.
    reactor_test::send_all(fd, std::string(20, 'x'));
    auto over = stream.read_until();
    BOOST_CHECK_THROW(futures::run_until_complete(sched, over), futures::LimitOverrunError);
    BOOST_TEST(futures::run_until_complete(sched, stream.read_exactly(22)) == "cd" + std::string(20, 'x'));

    // EOF in the middle: IncompleteReadError carries what there was.
    reactor_test::send_all(fd, "tail");
    ::shutdown(fd, SHUT_WR);
    try {
        futures::run_until_complete(sched, stream.read_exactly(10));
        BOOST_FAIL("read_exactly past EOF must fail");
    } catch (const futures::IncompleteReadError& e) {
        BOOST_TEST(e.partial == "tail");
        BOOST_TEST(e.expected.value() == 10u);
    }
    BOOST_TEST(stream.at_eof());
    BOOST_TEST(futures::run_until_complete(sched, stream.read()) == "");  // EOF reads as ""
    BOOST_CHECK_THROW(futures::run_until_complete(sched, stream.read_until()), futures::IncompleteReadError);

    // The stream can still write after the peer's EOF (half-close).
    BOOST_TEST(stream.write("bye"));
    stream.close();
    futures::run_until_complete(sched, stream.wait_closed());
    BOOST_TEST(reactor_test::recv_all(fd) == "bye");
    ::close(fd);
    server.close();
    stream = Stream();
    sched.run();
    BOOST_TEST(sched.empty());
}

// issue 47: read_all reads to the end of input (asyncio's read(-1)) within
// a limit: what is buffered and what arrives, "" at an end with nothing; a
// LimitOverrunError once more than the limit waits (the bytes stay); the
// connection's error at a reset.
BOOST_AUTO_TEST_CASE(read_all_to_the_end_within_a_limit_and_at_a_reset) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    std::vector<Stream> streams;
    futures::StreamOptions opt;
    opt.limit = 16;
    auto server = futures::start_server(
        sched, reactor::Address::loopback_v4(0),
        [&](Stream s) {
            streams.push_back(s);
            return s.wait_closed();  // driven by hand below
        },
        opt);
    auto accept_next = [&] {
        const std::size_t before = streams.size();
        int fd = reactor_test::connect_blocking(server.address().port());
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return streams.size() > before; }));
        return fd;
    };

    {  // To the end: the bytes already buffered, then those that arrive, then EOF.
        int fd = accept_next();
        Stream& s = streams.back();
        reactor_test::send_all(fd, "head ");
        BOOST_TEST(futures::run_until_complete(sched, s.read_exactly(2)) == "he");
        Future<std::string> all = s.read_all(100);
        reactor_test::send_all(fd, "and the rest, longer than the stream's limit");
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return s.buffered() > 16; }));
        BOOST_TEST(!all.done());  // only the end completes it
        ::shutdown(fd, SHUT_WR);
        BOOST_TEST(futures::run_until_complete(sched, all) == "ad and the rest, longer than the stream's limit");
        BOOST_TEST(s.at_eof());
        BOOST_TEST(futures::run_until_complete(sched, s.read_all()) == "");  // at the end: ""
        s.close();
        ::close(fd);
    }
    {  // Beyond the limit before the end: LimitOverrunError, and the bytes stay.
        int fd = accept_next();
        Stream& s = streams.back();
        Future<std::string> all = s.read_all();  // the stream's limit: 16
        reactor_test::send_all(fd, std::string(17, 'x'));
        try {
            futures::run_until_complete(sched, all);
            BOOST_FAIL("read_all past its limit must fail");
        } catch (const futures::LimitOverrunError& e) {
            BOOST_TEST(e.consumed == 17u);
        }
        BOOST_TEST(s.buffered() == 17u);
        BOOST_TEST(futures::run_until_complete(sched, s.read_exactly(17)) == std::string(17, 'x'));
        reactor_test::send_all(fd, "end");
        ::shutdown(fd, SHUT_WR);
        BOOST_TEST(futures::run_until_complete(sched, s.read_all(3)) == "end");  // exactly the limit: fine
        s.close();
        ::close(fd);
    }
    {  // A reset before the end: the connection's error.
        int fd = accept_next();
        Stream& s = streams.back();
        Future<std::string> all = s.read_all(1000);
        reactor_test::send_all(fd, "some");
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return s.buffered() == 4; }));
        linger lg{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        ::close(fd);
        BOOST_CHECK_EXCEPTION(futures::run_until_complete(sched, all), futures::StreamError,
                              [](const futures::StreamError& e) {
                                  return e.code().value() == ECONNRESET && e.end.kind == reactor::EndKind::reset &&
                                         std::string(e.what()).starts_with("stream: connection reset");
                              });
    }
    streams.clear();
    server.close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(a_negative_or_nan_double_deadline_is_refused_naming_it) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    Stream stream;
    auto server = futures::start_server(sched, reactor::Address::loopback_v4(0), [&](Stream s) {
        stream = s;
        return s.wait_closed();
    });
    int fd = accept_one(sched, server, stream);
    auto names = [](const std::string& name) {
        return [name](const std::invalid_argument& e) { return std::string(e.what()).starts_with(name + " must be"); };
    };
    BOOST_CHECK_EXCEPTION(stream.set_read_timeout(-1.0), std::invalid_argument, names("set_read_timeout: d"));
    BOOST_CHECK_EXCEPTION(stream.set_write_timeout(std::nan("")), std::invalid_argument, names("set_write_timeout: d"));
    BOOST_CHECK_EXCEPTION(stream.set_idle_timeout(-0.001), std::invalid_argument, names("set_idle_timeout: d"));
    BOOST_CHECK_EXCEPTION((void)server.serve_until(futures::Future<void>(sched), -1.0), std::invalid_argument,
                          names("serve_until: drain"));
    BOOST_CHECK_EXCEPTION((void)server.serve_until(futures::make_ready_future(sched, 1), std::nan("")),
                          std::invalid_argument, names("serve_until: drain"));
    stream.set_read_timeout(30.0);  // and a good one is taken
    stream.set_idle_timeout(60);    // an integer is seconds too
    stream.set_read_timeout({});    // still the Duration overload: none
    stream.set_idle_timeout(0.0);
    ::close(fd);
    stream = Stream();
    server.close();
    sched.run();
    BOOST_TEST(sched.empty());
}

// A limit beyond 32 bits is kept whole (the stream once kept it in 32
// bits), never as what its low bits say (2^32 + 16 would then be 16, and
// the 40-byte line below would overrun it).
BOOST_AUTO_TEST_CASE(a_limit_beyond_32_bits_is_kept_whole) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    Stream stream;
    futures::StreamOptions opt;
    opt.limit = (std::size_t{1} << 32) + 16;
    auto server = futures::start_server(
        sched, reactor::Address::loopback_v4(0),
        [&](Stream s) {
            stream = s;
            return s.wait_closed();
        },
        opt);
    int fd = accept_one(sched, server, stream);
    const std::string line(40, 'x');
    reactor_test::send_all(fd, line + "\n" + line);
    BOOST_TEST(futures::run_until_complete(sched, stream.read_until()) == line + "\n");
    auto second = stream.read_line();  // a partial line waits for its end
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return stream.buffered() == line.size(); }));
    BOOST_TEST(!second.done());
    reactor_test::send_all(fd, "\n");
    BOOST_TEST(futures::run_until_complete(sched, second).value() == line);
    ::close(fd);
    stream.close();
    server.close();
}

// ~Scheduler without close(), one stream's connection open and another's
// close queued: the connections tell their streams (their protocols:
// on_abandoned), whose pending reads break, so the
// continuations holding the streams go (a cycle otherwise: the stream holds
// the read's promise, the read's state the continuation, the continuation
// the stream), and the reads end cancelled.
BOOST_AUTO_TEST_CASE(a_loop_ending_before_the_close_breaks_the_pending_reads) {
    auto token = std::make_shared<int>(0);
    Future<void> open_read, closing_read;
    int fds[2][2];
    for (auto& pair : fds) BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        Stream open = Stream::adopt(sched, fds[0][0]);
        Stream closing = Stream::adopt(sched, fds[1][0]);
        open_read = open.read().then([open, token](std::string) {});
        closing_read = closing.read().then([closing, token](std::string) {});
        closing.abort();  // closed; its close callback is queued and will never run
        BOOST_TEST(token.use_count() == 3);
    }
    BOOST_TEST(token.use_count() == 1);  // both continuations, and with them the streams, are gone
    BOOST_TEST(open_read.cancelled());
    BOOST_TEST(closing_read.cancelled());
    for (auto& pair : fds) ::close(pair[1]);
}

// The transport's callbacks hold a plain pointer to the stream, cleared as
// the last handle goes: a close already queued then runs without a callback
// (under AddressSanitizer, calling one would be a use after free).
BOOST_AUTO_TEST_CASE(a_stream_let_go_while_its_close_is_queued_hears_nothing_more) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    int fds[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    Stream stream = Stream::adopt(sched, fds[0]);
    const reactor::ConnectionPtr conn = stream.transport().socket().shared_from_this();
    stream.abort();  // closed now; its close callback runs on a later iteration
    BOOST_TEST(!conn->is_open());
    stream = Stream();  // the last handle, and nothing waits: the stream goes now
    sched.run();
    BOOST_TEST(sched.empty());
    ::close(fds[1]);
}

// A read still pending when the last handle goes keeps the stream until its
// close (queued already: an abort) has run, and ends as that close decides:
// failed (the connection was aborted), neither broken nor left pending.
BOOST_AUTO_TEST_CASE(a_read_pending_when_the_last_handle_goes_ends_with_the_close) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    int fds[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    Stream stream = Stream::adopt(sched, fds[0]);
    Future<std::string> pending = stream.read();
    stream.abort();
    stream = Stream();  // the last handle
    BOOST_TEST(!pending.done());
    sched.run();
    BOOST_TEST_REQUIRE(pending.done());
    BOOST_TEST(!pending.cancelled());
    BOOST_TEST(sched.empty());
    ::close(fds[1]);
}

// Tried as a new user would: a chain that closes its stream and returns
// wait_closed() drops its last handle as it returns. The wait keeps the
// stream and completes once it is closed; the peer gets what was written,
// then the end of the input (it used to end in "broken promise: the wait for
// the stream to close ... will never complete").
BOOST_AUTO_TEST_CASE(close_then_wait_closed_at_the_end_of_a_chain_completes) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    int fds[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    Future<void> done = futures::make_ready_future(sched).then([&] {
        Stream stream = Stream::adopt(sched, fds[0]);
        stream.write("bye\n");
        stream.close();
        return stream.wait_closed();
    });
    sched.run();
    BOOST_TEST_REQUIRE(done.done());
    BOOST_TEST((done.status() == futures::Status::done));
    std::string got;
    char buf[64];
    ssize_t n;
    while ((n = ::read(fds[1], buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
    BOOST_TEST(n == 0);  // the end of the input, not an error
    BOOST_TEST(got == "bye\n");
    BOOST_TEST(sched.empty());
    ::close(fds[1]);
}

// drain() and a read pending when the last handle goes: the stream closes
// gracefully, the drain completes once the peer has read everything, and
// the read ends with the end of the input ("", done, not broken).
BOOST_AUTO_TEST_CASE(a_drain_and_a_read_keep_their_stream_after_the_last_handle) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    int fds[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    futures::StreamOptions options;
    options.connection.high_water = 64 * 1024;
    options.connection.low_water = 16 * 1024;
    const std::string chunk(1 << 20, 'x');
    constexpr std::size_t kChunks = 8;
    Future<void> drain;
    Future<std::string> read;
    {
        Stream stream = Stream::adopt(sched, fds[0], options);
        for (std::size_t i = 0; i < kChunks; ++i) BOOST_REQUIRE(stream.write(chunk));
        drain = stream.drain();
        read = stream.read();
    }  // the last handle
    BOOST_REQUIRE(!drain.done());
    std::size_t received = 0;
    bool at_end = false;
    sched.add_reader(fds[1], [&] {
        char buf[64 * 1024];
        const ssize_t n = ::read(fds[1], buf, sizeof buf);
        if (n > 0) received += static_cast<std::size_t>(n);
        if (n == 0) {
            at_end = true;
            sched.remove_reader(fds[1]);
        }
    });
    BOOST_REQUIRE(::fcntl(fds[1], F_SETFL, O_NONBLOCK) == 0);
    sched.run();
    BOOST_TEST_REQUIRE(drain.done());
    BOOST_TEST((drain.status() == futures::Status::done));
    BOOST_TEST_REQUIRE(read.done());
    BOOST_TEST((read.status() == futures::Status::done));
    BOOST_TEST(read.result() == "");
    BOOST_TEST(received == kChunks * chunk.size());
    BOOST_TEST(at_end);
    BOOST_TEST(sched.empty());
    ::close(fds[1]);
}

BOOST_AUTO_TEST_CASE(one_read_at_a_time_and_cancelled_reads_keep_the_bytes) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    Stream stream;
    auto server = futures::start_server(sched, reactor::Address::loopback_v4(0), [&](Stream s) {
        stream = s;
        return s.wait_closed();  // the conversation is driven by hand below
    });
    int fd = accept_one(sched, server, stream);
    auto first = stream.read_exactly(6);
    BOOST_CHECK_THROW((void)stream.read(), futures::InvalidStateError);
    reactor_test::send_all(fd, "abc");
    BOOST_TEST(first.cancel());
    reactor_test::send_all(fd, "def");
    BOOST_TEST(futures::run_until_complete(sched, stream.read_exactly(6)) == "abcdef");
    ::close(fd);
    BOOST_TEST(futures::run_until_complete(sched, stream.read()) == "");
    stream.close();
    stream = Stream();
    server.close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(drain_waits_for_a_slow_reader_then_completes) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    Stream stream;
    auto server = futures::start_server(sched, reactor::Address::loopback_v4(0), [&](Stream s) {
        stream = s;
        return s.wait_closed();  // the conversation is driven by hand below
    });
    int fd = accept_one(sched, server, stream);
    BOOST_TEST(stream.drain().done());  // nothing buffered: done at once
    const std::string chunk(256 * 1024, 'q');
    std::size_t written = 0;
    Future<void> drained;
    // Write until drain() has to wait (the peer reads nothing yet).
    for (;;) {
        stream.write(chunk);
        written += chunk.size();
        drained = stream.drain();
        if (!drained.done()) break;
        BOOST_REQUIRE(written < (256u << 20));
    }
    BOOST_TEST(!drained.done());
    // The peer reads everything: drain completes.
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    std::size_t got = 0;
    sched.add_reader(fd, [&] {
        char buf[65536];
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) got += static_cast<std::size_t>(n);
    });
    futures::run_until_complete(sched, drained);
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got == written; }));
    sched.remove_reader(fd);

    // Reset by the peer while a drain waits: the drain fails, reads fail.
    while (true) {
        stream.write(chunk);
        drained = stream.drain();
        if (!drained.done()) break;
    }
    linger lg{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    ::close(fd);
    BOOST_CHECK_THROW(futures::run_until_complete(sched, drained), std::system_error);
    BOOST_CHECK_THROW(futures::run_until_complete(sched, stream.read()), std::system_error);
    BOOST_TEST(stream.is_closing());
    BOOST_TEST(!stream.write("x"));
    stream = Stream();
    server.close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(open_connection_refused_and_cancelled) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto any = reactor::Address::loopback_v4(0);
    BOOST_REQUIRE(::bind(holder, any.data(), any.size()) == 0);  // bound, not listening: refuses
    auto refused_at = reactor::Address::local_of(holder);
    try {
        futures::run_until_complete(sched, futures::open_connection(sched, refused_at));
        BOOST_FAIL("connect must be refused");
    } catch (const std::system_error& e) {
        BOOST_TEST(e.code().value() == ECONNREFUSED);
    }
    ::close(holder);
    auto unresolvable = futures::open_connection(sched, reactor_test::unresolvable_name(), 80);
    BOOST_CHECK_THROW(futures::run_until_complete(sched, unresolvable), std::runtime_error);

    // Cancelled before it completes: nothing is left behind.
    auto server = echo_server(sched);
    auto pending = futures::open_connection(sched, server.address());
    BOOST_TEST(pending.cancel());
    BOOST_CHECK_THROW(futures::run_until_complete(sched, pending), futures::CancelledError);
    server.close();
    sched.run();
    BOOST_TEST(server.accepted() <= 1u);
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(stream_server_and_client_by_numeric_host) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    // A numeric host needs no lookup: the server is listening on return.
    futures::Future<futures::StreamServer> started =
        futures::start_server(sched, "127.0.0.1", 0, [&sched](Stream s) { return futures::spawn(sched, EchoSession(std::move(s))); });
    BOOST_REQUIRE(started.done());
    futures::StreamServer tcp = started.result();
    BOOST_TEST(futures::run_until_complete(sched, futures::spawn(sched, EchoClient(sched, tcp.address(), 3, 1))) == 3);
    tcp.close();
    sched.run();
    BOOST_TEST(sched.empty());
}

// "localhost" is looked up (from /etc/hosts); skipped where it does not resolve.
BOOST_AUTO_TEST_CASE(stream_by_host_name, *reactor_test::needs_localhost()) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    auto tcp = echo_server(sched);
    // If localhost names ::1 first, nothing listens there: refused, and the
    // next address (127.0.0.1) is tried.
    auto by_name = futures::run_until_complete(sched, futures::open_connection(sched, "localhost", tcp.address().port()));
    by_name.write("named\n");
    BOOST_TEST(futures::run_until_complete(sched, by_name.read_until()) == "named\n");
    BOOST_TEST((by_name.peer_address() == tcp.address()));
    by_name.close();
    tcp.close();
    by_name = Stream();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(stream_over_a_unix_socket) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    auto unix_server = echo_server(sched, reactor::Address::unix_path(fmt::format("@reactor-stream-{}-{}", ::getpid(),
                                                                                  static_cast<int>(backend))));
    BOOST_TEST(futures::run_until_complete(sched, futures::spawn(sched, EchoClient(sched, unix_server.address(), 5, 2))) == 5);
    unix_server.close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(abort_clients_ends_every_conversation) {
    reactor::Scheduler sched;
    auto server = echo_server(sched);
    std::vector<int> fds;
    for (int i = 0; i < 3; ++i) fds.push_back(reactor_test::connect_blocking(server.address().port()));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.active() == 3; }));
    server.close();
    server.abort_clients();
    sched.run();
    BOOST_TEST(server.active() == 0u);
    for (int fd : fds) {
        BOOST_TEST(reactor_test::recv_all(fd) == "");
        ::close(fd);
    }
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(wait_closed_is_done_once_closed_and_the_last_client_has_left) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto server = echo_server(sched);
    std::vector<int> fds;
    for (int i = 0; i < 2; ++i) fds.push_back(reactor_test::connect_blocking(server.address().port()));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.active() == 2; }));
    Future<void> closed = server.wait_closed();
    server.close();
    ::close(fds[0]);
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.active() == 1; }));
    BOOST_TEST(!closed.done());  // one client is still connected
    ::close(fds[1]);
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return closed.done(); }));
    BOOST_TEST(!closed.failed());
    BOOST_TEST(server.active() == 0u);
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(serve_until_stops_accepting_and_ends_early_when_every_client_has_left) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto server = echo_server(sched);
    const auto port = server.address().port();
    int fd = reactor_test::connect_blocking(port);
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.active() == 1; }));
    Future<void> stop(sched);
    Future<void> finished = server.serve_until(stop, std::chrono::hours(1));
    stop.set_result();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !server.is_serving(); }));
    BOOST_TEST(reactor_test::connect_blocking(port) < 0);  // no longer accepting
    BOOST_TEST(!finished.done());
    reactor_test::send_all(fd, "still served");  // the conversation in progress goes on
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] {
        char peek[16];
        return ::recv(fd, peek, sizeof peek, MSG_PEEK | MSG_DONTWAIT) == 12;
    }));
    BOOST_TEST(reactor_test::recv_exactly(fd, 12) == "still served");
    ::close(fd);
    // Long before the hour of drain time: the last client left.
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return finished.done(); }));
    BOOST_TEST(!finished.failed());
    sched.run();
    BOOST_TEST(sched.empty());
}

// A stop with a value (a signal number, say) works the same: its completion
// is what counts.
BOOST_AUTO_TEST_CASE(serve_until_takes_a_stop_that_carries_a_value) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto server = echo_server(sched);
    const auto port = server.address().port();
    Future<int> stop(sched);
    Future<void> finished = server.serve_until(stop, std::chrono::hours(1));
    BOOST_TEST(server.is_serving());
    stop.set_result(SIGTERM);
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return finished.done(); }));
    BOOST_TEST(!finished.failed());
    BOOST_TEST(!server.is_serving());
    BOOST_TEST(reactor_test::connect_blocking(port) < 0);
}

BOOST_AUTO_TEST_CASE(serve_until_aborts_the_clients_left_when_the_drain_time_is_over) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto server = echo_server(sched);
    std::vector<int> fds;
    for (int i = 0; i < 2; ++i) fds.push_back(reactor_test::connect_blocking(server.address().port()));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.active() == 2; }));
    Future<void> stop(sched);
    Future<void> finished = server.serve_until(stop, std::chrono::milliseconds(20));
    stop.cancel();  // any completion stops the server, cancellation too
    server = {};    // dropping the last handle does not cut the shutdown short
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return finished.done(); }));
    BOOST_TEST(!finished.failed());
    for (int fd : fds) {
        char c;
        errno = 0;
        BOOST_TEST(::recv(fd, &c, 1, 0) == -1);  // idle clients were aborted: reset
        BOOST_TEST(errno == ECONNRESET);
        ::close(fd);
    }
    sched.run();
    BOOST_TEST(sched.empty());
}

// Issue 47's key-value server: each handler is a chain ending in catch_error
// and finally; the clients say nothing, so StreamOptions' idle_timeout fires
// during serve_until's drain and fails each handler's read. serve_until
// (run_until_complete, nothing after it) returns only once every handler's
// catch_error and finally have run, and nothing is reported: before, it
// returned once the connections had closed, the handlers' continuations still
// queued, and the Scheduler dropped them unrun ("Future exception was never
// retrieved ... stream: idle_timeout passed").
BOOST_AUTO_TEST_CASE(serve_until_returns_after_the_handlers_catch_error_and_finally_ran) {
    std::vector<std::string> reports;
    int caught = 0;
    int finished = 0;
    {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(reactor::describe(ctx)); });
        futures::StreamOptions options;
        options.connection.idle_timeout = 50ms;
        auto server = futures::start_server(
            sched, reactor::Address::loopback_v4(0),
            [&](Stream s) {
                return s.read_until()
                    .then([s](std::string request) mutable { s.write("VALUE " + request); })
                    .then([s]() mutable { return s.drain(); })
                    .catch_error([&](const std::system_error&) { ++caught; })
                    .finally([&] { ++finished; });
            },
            options);
        std::vector<int> fds;
        for (int i = 0; i < 3; ++i) fds.push_back(reactor_test::connect_blocking(server.address().port()));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.active() == 3; }));
        Future<void> stop(sched);
        stop.set_result();
        futures::run_until_complete(sched, server.serve_until(stop, 10s));  // the idle timeout comes first
        BOOST_TEST(caught == 3);
        BOOST_TEST(finished == 3);
        BOOST_TEST(server.active() == 0u);
        for (int fd : fds) ::close(fd);
    }  // the Scheduler goes: nothing of the handlers is left to drop
    BOOST_TEST(caught == 3);
    BOOST_TEST(finished == 3);
    for (const std::string& r : reports) BOOST_TEST_MESSAGE(r);
    BOOST_TEST(reports.empty());
}

// The server's scope supervises: a conversation that fails ends alone, the
// others are served, and its error is reported once, as it ends, naming the
// server and the conversation's line (not "never retrieved" at the loop's end).
BOOST_AUTO_TEST_CASE(a_failed_conversation_is_reported_once_and_the_others_go_on) {
    std::vector<reactor::ErrorContext> reports;
    {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx); });
        auto server = futures::start_server(sched, reactor::Address::loopback_v4(0), [](Stream s) {
            return s.read_until().then([s](std::string line) mutable {
                if (line == "fail\n") throw std::runtime_error("bad request");
                s.write("OK " + line);
            });
        });
        const std::uint16_t port = server.address().port();
        std::vector<int> fds;
        for (const char* line : {"one\n", "fail\n", "two\n"}) {
            fds.push_back(reactor_test::connect_blocking(port));
            BOOST_REQUIRE(reactor_test::send_all(fds.back(), line));
        }
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.accepted() == 3 && server.active() == 0; }));
        BOOST_TEST(reports.size() == 1u);  // at once, not at the loop's end
        server.close();
        futures::run_until_complete(sched, server.wait_closed());
        BOOST_TEST(reactor_test::recv_all(fds[0]) == "OK one\n");
        BOOST_TEST(reactor_test::recv_all(fds[1]) == "");
        BOOST_TEST(reactor_test::recv_all(fds[2]) == "OK two\n");
        for (int fd : fds) ::close(fd);
    }
    BOOST_REQUIRE(reports.size() == 1u);
    const std::string line = reactor::describe(reports[0]);
    BOOST_TEST(line.find("a conversation failed") != std::string::npos, line);
    BOOST_TEST(line.find("bad request") != std::string::npos, line);
    BOOST_TEST(line.find("test_stream.cpp") != std::string::npos, line);
    BOOST_TEST(line.find("never retrieved") == std::string::npos, line);
}

// wait_closed waits for the conversations, not only the connections: this
// handler closes its stream, then goes on for a while.
BOOST_AUTO_TEST_CASE(wait_closed_waits_for_a_conversation_that_outlives_its_connection) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    bool finished = false;
    auto server = futures::start_server(sched, reactor::Address::loopback_v4(0), [&](Stream s) {
        s.close();
        return futures::sleep(sched, 30ms).then([&] { finished = true; });
    });
    int fd = reactor_test::connect_blocking(server.address().port());
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server.accepted() == 1; }));
    server.close();
    Future<void> closed = server.wait_closed();
    BOOST_REQUIRE(futures::run_until(sched, closed, 10s));
    BOOST_TEST(finished);
    BOOST_TEST(!closed.failed());
    ::close(fd);
    sched.run();
    BOOST_TEST(sched.empty());
}

// A read of more than 4 GiB at once is taken as asked (the pending read
// keeps its count whole): it waits for all of it, and the end of input
// fails it naming the whole count, never what its low 32 bits say.
BOOST_AUTO_TEST_CASE(read_exactly_above_4_gib_waits_for_all_of_it) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::SocketPair pair;
    Stream stream = Stream::from(reactor::Connection::adopt(sched, ::dup(pair.a.get())));
    const std::size_t huge = (std::size_t{1} << 32) + 1;  // 1 in its low 32 bits
    auto pending = stream.read_exactly(huge);
    BOOST_REQUIRE(reactor_test::send_all(pair.b.get(), "abc"));
    sched.run_for(std::chrono::milliseconds(0));
    BOOST_TEST(!pending.done());
    pair.b.close();  // the end of input, 3 bytes in
    try {
        (void)futures::run_until_complete(sched, std::move(pending));
        BOOST_FAIL("read_exactly completed short");
    } catch (const futures::IncompleteReadError& e) {
        BOOST_TEST(e.partial == "abc");
        BOOST_TEST((e.expected == std::optional<std::size_t>(huge)));
    }
    auto most = stream.read(std::size_t{1} << 40);  // "at most": any size will do
    BOOST_TEST(futures::run_until_complete(sched, std::move(most)) == "");
    stream.close();
    sched.run();
}

// A transport of the user's may end with any int as its errno: the stream
// keeps it whole, and reads fail with it.
class EndingTransport final : public reactor::Transport {
public:
    explicit EndingTransport(reactor::ConnectionPtr conn) : conn_(std::move(conn)) {}
    void set_protocol(reactor::Protocol* protocol) override { protocol_ = protocol; }
    bool write(std::string_view) override { return true; }
    void write_eof() override {}
    void close() override { conn_->close(); }
    void abort() override { conn_->abort(); }
    void pause_reading() override {}
    void resume_reading() override {}
    std::size_t buffered() const noexcept override { return 0; }
    void set_water_marks(std::size_t, std::size_t) override {}
    bool above_high_water() const noexcept override { return false; }
    bool is_open() const noexcept override { return conn_->is_open(); }
    bool at_eof() const noexcept override { return false; }
    reactor::Connection& socket() const noexcept override { return *conn_; }
    void end(int error) {
        if (protocol_)
            std::exchange(protocol_, nullptr)
                ->on_closed(reactor::End(reactor::EndKind::error, std::error_code(error, std::generic_category())));
    }

private:
    reactor::ConnectionPtr conn_;
    reactor::Protocol* protocol_ = nullptr;
};

BOOST_AUTO_TEST_CASE(a_transports_end_reaches_the_read_whole) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor_test::SocketPair pair;
    auto owned = reactor::make_ref<EndingTransport>(reactor::Connection::adopt(sched, ::dup(pair.a.get())));
    EndingTransport& transport = *owned;
    Stream stream = Stream::from(std::move(owned));
    auto read = stream.read();
    transport.end(70000);
    BOOST_REQUIRE(read.done());
    try {
        (void)read.result();
        BOOST_FAIL("the read should fail");
    } catch (const futures::StreamError& e) {
        BOOST_TEST(e.code().value() == 70000);
        BOOST_TEST((e.end.kind == reactor::EndKind::error));
        BOOST_TEST((e.end.error == std::error_code(70000, std::generic_category())));
    }
    transport.end(ECONNRESET);  // a second end changes nothing
    stream.close();
    sched.run();
}

// A peer that sends much and never reads its echoes (issue 49): the echo
// conversation waits in drain() with its output above the high-water mark,
// no read asks for bytes, and the stream stops reading from the socket at
// once, as a callback connection with pause_reading_above_high_water does,
// so TCP holds the peer back. It used to read on until more than 2 x limit
// bytes waited unread (and one recv more), for as long as the peer kept
// sending: every stuck client cost that much more than a callback one. Once
// the peer reads, the conversation goes on and every byte comes back in
// order. Small socket buffers on both sides and a small read size make the
// backlog reach the stream early; every step waits on the loop's state,
// never on time.
BOOST_AUTO_TEST_CASE(a_conversation_waiting_in_drain_stops_reading_its_peer) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    futures::StreamOptions options;
    options.connection.read_size = 16 * 1024;
    Stream stream;
    auto small_buffers = [](int fd, bool receive) {
        const int size = 16 * 1024;
        BOOST_REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size) == 0);
        if (receive) BOOST_REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size) == 0);
    };
    auto server = futures::start_server(
        sched, reactor::Address::loopback_v4(0),
        [&](Stream s) {
            small_buffers(s.transport().socket().fd(), true);
            stream = s;
            return futures::spawn(sched, EchoSession(std::move(s)));
        },
        options);
    // The peer: its receive buffer small before it connects (the window it announces).
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    BOOST_REQUIRE(fd >= 0);
    const int tiny = 4096;
    BOOST_REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof tiny) == 0);
    small_buffers(fd, false);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server.address().port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return stream.valid(); }));
    reactor::Connection& conn = stream.transport().socket();

    const std::string payload = reactor_test::random_bytes(8 << 20, 49);
    std::size_t sent = 0;
    auto send_some = [&] {
        while (sent < payload.size()) {
            const ssize_t n = ::send(fd, payload.data() + sent, std::min<std::size_t>(payload.size() - sent, 65536),
                                     MSG_NOSIGNAL);
            if (n <= 0) break;
            sent += static_cast<std::size_t>(n);
        }
    };
    // Sends without reading until the stream has stopped reading its peer.
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] {
        send_some();
        return conn.above_high_water() && !conn.is_reading();
    }));
    BOOST_TEST_MESSAGE("sent " << sent << ", unread " << stream.buffered() << ", unsent " << conn.buffered());
    BOOST_REQUIRE(sent < payload.size());  // the peer is held back
    // What waits unread is at most what arrived while the last read's
    // answer was on its way out, a few recv()s, never the 2 x limit (128
    // KiB) the stream may read ahead for a reader; the output at most one
    // read's answer past the high-water mark.
    BOOST_TEST(stream.buffered() <= 4 * options.connection.read_size);
    BOOST_TEST(conn.buffered() <= conn.high_water() + 64 * 1024);
    // Nothing more is read however long the peer keeps trying.
    const std::size_t unread = stream.buffered();
    for (int i = 0; i < 20; ++i) {
        send_some();
        sched.run_for(std::chrono::milliseconds(0));
    }
    BOOST_TEST(stream.buffered() == unread);
    BOOST_TEST(!conn.is_reading());

    // The peer reads: the conversation goes on, every byte comes back in order.
    std::string got;
    got.reserve(payload.size());
    char buf[65536];
    bool shut = false;
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] {
        send_some();
        if (sent == payload.size() && !shut) shut = ::shutdown(fd, SHUT_WR) == 0;  // the session ends at EOF
        ssize_t n;
        while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<std::size_t>(n));
        return n == 0;  // the server closed the stream after its last echo
    }, std::chrono::seconds(60)));
    BOOST_TEST(got.size() == payload.size());
    BOOST_TEST((got == payload));
    ::close(fd);
    stream = Stream();
    server.close();
    sched.run();
    BOOST_TEST(sched.empty());
}
