// SPDX-License-Identifier: MIT
// Connection deadlines (read, write and idle timeouts) on every backend, on
// a virtual clock: the loop's time moves only when it would sleep, so each
// deadline is checked to the nanosecond without real waiting. The peer is a
// real socket (a socketpair end that no reactor code drives).
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <futures/futures.hpp>
#include <futures/stream.hpp>
#include <reactor/net/connection.hpp>

#include "support/counting_new.hpp"
#include "support/fds.hpp"
#include "support/tcp_echo.hpp"
#include "support/virtual_time.hpp"


using namespace std::chrono_literals;
using reactor::Connection;
using reactor::ConnectionPtr;
using reactor_test::on;
using reactor::testing::VirtualLoop;
using reactor_test::TimeoutRecordingLoop;
using reactor_test::backend_under_test;
using reactor_test::SocketPair;

namespace {

// A connection on end `a` of a socketpair, on a virtual-time loop; records
// when and why it closed. Members in construction order.
struct Rig {
    TimeoutRecordingLoop loop{backend_under_test()};
    SocketPair pair;
    reactor::TimePoint start = loop.clock.now();
    std::optional<reactor::CloseReason> reason;
    reactor::TimePoint closed_at{};
    std::string received;
    ConnectionPtr conn;

    explicit Rig(reactor::ConnectionOptions options) {
        conn = Connection::adopt(loop.sched, ::dup(pair.a.get()), options);
        pair.a = reactor_test::Fd();  // the connection's copy is the only one: its close is the peer's EOF
        conn->set_data_callback([this](Connection&, std::string_view d) { received += d; });
        conn->set_close_callback([this](Connection&, const reactor::CloseReason& r) {
            reason = r;
            closed_at = loop.clock.now();
        });
    }
    // Runs the loop until `done`; the virtual clock jumps over every sleep, and
    // a loop that would wait forever throws (VirtualSelector), so this ends.
    template <class Pred>
    void run_until(Pred done) {
        for (int i = 0; i < 100000 && !done(); ++i) loop.sched.run_once();
        BOOST_REQUIRE(done());
    }
    void run_until_closed() {
        run_until([&] { return reason.has_value(); });
    }
    reactor::Duration closed_after() const { return closed_at - start; }
    // The peer sends at `at` (virtual time from start).
    void peer_sends_at(reactor::Duration at, std::string bytes) {
        loop.sched.call_at(start + at, [this, bytes] {
            BOOST_REQUIRE(::send(pair.b.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size()));
        });
    }
};

reactor::ConnectionOptions with(reactor::Duration read, reactor::Duration write, reactor::Duration idle) {
    reactor::ConnectionOptions o;
    o.read_timeout = read;
    o.write_timeout = write;
    o.idle_timeout = idle;
    return o;
}

// Fills the peer's receive buffer and the connection's send buffer, so
// that what is written next stays queued in the connection.
std::string more_than_the_kernel_holds(int peer_fd, Connection& conn) {
    int small = 4096;
    ::setsockopt(peer_fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    ::setsockopt(conn.fd(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    return std::string(1 << 20, 'w');
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_silent_peer_meets_the_read_timeout) {
    Rig rig(with(30s, {}, {}));
    rig.run_until_closed();
    BOOST_TEST(rig.reason->kind == reactor::CloseKind::read_timeout);
    BOOST_TEST(rig.reason->to_string() == "read timeout");
    BOOST_TEST((rig.closed_after() == 30s));
    char c;
    BOOST_TEST(::recv(rig.pair.b.get(), &c, 1, 0) == 0);  // closed gracefully: EOF, not a reset
}

BOOST_AUTO_TEST_CASE(data_received_moves_the_read_deadline) {
    Rig rig(with(30s, {}, {}));
    rig.peer_sends_at(20s, "late but in time");
    rig.run_until_closed();
    BOOST_TEST(rig.received == "late but in time");
    BOOST_TEST(rig.reason->kind == reactor::CloseKind::read_timeout);
    BOOST_TEST((rig.closed_after() == 50s));  // 30 s after the data, not after the start
    // The data did not move the timer (no timer work per read): it fired at
    // the first deadline, 30 s, found it moved, and was set for 50 s then.
    std::vector<reactor::Duration> waits;
    for (const auto& t : rig.loop.selector->timeouts)
        if (t && *t > 0ns) waits.push_back(std::chrono::ceil<reactor::Duration>(*t));
    // (A wait is recorded also when something was ready and no time passed.)
    BOOST_REQUIRE(waits.size() >= 2u);
    BOOST_TEST((waits[waits.size() - 2] == 10s));  // eager re-arming would have asked for 30 s
    BOOST_TEST((waits.back() == 20s));
}

BOOST_AUTO_TEST_CASE(paused_reading_is_not_timed_and_resuming_restarts_the_count) {
    Rig rig(with(30s, {}, {}));
    rig.conn->pause_reading();
    rig.loop.sched.call_at(rig.start + 100s, [&] { rig.conn->resume_reading(); });
    rig.run_until_closed();
    BOOST_TEST(rig.reason->kind == reactor::CloseKind::read_timeout);
    BOOST_TEST((rig.closed_after() == 130s));
}

BOOST_AUTO_TEST_CASE(output_the_peer_does_not_read_meets_the_write_timeout) {
    Rig rig(with({}, 10s, {}));
    const std::string big = more_than_the_kernel_holds(rig.pair.b.get(), *rig.conn);
    rig.loop.sched.call_at(rig.start + 5s, [&] { BOOST_TEST(rig.conn->write(big)); });
    rig.run_until_closed();
    BOOST_TEST(rig.reason->kind == reactor::CloseKind::write_timeout);
    BOOST_TEST((rig.closed_after() == 15s));  // no progress since the write at 5 s
}

BOOST_AUTO_TEST_CASE(a_graceful_close_whose_flush_stalls_meets_the_write_timeout) {
    Rig rig(with({}, 10s, {}));
    const std::string big = more_than_the_kernel_holds(rig.pair.b.get(), *rig.conn);
    BOOST_TEST(rig.conn->write(big));
    rig.conn->close();
    BOOST_TEST((rig.conn->state() == Connection::State::closing));
    rig.run_until_closed();
    BOOST_TEST(rig.reason->kind == reactor::CloseKind::write_timeout);
    BOOST_TEST((rig.closed_after() == 10s));
}

BOOST_AUTO_TEST_CASE(idle_timeout_counts_from_the_last_traffic_either_way) {
    Rig rig(with({}, {}, 60s));
    rig.peer_sends_at(10s, "in");
    rig.loop.sched.call_at(rig.start + 40s, [&] { BOOST_TEST(rig.conn->write("out")); });
    rig.run_until_closed();
    BOOST_TEST(rig.reason->kind == reactor::CloseKind::idle_timeout);
    BOOST_TEST((rig.closed_after() == 100s));  // 60 s after the write at 40 s
}

BOOST_AUTO_TEST_CASE(a_deadline_set_later_counts_from_then_and_zero_turns_it_off) {
    Rig rig(with({}, {}, {}));
    rig.loop.sched.call_at(rig.start + 5s, [&] { rig.conn->set_idle_timeout(20s); });
    rig.loop.sched.call_at(rig.start + 10s, [&] { rig.conn->set_read_timeout(1h); });
    rig.run_until_closed();
    BOOST_TEST(rig.reason->kind == reactor::CloseKind::idle_timeout);
    BOOST_TEST((rig.closed_after() == 25s));

    Rig off(with(30s, {}, {}));
    off.conn->set_read_timeout({});
    off.peer_sends_at(1000s, "x");  // the only event: nothing may close it first
    off.run_until([&] { return off.received == "x"; });
    BOOST_TEST(!off.reason.has_value());
    off.conn->abort();
    off.run_until_closed();
}

BOOST_AUTO_TEST_CASE(without_deadlines_the_loop_sets_no_timer) {
    Rig rig(with({}, {}, {}));
    rig.peer_sends_at(5s, "only timer is the peer's");
    rig.run_until([&] { return !rig.received.empty(); });
    // One finite wait (to the peer's send), none for the connection.
    std::size_t finite = 0;
    for (const auto& t : rig.loop.selector->timeouts) finite += t.has_value() && *t > 0ns;
    BOOST_TEST(finite == 1u);
    rig.conn->abort();
    rig.run_until_closed();
}

BOOST_AUTO_TEST_CASE(a_stream_read_fails_with_timed_out_at_its_read_deadline) {
    VirtualLoop loop(backend_under_test());
    SocketPair pair;
    futures::StreamOptions options;
    options.connection.read_timeout = 30s;
    auto stream = futures::Stream::from(Connection::adopt(loop.sched, ::dup(pair.a.get())), options);
    pair.a = reactor_test::Fd();
    const auto start = loop.clock.now();
    auto line = stream.read_until("\n");
    for (int i = 0; i < 100000 && !line.done(); ++i) loop.sched.run_once();
    BOOST_REQUIRE(line.failed());
    BOOST_TEST((loop.clock.now() - start == 30s));
    try {
        line.result();
        BOOST_FAIL("a timed-out read must fail");
    } catch (const std::system_error& e) {
        BOOST_TEST(e.code().value() == ETIMEDOUT);
        BOOST_TEST(std::string(e.what()).find("timed out") != std::string::npos, e.what());
        // It says which deadline.
        BOOST_TEST(std::string(e.what()).find("read_timeout passed") != std::string::npos, e.what());
    }
}

BOOST_AUTO_TEST_CASE(receiving_with_deadlines_set_allocates_nothing_per_read) {
    // A real loop here, not a Rig's: its selector records every wait (allocating).
    reactor::Scheduler sched(on(backend_under_test()));
    SocketPair pair;
    auto conn = Connection::adopt(sched, ::dup(pair.a.get()), with(1h, 1h, 1h));
    pair.a = reactor_test::Fd();
    int reads = 0;
    conn->set_data_callback([&](Connection&, std::string_view) { ++reads; });
    auto deliver = [&](int n) {
        for (int i = 0; i < n; ++i) {
            const int before = reads;
            BOOST_REQUIRE(::send(pair.b.get(), "ping", 4, MSG_NOSIGNAL) == 4);
            while (reads == before) sched.run_once();
        }
    };
    deliver(10);  // warm up: the loop's queues reach their size
    const std::size_t before = reactor_test::allocation_count;
    deliver(200);
    BOOST_TEST(reactor_test::allocation_count - before == 0u);
    conn->abort();
    sched.run();
    BOOST_TEST(sched.empty());
}
