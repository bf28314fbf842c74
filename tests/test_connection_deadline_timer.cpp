// SPDX-License-Identifier: MIT
// The connection's deadline timer as the loop keeps it: an fd owner's timer
// (Scheduler::set_owner_timer), a heap entry with no slot. Moving it earlier
// leaves the replaced entries in the heap; these cases check that they never
// time anything (not the connection, not a later owner of the same fd
// number) and never pile up. On every backend, on a virtual clock.
#define BOOST_TEST_MODULE connection_deadline_timer
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

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
    at(1s, 50s);   // earlier: 51 s (the 100 s entry is replaced)
    at(2s, 200s);  // later: the timer stays at 51 s
    at(3s, 30s);   // earlier: 33 s
    at(4s, 20s);   // earlier: 24 s
    at(5s, 40s);   // later: 45 s, the timer stays at 24 s, fires there and is set for 45 s
    std::size_t pending_timers = 0;
    loop.sched.call_at(start + 6s, [&] { pending_timers = loop.sched.timer_count(); });
    const std::uint64_t fired_before = loop.sched.stats().timers_fired;
    run_until(loop, [&] { return w.reason.has_value(); });
    BOOST_TEST((*w.reason == CloseKind::idle_timeout));
    BOOST_TEST((w.closed_at - start == 45s));
    // The connection's one timer, however many entries it left behind.
    BOOST_TEST(pending_timers == 1u);
    // Six of the test's own, and the connection's at 24 s and 45 s: the
    // replaced entries (100, 51 and 33 s) fired nothing.
    BOOST_TEST(loop.sched.stats().timers_fired - fired_before == 8u);
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
        first.conn->abort();  // its entries at 6 s and 10 s stay in the heap
        // The same number, a new owner, a timer due at one of those times.
        adopt(loop, second, second_pair.a.get(), 8s, number);
        BOOST_REQUIRE(second.conn->fd() == number);
    });
    const std::uint64_t fired_before = loop.sched.stats().timers_fired;
    run_until(loop, [&] { return second.reason.has_value(); });
    BOOST_TEST((*first.reason == CloseKind::local));
    BOOST_TEST((*second.reason == CloseKind::idle_timeout));
    BOOST_TEST((second.closed_at - start == 10s));
    // The test's two, and the second connection's at 10 s: neither entry of
    // the first connection fired, not even the one due with the second's.
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
    // The replaced entries are purged as cancelled timers are, once they
    // outnumber the live ones: far fewer than the moves.
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
