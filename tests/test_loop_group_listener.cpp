// SPDX-License-Identifier: MIT
// GroupListener: connections spread over a LoopGroup's loops, each made and
// served on its loop. Least connections balances 64 persistent clients to
// within one per loop; round-robin hands them out in turn; SO_REUSEPORT
// serves every client (the kernel's spread is not asserted: it hashes); a
// closed connection counts out of its loop; a storm is handed off one batch
// per iteration of the acceptor; bad calls are refused. Clients
// are blocking sockets on 127.0.0.1, connected one at a time (each answered
// before the next connects), so the order of hand-offs is the order of
// connects: nothing depends on timing.
//
// CTest runs the suite once per selector backend (REACTOR_TEST_BACKEND), and
// under ThreadSanitizer in .ci/run.
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <reactor/loop_group.hpp>
#include <reactor/net/address.hpp>
#include <reactor/net/group_listener.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"

namespace {

using reactor::Address;
using reactor::ConnectionPtr;
using reactor::GroupListener;
using reactor::LoopGroup;
using reactor::LoopGroupOptions;
using reactor::Spreading;
using reactor_test::backend_under_test;
using reactor_test::on;

LoopGroupOptions loops(std::size_t n) {
    LoopGroupOptions o;
    o.loops = n;
    o.loop_options = [](std::size_t) { return on(backend_under_test()); };
    return o;
}

// The server side: each connection answers "<loop index>\n" to every byte,
// from its own loop, and records which thread served it.
struct Served {
    std::mutex mutex;
    std::vector<std::size_t> loop_of_each;  // in the order the loops welcomed them
    bool on_wrong_thread = false;
};

GroupListener::AcceptCallback answering(LoopGroup& group, Served& served) {
    return [&group, &served](const ConnectionPtr& conn, std::size_t loop) {
        {
            std::lock_guard lock(served.mutex);
            served.loop_of_each.push_back(loop);
            if (group.current_index() != loop) served.on_wrong_thread = true;
        }
        conn->set_data_callback([loop](reactor::Connection& c, std::string_view) {
            c.write(std::to_string(loop) + "\n");
        });
    };
}

// Connects, sends a byte, reads the loop index the server answers with.
int connect_and_ask(std::uint16_t port, std::size_t& loop) {
    const int fd = reactor_test::connect_blocking(port);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(::send(fd, "?", 1, MSG_NOSIGNAL) == 1);
    std::string answer;
    char c;
    while (::recv(fd, &c, 1, 0) == 1 && c != '\n') answer.push_back(c);
    BOOST_REQUIRE(!answer.empty());
    loop = std::stoul(answer);
    return fd;
}

// Waits for a condition another thread makes true (a loop counting a
// connection out), checking every millisecond, for at most 20 s.
template <class Pred>
bool wait_until(Pred done) {
    for (int i = 0; i < 20'000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return done();
}

std::vector<std::size_t> per_loop(const std::vector<std::size_t>& loop_of_each, std::size_t n) {
    std::vector<std::size_t> counts(n, 0);
    for (std::size_t l : loop_of_each) ++counts[l];
    return counts;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(loop_group_listener)

BOOST_AUTO_TEST_CASE(least_connections_balances_64_persistent_clients_within_one) {
    constexpr std::size_t kLoops = 3;
    constexpr int kClients = 64;
    LoopGroup group(loops(kLoops));
    Served served;
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"), answering(group, served));
    group.start();
    std::vector<int> clients;
    std::vector<std::size_t> answered;
    for (int i = 0; i < kClients; ++i) {
        std::size_t loop = 0;
        clients.push_back(connect_and_ask(listener->address().port(), loop));
        answered.push_back(loop);
    }
    const std::vector<std::size_t> live = listener->live_connections();
    const std::vector<std::size_t> counts = per_loop(answered, kLoops);
    BOOST_TEST(live == counts, boost::test_tools::per_element());
    const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
    BOOST_TEST(*hi - *lo <= 1u);
    // With nothing closing, fewest-first is the order 0, 1, 2, 0, 1, 2...
    for (int i = 0; i < kClients; ++i) BOOST_TEST(answered[static_cast<std::size_t>(i)] == static_cast<std::size_t>(i) % kLoops);
    // A client leaves loop 1: the next connection goes there.
    ::close(clients[1]);
    clients[1] = -1;
    BOOST_REQUIRE(wait_until([&] { return listener->live_connections()[1] == counts[1] - 1; }));
    std::size_t next_loop = 99;
    clients.push_back(connect_and_ask(listener->address().port(), next_loop));
    BOOST_TEST(next_loop == 1u);
    for (int fd : clients)
        if (fd >= 0) ::close(fd);
    listener.reset();
    group.stop();
    std::lock_guard lock(served.mutex);
    BOOST_TEST(!served.on_wrong_thread);
    BOOST_TEST(served.loop_of_each.size() == kClients + 1u);
}

BOOST_AUTO_TEST_CASE(round_robin_hands_out_in_turn) {
    constexpr std::size_t kLoops = 2;
    LoopGroup group(loops(kLoops));
    Served served;
    GroupListener::Options options;
    options.spreading = Spreading::round_robin;
    options.acceptor = 1;
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"), answering(group, served), options);
    group.start();
    std::vector<int> clients;
    for (int i = 0; i < 10; ++i) {
        std::size_t loop = 0;
        const int fd = connect_and_ask(listener->address().port(), loop);
        BOOST_TEST(loop == static_cast<std::size_t>(i) % kLoops);
        // Closing at once: round-robin ignores load, so the turn goes on.
        ::close(fd);
    }
    BOOST_TEST(listener->handed() == (std::vector<std::uint64_t>{5, 5}), boost::test_tools::per_element());
    listener->close();
    group.stop();
    std::lock_guard lock(served.mutex);
    BOOST_TEST(!served.on_wrong_thread);
}

BOOST_AUTO_TEST_CASE(reuse_port_serves_every_client) {
    constexpr std::size_t kLoops = 2;
    constexpr int kClients = 32;
    LoopGroup group(loops(kLoops));
    Served served;
    GroupListener::Options options;
    options.spreading = Spreading::reuse_port;
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"), answering(group, served), options);
    group.start();
    std::vector<int> clients;
    std::vector<std::size_t> answered;
    for (int i = 0; i < kClients; ++i) {
        std::size_t loop = 0;
        clients.push_back(connect_and_ask(listener->address().port(), loop));
        answered.push_back(loop);
    }
    const std::vector<std::size_t> counts = per_loop(answered, kLoops);
    BOOST_TEST(listener->live_connections() == counts, boost::test_tools::per_element());
    BOOST_TEST(counts[0] + counts[1] == static_cast<std::size_t>(kClients));
    BOOST_TEST_MESSAGE("reuse_port spread over 2 loops: " << counts[0] << " / " << counts[1]);
    for (int fd : clients) ::close(fd);
    listener.reset();
    group.stop();
    std::lock_guard lock(served.mutex);
    BOOST_TEST(!served.on_wrong_thread);
}

// The group stops with connections open on every loop: each loop closes its
// own; the clients see their connections end.
BOOST_AUTO_TEST_CASE(stopping_the_group_ends_the_connections_on_every_loop) {
    constexpr std::size_t kLoops = 2;
    LoopGroup group(loops(kLoops));
    Served served;
    std::atomic<int> closed{0};
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"),
                                          [&](const ConnectionPtr& conn, std::size_t loop) {
                                              answering(group, served)(conn, loop);
                                              conn->set_close_callback([&](reactor::Connection&, const reactor::CloseReason&) { ++closed; });
                                          });
    for (std::size_t i = 0; i < kLoops; ++i)
        group.loop(i).set_exception_handler([](const reactor::ErrorContext&) {});  // close() names what is alive
    group.start();
    std::vector<int> clients;
    for (int i = 0; i < 4; ++i) {
        std::size_t loop = 0;
        clients.push_back(connect_and_ask(listener->address().port(), loop));
    }
    // Posts in flight to both loops as they stop.
    std::atomic<bool> go{true};
    std::thread poster([&] {
        for (int i = 0; i < 10'000 && go; ++i)
            for (std::size_t l = 0; l < kLoops; ++l) (void)group.loop(l).try_call_soon_threadsafe([] {});
    });
    group.stop();
    go = false;
    poster.join();
    BOOST_TEST(closed == 4);
    for (int fd : clients) {
        char c;
        BOOST_TEST(::recv(fd, &c, 1, 0) <= 0);  // ended by the server
        ::close(fd);
    }
    BOOST_TEST(listener->live_connections() == (std::vector<std::size_t>{0, 0}), boost::test_tools::per_element());
}

// Issue 49: the acceptor takes one batch per wake-up, so the rest of its
// loop runs between batches of a storm. A callback that re-posts itself on
// the acceptor's loop sees the hand-off count grow by at most accept_batch
// from one iteration to the next (all 100 at once before).
BOOST_AUTO_TEST_CASE(the_acceptor_hands_off_a_storm_one_batch_per_iteration) {
    constexpr std::size_t kLoops = 2;
    constexpr std::uint64_t kClients = 100;
    LoopGroup group(loops(kLoops));
    Served served;
    GroupListener::Options options;
    BOOST_TEST(options.listener.accept_batch == 16u);
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"), answering(group, served), options);
    std::vector<int> clients;  // connected before the loops run: they wait in the backlog
    for (std::uint64_t i = 0; i < kClients; ++i) {
        clients.push_back(reactor_test::connect_blocking(listener->address().port()));
        BOOST_REQUIRE(clients.back() >= 0);
    }
    auto handed = [&] {
        const std::vector<std::uint64_t> h = listener->handed();
        return h[0] + h[1];
    };
    std::vector<std::uint64_t> seen;  // loop 0's until the group stops
    std::atomic<bool> ticked_last{false};
    std::function<void()> tick = [&] {
        seen.push_back(handed());
        if (seen.back() < kClients && seen.size() < 100'000) {
            group.loop(0).call_soon(tick);
        } else {
            ticked_last = true;
        }
    };
    group.loop(0).call_soon(tick);
    group.start();
    BOOST_REQUIRE(wait_until([&] { return ticked_last.load(); }));
    group.stop();
    BOOST_REQUIRE(seen.size() >= 2u);
    BOOST_TEST(seen.front() == 0u);
    BOOST_TEST(seen.back() == kClients);
    for (std::size_t i = 1; i < seen.size(); ++i)
        BOOST_TEST(seen[i] - seen[i - 1] <= options.listener.accept_batch,
                   "iteration " << i << ": " << seen[i - 1] << " -> " << seen[i]);
    for (int fd : clients) ::close(fd);
}

BOOST_AUTO_TEST_CASE(bad_calls_are_refused) {
    LoopGroup group(loops(2));
    Served served;
    GroupListener::Options far;
    far.acceptor = 2;
    BOOST_CHECK_THROW((void)GroupListener::listen(group, Address::parse("127.0.0.1:0"), answering(group, served), far),
                      std::out_of_range);
    GroupListener::Options unix_reuse;
    unix_reuse.spreading = Spreading::reuse_port;
    BOOST_CHECK_THROW((void)GroupListener::listen(group, Address::unix_path("/tmp/reactor-test-group-listener.sock"),
                                                  answering(group, served), unix_reuse),
                      std::invalid_argument);
    GroupListener::Options no_batch;
    no_batch.listener.accept_batch = 0;
    BOOST_CHECK_THROW(
        (void)GroupListener::listen(group, Address::parse("127.0.0.1:0"), answering(group, served), no_batch),
        std::invalid_argument);
    group.start();
    BOOST_CHECK_THROW((void)GroupListener::listen(group, Address::parse("127.0.0.1:0"), answering(group, served)),
                      std::logic_error);
    group.stop();
}

// Issue 49, item 8: max_connections counts every loop's connections
// together. With 3 open over 2 loops, a 4th client is closed at once (by the
// acceptor before any hand-off, or by the reuse_port listener that took it);
// once one leaves, the next is served.
BOOST_AUTO_TEST_CASE(max_connections_counts_the_whole_group) {
    for (const Spreading spreading : {Spreading::least_connections, Spreading::reuse_port}) {
        BOOST_TEST_CONTEXT("spreading " << static_cast<int>(spreading)) {
            constexpr std::size_t kLoops = 2;
            constexpr std::size_t kMax = 3;
            LoopGroup group(loops(kLoops));
            Served served;
            GroupListener::Options options;
            options.spreading = spreading;
            options.listener.max_connections = kMax;
            auto listener =
                GroupListener::listen(group, Address::parse("127.0.0.1:0"), answering(group, served), options);
            group.start();
            const std::uint16_t port = listener->address().port();
            std::vector<int> clients;
            for (std::size_t i = 0; i < kMax; ++i) {
                std::size_t loop = 0;
                clients.push_back(connect_and_ask(port, loop));
            }
            auto total = [&] {
                std::size_t n = 0;
                for (std::size_t l : listener->live_connections()) n += l;
                return n;
            };
            BOOST_TEST(total() == kMax);
            for (int i = 0; i < 4; ++i) {  // each beyond the cap: closed at once, never served
                const int fd = reactor_test::connect_blocking(port);
                BOOST_REQUIRE(fd >= 0);
                (void)::send(fd, "?", 1, MSG_NOSIGNAL);
                char c;
                BOOST_TEST(::recv(fd, &c, 1, 0) <= 0);
                ::close(fd);
            }
            BOOST_TEST(total() == kMax);
            {
                std::lock_guard lock(served.mutex);
                BOOST_TEST(served.loop_of_each.size() == kMax);
            }
            ::close(clients[0]);
            BOOST_REQUIRE(wait_until([&] { return total() == kMax - 1; }));
            std::size_t loop = 0;
            clients[0] = connect_and_ask(port, loop);
            BOOST_TEST(total() == kMax);
            for (int fd : clients) ::close(fd);
            listener.reset();
            group.stop();
            std::lock_guard lock(served.mutex);
            BOOST_TEST(!served.on_wrong_thread);
            BOOST_TEST(served.loop_of_each.size() == kMax + 1);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
