// SPDX-License-Identifier: MIT
// Connection deadlines as the loop times them (detail::DeadlineQueues): the
// connections with the same three timeouts share a group, one queue per kind
// of deadline in the order their clocks started, and one loop timer for the
// earliest front. These cases check that each connection still closes at
// exactly its own deadline however traffic reorders the queue, that a group
// costs one timer whatever its size, that a connection leaving (closed, or
// with new timeouts) times nothing for the others or for the next owner of
// its fd number, and that replaced timers never pile up. On every backend,
// on a virtual clock.
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <reactor/live_item.hpp>
#include <reactor/net/connection.hpp>

#include "support/fds.hpp"
#include "support/virtual_time.hpp"

using namespace std::chrono_literals;
using reactor::CloseKind;
using reactor::Connection;
using reactor::ConnectionPtr;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::SocketPair;

namespace {

// A connection on a socketpair end, with when and why it closed.
struct Watched {
    ConnectionPtr conn;
    std::optional<reactor::CloseKind> reason;
    reactor::TimePoint closed_at{};
};

// Adopts a copy of `fd` (at number `number` if given) with an idle timeout.
void adopt(VirtualLoop& loop, Watched& w, int fd, reactor::Duration idle, int number = -1) {
    const int copy = number < 0 ? ::dup(fd) : ::dup2(fd, number);
    BOOST_REQUIRE(copy >= 0);
    reactor::ConnectionOptions options;
    options.idle_timeout = idle;
    w.conn = Connection::adopt(loop.sched, copy, options);
    w.conn->set_close_callback([&w, &loop](Connection&, const reactor::CloseReason& r) {
        w.reason = r.kind;
        w.closed_at = loop.clock.now();
    });
}

template <class Pred>
void run_until(VirtualLoop& loop, Pred done) {
    for (int i = 0; i < 100000 && !done(); ++i) loop.sched.run_once();
    BOOST_REQUIRE(done());
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_deadline_moved_earlier_and_later_fires_at_its_exact_time) {
    VirtualLoop loop(backend_under_test());
    SocketPair pair;
    Watched w;
    const auto start = loop.clock.now();
    adopt(loop, w, pair.a.get(), 100s);  // due at 100 s
    auto at = [&](reactor::Duration when, reactor::Duration idle) {
        loop.sched.call_at(start + when, [&, idle] { w.conn->set_idle_timeout(idle); });
    };
    at(1s, 50s);   // earlier: 51 s (another group: the 100 s one, and its timer, end)
    at(2s, 200s);  // later: 202 s
    at(3s, 30s);   // earlier: 33 s
    at(4s, 20s);   // earlier: 24 s
    at(5s, 40s);   // later: 45 s
    std::size_t pending_timers = 0;
    loop.sched.call_at(start + 6s, [&] { pending_timers = loop.sched.timer_count(); });
    const std::uint64_t fired_before = loop.sched.stats().timers_fired;
    run_until(loop, [&] { return w.reason.has_value(); });
    BOOST_TEST((*w.reason == CloseKind::idle_timeout));
    BOOST_TEST((w.closed_at - start == 45s));
    // Its group's one timer, however many it replaced.
    BOOST_TEST(pending_timers == 1u);
    // Six of the test's own, and the one at 45 s: the replaced timers (100,
    // 51, 202, 33 and 24 s) fired nothing.
    BOOST_TEST(loop.sched.stats().timers_fired - fired_before == 7u);
    run_until(loop, [&] { return loop.sched.empty(); });
}

BOOST_AUTO_TEST_CASE(a_closed_connections_timer_does_not_time_the_next_owner_of_its_fd_number) {
    VirtualLoop loop(backend_under_test());
    SocketPair first_pair;
    SocketPair second_pair;
    Watched first;
    Watched second;
    const auto start = loop.clock.now();
    adopt(loop, first, first_pair.a.get(), 10s);  // due at 10 s
    const int number = first.conn->fd();
    loop.sched.call_at(start + 1s, [&] { first.conn->set_idle_timeout(5s); });  // 6 s; 10 s replaced
    loop.sched.call_at(start + 2s, [&] {
        first.conn->abort();  // it leaves its queue, and the timer of its group ends
        // The same number, a new owner, a timer due at one of those times.
        adopt(loop, second, second_pair.a.get(), 8s, number);
        BOOST_REQUIRE(second.conn->fd() == number);
    });
    const std::uint64_t fired_before = loop.sched.stats().timers_fired;
    run_until(loop, [&] { return second.reason.has_value(); });
    BOOST_TEST((*first.reason == CloseKind::local));
    BOOST_TEST((*second.reason == CloseKind::idle_timeout));
    BOOST_TEST((second.closed_at - start == 10s));
    // The test's two, and the second connection's at 10 s: no timer of the
    // first connection fired, not even the one due with the second's.
    BOOST_TEST(loop.sched.stats().timers_fired - fired_before == 3u);
    run_until(loop, [&] { return loop.sched.empty(); });
}

BOOST_AUTO_TEST_CASE(moving_the_timer_earlier_many_times_leaves_a_bounded_heap) {
    VirtualLoop loop(backend_under_test());
    SocketPair pair;
    Watched w;
    const auto start = loop.clock.now();
    adopt(loop, w, pair.a.get(), 1'000'000s);
    constexpr int kMoves = 10'000;
    std::size_t most_entries = 0;
    loop.sched.call_at(start + 1s, [&] {
        for (int i = 1; i <= kMoves; ++i) {
            w.conn->set_idle_timeout(std::chrono::seconds(1'000'000 - i));  // earlier every time
            most_entries = std::max(most_entries, loop.sched.timer_entries());
        }
    });
    run_until(loop, [&] { return w.reason.has_value(); });
    BOOST_TEST((*w.reason == CloseKind::idle_timeout));
    BOOST_TEST((w.closed_at - start == 1s + std::chrono::seconds(1'000'000 - kMoves)));
    // Each move replaces the group and its timer; the replaced entries are
    // purged as cancelled timers are, once they outnumber the live ones: far
    // fewer than the moves.
    BOOST_TEST(most_entries < 300u);
    run_until(loop, [&] { return loop.sched.empty(); });
}

BOOST_AUTO_TEST_CASE(a_paused_connection_with_a_pending_deadline_keeps_run_going) {
    VirtualLoop loop(backend_under_test());
    SocketPair pair;
    Watched w;
    const auto start = loop.clock.now();
    adopt(loop, w, pair.a.get(), 30s);
    w.conn->pause_reading();  // nothing watched: only the timer is work
    BOOST_TEST(loop.sched.waiter_count() == 0u);
    BOOST_TEST(loop.sched.timer_count() == 1u);
    BOOST_TEST(!loop.sched.empty());
    loop.sched.run();
    BOOST_TEST((*w.reason == CloseKind::idle_timeout));
    BOOST_TEST((w.closed_at - start == 30s));
    BOOST_TEST(loop.sched.empty());
}

namespace {

// `n` bytes from a peer: a read for the connection on the other end.
void send_from_peer(int peer_fd, std::size_t n = 1) {
    const std::string bytes(n, 'x');
    BOOST_REQUIRE(::send(peer_fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(n));
}

// Everything the peer has been sent, read (and dropped): room for more.
void drain_at_peer(int peer_fd) {
    char buf[65536];
    while (::recv(peer_fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(connections_with_the_same_timeouts_share_one_timer_and_each_meets_its_own_deadline) {
    VirtualLoop loop(backend_under_test());
    SocketPair pairs[3];
    Watched w[3];
    const auto start = loop.clock.now();
    // a at 0 s, b at 2 s, c at 4 s, all with a 10 s idle timeout: the queue
    // is a, b, c. Data for a at 6 s moves it to the back: b is due at 12 s,
    // c at 14 s, a at 16 s.
    adopt(loop, w[0], pairs[0].a.get(), 10s);
    loop.sched.call_at(start + 2s, [&] { adopt(loop, w[1], pairs[1].a.get(), 10s); });
    loop.sched.call_at(start + 4s, [&] { adopt(loop, w[2], pairs[2].a.get(), 10s); });
    std::size_t pending_timers = 0;
    loop.sched.call_at(start + 5s, [&] { pending_timers = loop.sched.timer_count(); });
    std::size_t received = 0;
    loop.sched.call_at(start + 6s, [&] {
        w[0].conn->set_data_callback([&](Connection&, std::string_view data) { received += data.size(); });
        send_from_peer(pairs[0].b.get());
    });
    run_until(loop, [&] { return w[0].reason && w[1].reason && w[2].reason; });
    BOOST_TEST(received == 1u);
    BOOST_TEST(pending_timers == 2u);  // the test's own at 6 s, and one for the three connections
    for (const Watched& x : w) BOOST_TEST((*x.reason == CloseKind::idle_timeout));
    BOOST_TEST((w[1].closed_at - start == 12s));
    BOOST_TEST((w[2].closed_at - start == 14s));
    BOOST_TEST((w[0].closed_at - start == 16s));
    BOOST_TEST(loop.sched.timer_count() == 0u);  // the group ended with its last member
    run_until(loop, [&] { return loop.sched.empty(); });
}

BOOST_AUTO_TEST_CASE(a_connection_that_changes_its_timeouts_leaves_the_others_timed) {
    VirtualLoop loop(backend_under_test());
    SocketPair pairs[3];
    Watched w[3];
    const auto start = loop.clock.now();
    for (int i = 0; i < 3; ++i) adopt(loop, w[i], pairs[i].a.get(), 10s);
    // At 1 s the front leaves for a group of its own (due at 4 s), and the
    // back for no deadline at all; the middle one is still due at 10 s.
    std::size_t pending_timers = 0;
    loop.sched.call_at(start + 1s, [&] {
        w[0].conn->set_idle_timeout(3s);
        w[2].conn->set_idle_timeout(0s);
        pending_timers = loop.sched.timer_count();
    });
    loop.sched.call_at(start + 30s, [&] { w[2].conn->close(); });
    run_until(loop, [&] { return w[0].reason && w[1].reason && w[2].reason; });
    BOOST_TEST(pending_timers == 3u);  // the test's own at 30 s, and one per group
    BOOST_TEST((*w[0].reason == CloseKind::idle_timeout));
    BOOST_TEST((w[0].closed_at - start == 4s));
    BOOST_TEST((*w[1].reason == CloseKind::idle_timeout));
    BOOST_TEST((w[1].closed_at - start == 10s));
    BOOST_TEST((*w[2].reason == CloseKind::local));
    BOOST_TEST((w[2].closed_at - start == 30s));
    run_until(loop, [&] { return loop.sched.empty(); });
}

BOOST_AUTO_TEST_CASE(write_deadlines_run_while_output_waits_and_progress_restarts_them) {
    VirtualLoop loop(backend_under_test());
    SocketPair pairs[2];
    Watched w[2];
    const auto start = loop.clock.now();
    // A write timeout of 5 s and an idle one of an hour; the peers never
    // send, so reads never move a clock.
    for (int i = 0; i < 2; ++i) {
        adopt(loop, w[i], pairs[i].a.get(), 3600s);
        w[i].conn->set_write_timeout(5s);
    }
    const std::string lots(4 << 20, 'y');  // far more than a socket buffer holds
    // a queues output at 1 s, b at 2 s; b's peer reads at 4 s and b sends
    // more: b's write clock restarts then. a is due at 6 s, b at 9 s.
    loop.sched.call_at(start + 1s, [&] { BOOST_TEST(w[0].conn->write(lots)); });
    loop.sched.call_at(start + 2s, [&] { BOOST_TEST(w[1].conn->write(lots)); });
    std::size_t before = 0;
    loop.sched.call_at(start + 4s, [&] {
        before = w[1].conn->buffered();
        drain_at_peer(pairs[1].b.get());
    });
    std::size_t after = 0;
    loop.sched.call_at(start + 5s, [&] { after = w[1].conn->buffered(); });
    run_until(loop, [&] { return w[0].reason && w[1].reason; });
    BOOST_TEST(before > 0u);
    BOOST_TEST(after < before);  // b made progress at 4 s
    BOOST_TEST((*w[0].reason == CloseKind::write_timeout));
    BOOST_TEST((w[0].closed_at - start == 6s));
    BOOST_TEST((*w[1].reason == CloseKind::write_timeout));
    BOOST_TEST((w[1].closed_at - start == 9s));
    run_until(loop, [&] { return loop.sched.empty(); });
}

BOOST_AUTO_TEST_CASE(drained_output_ends_the_write_deadline) {
    VirtualLoop loop(backend_under_test());
    SocketPair pair;
    Watched w;
    const auto start = loop.clock.now();
    reactor::ConnectionOptions options;
    options.write_timeout = 5s;
    w.conn = Connection::adopt(loop.sched, ::dup(pair.a.get()), options);
    w.conn->set_close_callback([&](Connection&, const reactor::CloseReason& r) {
        w.reason = r.kind;
        w.closed_at = loop.clock.now();
    });
    w.conn->pause_reading();  // so that only its output is work for the loop
    const std::string lots(4 << 20, 'y');
    loop.sched.call_at(start + 1s, [&] { BOOST_TEST(w.conn->write(lots)); });
    // The peer keeps reading until the output is gone; then nothing is timed.
    std::size_t pending_timers = 99;
    std::function<void()> read_some = [&] {
        drain_at_peer(pair.b.get());
        if (w.conn->buffered() > 0) {
            loop.sched.call_later(1s, read_some);
        } else {
            loop.sched.call_soon([&] { pending_timers = loop.sched.timer_count(); });
        }
    };
    loop.sched.call_at(start + 2s, read_some);
    loop.sched.run();  // returns: nothing is left to time
    BOOST_TEST(!w.reason.has_value());
    BOOST_TEST(w.conn->is_open());
    BOOST_TEST(w.conn->buffered() == 0u);
    BOOST_TEST(pending_timers == 0u);
    w.conn->close();
    loop.sched.run();
    BOOST_TEST((*w.reason == CloseKind::local));
}

BOOST_AUTO_TEST_CASE(live_lists_a_connection_with_deadlines_once_and_not_its_groups_timer) {
    VirtualLoop loop(backend_under_test());
    SocketPair pair;
    Watched w;
    adopt(loop, w, pair.a.get(), 30s);
    BOOST_TEST(loop.sched.timer_count() == 1u);  // its group's, armed
    const std::vector<reactor::LiveItem> items = loop.sched.live();
    BOOST_REQUIRE(items.size() == 1u);
    BOOST_TEST((items[0].kind == reactor::LiveItem::Kind::connection));
    // An ordinary timer is still listed beside it.
    loop.sched.call_later(5s, [] {});
    BOOST_TEST(loop.sched.live().size() == 2u);
    loop.sched.close();
    BOOST_TEST((*w.reason == CloseKind::scheduler_closed));
    BOOST_TEST(loop.sched.timer_count() == 0u);  // the group ended with its connection
}
