// SPDX-License-Identifier: MIT
// echo_server, echo_server_streams and http_hello with --loops 2, run for real on 127.0.0.1 with
// the backend under test: several persistent clients are served; SIGUSR1
// prints one line per loop (its live connections and stats); SIGINT drains
// (the clients that stay are then ended by a second SIGINT, or finish by
// themselves) and the server exits 0 with one summary line that gives each
// loop's counts; --exit-after ends it by itself. Bounds, not timings: a
// count the server reads while clients are closing is checked within its
// range, and every wait is bounded.
#include <boost/test/unit_test.hpp>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/process.hpp"
#include "support/text_match.hpp"

using namespace std::chrono_literals;

namespace {

struct Server {
    std::string name;
    reactor_test::Child child;
    std::uint16_t port = 0;

    Server(const std::string& n, std::vector<std::string> more)
        : name(n), child(reactor_test::example_path(n), args(std::move(more))) {
        auto first = child.read_line(20s);
        BOOST_REQUIRE_MESSAGE(first.has_value(), name << " printed nothing");
        const auto m = reactor_test::full_match_groups(*first, R"(listening on 127\.0\.0\.1:(\d+) \(\w+\))");
        BOOST_REQUIRE_MESSAGE(m.has_value(), *first);
        port = static_cast<std::uint16_t>(std::stoi((*m)[1]));
    }

    static std::vector<std::string> args(std::vector<std::string> more) {
        std::vector<std::string> a{"--port", "0", "--max-seconds", "60", "--loops", "2", "--backend",
                                   std::string(reactor::to_string(reactor_test::backend_under_test()))};
        a.insert(a.end(), more.begin(), more.end());
        return a;
    }

    std::string line() {
        auto l = child.read_line(20s);
        BOOST_REQUIRE_MESSAGE(l.has_value(), name << " printed no line");
        return *l;
    }
};

// One exchange in the server's protocol, on a connection that stays open.
bool one_exchange(const std::string& name, int fd) {
    if (name == "http_hello") {
        if (!reactor_test::send_all(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")) return false;
        std::string got;
        while (got.find("Hello, world!") == std::string::npos) {
            char buf[4096];
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) return false;
            got.append(buf, static_cast<std::size_t>(n));
        }
        return true;
    }
    const std::string ping = "ping\n";
    return reactor_test::send_all(fd, ping) && reactor_test::recv_exactly(fd, ping.size()) == ping;
}

std::vector<int> served_clients(Server& s, int n) {
    std::vector<int> fds;
    for (int i = 0; i < n; ++i) {
        const int fd = reactor_test::connect_blocking(s.port);
        BOOST_REQUIRE(fd >= 0);
        BOOST_REQUIRE_MESSAGE(one_exchange(s.name, fd), s.name << ": client " << i << " not served");
        fds.push_back(fd);
    }
    return fds;
}

// SIGUSR1: one line per loop, in loop order; returns each loop's live count.
std::vector<unsigned long> live_per_loop(Server& s) {
    BOOST_REQUIRE(::kill(s.child.pid(), SIGUSR1) == 0);
    const std::string per_loop(s.name + R"(: loop (\d+): (\d+) live connection\(s\), (\d+) accepted, (\d+) iterations, .*)");
    std::vector<unsigned long> live;
    for (unsigned long i = 0; i < 2; ++i) {
        const std::string l = s.line();
        const auto m = reactor_test::full_match_groups(l, per_loop);
        BOOST_REQUIRE_MESSAGE(m.has_value(), l);
        BOOST_TEST(std::stoul((*m)[1]) == i);
        BOOST_TEST(std::stoul((*m)[4]) > 0u);  // that loop has run
        live.push_back(std::stoul((*m)[2]));
    }
    return live;
}

// The summary: "<name>: 4 connections, ..., 2 aborted; loop 0: 2 connections, ..., 1 aborted; loop 1: ...".
struct Summary {
    unsigned long connections = 0, aborted = 0;
    std::vector<unsigned long> loop_connections, loop_aborted;
};
Summary summary(Server& s) {
    const std::string l = s.line();
    const auto m = reactor_test::full_match_groups(l, s.name + R"(: (\d+) connections, ([^;]*)((; loop \d+: [^;]*)+))");
    BOOST_REQUIRE_MESSAGE(m.has_value(), l);
    Summary out{std::stoul((*m)[1]), 0, {}, {}};
    const std::string head = (*m)[2];
    const std::string loops = (*m)[3];
    const std::string one_loop = R"(; loop (\d+): (\d+) connections, (?:[^;]*, )?(\d+) aborted)";
    for (const auto& one : reactor_test::all_matches(loops, one_loop)) {
        BOOST_TEST(std::stoul(one[1]) == out.loop_connections.size());
        out.loop_connections.push_back(std::stoul(one[2]));
        out.loop_aborted.push_back(std::stoul(one[3]));
    }
    BOOST_REQUIRE_EQUAL(out.loop_connections.size(), 2u);
    BOOST_TEST(out.loop_connections[0] + out.loop_connections[1] == out.connections);
    out.aborted = out.loop_aborted[0] + out.loop_aborted[1];
    // The callback servers give the total too; echo_server_streams counts
    // its clients by how they ended instead, as on one loop.
    if (const auto a = reactor_test::partial_match_groups(head, R"((\d+) aborted$)"))
        BOOST_TEST(std::stoul((*a)[1]) == out.aborted);
    else
        BOOST_TEST(s.name == "echo_server_streams");
    return out;
}

// What the drain lines count.
std::string unit(const std::string& name) { return name == "echo_server_streams" ? "client" : "connection"; }

const std::vector<std::string> kServers{"echo_server", "echo_server_streams", "http_hello"};

}  // namespace

BOOST_AUTO_TEST_SUITE(group_server_examples)

BOOST_AUTO_TEST_CASE(sigusr1_prints_a_line_per_loop_and_a_second_sigint_aborts_with_one_summary) {
    for (const std::string& name : kServers) {
        BOOST_TEST_CONTEXT(name) {
            Server s(name, {});
            std::vector<int> clients = served_clients(s, 4);
            // least_connections: two each.
            BOOST_TEST(live_per_loop(s) == (std::vector<unsigned long>{2, 2}));

            ::close(clients[0]);
            ::close(clients[1]);
            BOOST_REQUIRE(::kill(s.child.pid(), SIGINT) == 0);
            const std::string draining = s.line();
            const auto m = reactor_test::full_match_groups(
                draining, name + ": SIGINT: stopped accepting; draining (\\d) " + unit(name) + R"(\(s\) for up to 5s)");
            BOOST_REQUIRE_MESSAGE(m.has_value(), draining);
            BOOST_TEST(std::stoul((*m)[1]) >= 2u);  // the two closes may not have reached it yet
            BOOST_TEST(std::stoul((*m)[1]) <= 4u);
            // Still served while draining, on both loops (least_connections
            // put clients 0 and 2 on loop 0, 1 and 3 on loop 1): each loop
            // has seen its closed client's end by the time it answers, so
            // exactly the two open ones are aborted.
            BOOST_TEST(one_exchange(name, clients[2]));
            BOOST_TEST(one_exchange(name, clients[3]));
            BOOST_REQUIRE(::kill(s.child.pid(), SIGINT) == 0);
            const std::string again = s.line();
            BOOST_CHECK_MESSAGE(
                reactor_test::full_match(again, name + ": SIGINT again: aborting [2-4] " + unit(name) + R"(\(s\))"), again);
            const Summary sum = summary(s);
            BOOST_TEST(sum.connections == 4u);
            BOOST_TEST(sum.loop_connections == (std::vector<unsigned long>{2, 2}));
            BOOST_TEST(sum.aborted == 2u);
            BOOST_TEST(s.child.wait(20s) == 0);
            for (std::size_t i = 2; i < clients.size(); ++i) ::close(clients[i]);
        }
    }
}

BOOST_AUTO_TEST_CASE(sigint_drains_and_clients_that_finish_end_it_without_an_abort) {
    for (const std::string spreading : {"round_robin", "reuse_port"}) {
        for (const std::string& name : kServers) {
            BOOST_TEST_CONTEXT(name << " --spreading " << spreading) {
                Server s(name, {"--spreading", spreading});
                std::vector<int> clients = served_clients(s, 4);
                const std::vector<unsigned long> live = live_per_loop(s);
                BOOST_TEST(live[0] + live[1] == 4u);
                if (spreading == "round_robin") BOOST_TEST(live == (std::vector<unsigned long>{2, 2}));
                BOOST_REQUIRE(::kill(s.child.pid(), SIGINT) == 0);
                BOOST_TEST(s.line().starts_with(name + ": SIGINT: stopped accepting; draining 4 " + unit(name) + "(s)"));
                for (int fd : clients) ::close(fd);
                const Summary sum = summary(s);
                BOOST_TEST(sum.connections == 4u);
                BOOST_TEST(sum.aborted == 0u);
                BOOST_TEST(s.child.wait(20s) == 0);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(exit_after_ends_the_server_by_itself) {
    for (const std::string spreading : {"least_connections", "reuse_port"}) {
        for (const std::string& name : kServers) {
            BOOST_TEST_CONTEXT(name << " --spreading " << spreading) {
                Server s(name, {"--spreading", spreading, "--exit-after", "3"});
                std::vector<int> clients = served_clients(s, 3);
                for (int fd : clients) ::close(fd);
                const Summary sum = summary(s);
                BOOST_TEST(sum.connections == 3u);
                BOOST_TEST(sum.aborted == 0u);
                BOOST_TEST(s.child.wait(20s) == 0);
            }
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
