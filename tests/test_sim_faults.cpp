// SPDX-License-Identifier: MIT
// The simulated network's faults (sim::Params, "Faults"), each observed on
// its own with its rate at 100 %: a connection broken after a prefix (both
// sides reset), a connect refused though a listener waits, a clogged link
// that delivers late, partitions both ways and one way that hold what is
// sent until they heal. Latency is fixed (1 ms, no jitter) so the times
// are exact. Virtual time only.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/testing/sim/world.hpp>

using namespace std::chrono_literals;
using reactor::CloseKind;
using reactor::CloseReason;
using reactor::Connection;
using reactor::ConnectionPtr;
using reactor::Duration;
namespace sim = reactor::testing::sim;

namespace {

constexpr std::uint16_t kPort = 7;

sim::Params exact() {
    sim::Params p;
    p.min_latency = p.max_latency = 1ms;
    p.max_jitter = Duration::zero();
    p.short_write_percent = p.short_read_percent = 0;
    return p;
}

reactor::ListenerPtr echo(sim::Host& host, std::vector<CloseReason>* ends = nullptr) {
    return reactor::Listener::listen(host.scheduler(), host.address(kPort), [ends](const ConnectionPtr& c) {
        c->set_data_callback([](Connection& c, std::string_view d) { c.write(d); });
        if (ends) c->set_close_callback([ends](Connection&, const CloseReason& r) { ends->push_back(r); });
    });
}

// A client's connection: when it was established, what came back and when.
struct Probe {
    ConnectionPtr conn;
    std::error_code error;
    bool answered = false;
    Duration connected_at{};
    std::string received;
    std::vector<Duration> arrivals;
    std::optional<CloseReason> end;

    void start(sim::World& world, sim::Host& from, const std::string& to) {
        reactor::connect(from.scheduler(), to, kPort, [this, &world](ConnectionPtr c, std::error_code e) {
            answered = true;
            error = e;
            connected_at = world.elapsed();
            conn = c;
            if (!c) return;
            c->set_data_callback([this, &world](Connection&, std::string_view d) {
                received += d;
                arrivals.push_back(world.elapsed());
            });
            c->set_close_callback([this](Connection&, const CloseReason& r) { end = r; });
        });
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_connection_drawn_to_break_delivers_a_prefix_then_both_sides_are_reset) {
    sim::Params p = exact();
    p.reset_percent = 100;
    p.max_reset_prefix = 2'000;
    sim::World world(21, p);
    world.trace().keep_lines(true);
    std::vector<CloseReason> server_ends;
    auto listener = echo(world.host("server"), &server_ends);
    Probe probe;
    probe.start(world, world.host("client"), "server");
    BOOST_REQUIRE(world.run_until([&] { return probe.answered; }, 1s));
    BOOST_REQUIRE(probe.conn);
    probe.conn->write(std::string(10'000, 'x'));
    BOOST_REQUIRE(world.run_until([&] { return probe.end && !server_ends.empty(); }, 10s));
    BOOST_TEST((probe.end->kind == CloseKind::reset), probe.end->to_string());
    BOOST_TEST((server_ends[0].kind == CloseKind::reset), server_ends[0].to_string());
    BOOST_TEST(probe.received.size() <= 2'000u);  // at most the prefix, whichever way it broke
    BOOST_TEST(probe.received == std::string(probe.received.size(), 'x'));
    const auto& lines = world.trace().lines();
    BOOST_TEST(std::count_if(lines.begin(), lines.end(),
                             [](const std::string& l) { return l.find("reset (fault)") != std::string::npos; }) == 2);
    listener->close();
    world.run_for(1s);
    BOOST_TEST(world.host("server").scheduler().empty());
    BOOST_TEST(world.host("client").scheduler().empty());
}

BOOST_AUTO_TEST_CASE(a_connect_drawn_to_be_refused_is_refused_though_a_listener_waits) {
    sim::Params p = exact();
    p.refuse_percent = 100;
    sim::World world(22, p);
    auto listener = echo(world.host("server"));
    Probe probe;
    probe.start(world, world.host("client"), "server");
    BOOST_REQUIRE(world.run_until([&] { return probe.answered; }, 1s));
    BOOST_TEST((probe.error == std::error_code(ECONNREFUSED, std::generic_category())), probe.error.message());
    BOOST_TEST((probe.connected_at == Duration(2ms)));  // there and back
    BOOST_TEST(listener->connections().empty());
}

BOOST_AUTO_TEST_CASE(a_clogged_link_delivers_late_and_in_order) {
    sim::Params p = exact();
    p.clog_percent = 100;
    p.max_clog = 500ms;
    sim::World world(23, p);
    auto listener = echo(world.host("server"));
    Probe probe;
    probe.start(world, world.host("client"), "server");
    BOOST_REQUIRE(world.run_until([&] { return probe.answered; }, 10s));
    BOOST_REQUIRE(probe.conn);
    BOOST_TEST((probe.connected_at > Duration(2ms)));  // unclogged it is exactly 2 ms
    BOOST_TEST((probe.connected_at <= Duration(2ms + 2 * 500ms)));
    for (char c = 'a'; c <= 'j'; ++c) probe.conn->write(std::string(1, c));
    BOOST_REQUIRE(world.run_until([&] { return probe.received.size() == 10u; }, 60s));
    BOOST_TEST(probe.received == "abcdefghij");
    probe.conn->close();
    listener->close();
    world.run_for(10s);
}

namespace {

// Two hosts; from t = 1 s on, partitions of exactly 2 s follow stable
// periods of exactly 1 s. A connection made at 0 sends one byte each way
// at 1.5 s, inside the first partition.
struct PartitionRun {
    Duration client_got{}, server_got{};
    std::string cut_line;
};

PartitionRun partition_run(std::uint64_t seed, unsigned one_way_percent) {
    sim::Params p = exact();
    p.partition_percent = 100;
    p.one_way_percent = one_way_percent;
    p.min_stable = p.max_stable = 1s;
    p.min_partition = p.max_partition = 2s;
    sim::World world(seed, p);
    world.trace().keep_lines(true);
    sim::Host& server = world.host("server");
    sim::Host& client = world.host("client");
    PartitionRun run;
    ConnectionPtr accepted;
    auto listener = reactor::Listener::listen(server.scheduler(), server.address(kPort), [&](const ConnectionPtr& c) {
        accepted = c;
        c->set_data_callback([&](Connection&, std::string_view) { run.server_got = world.elapsed(); });
    });
    Probe probe;
    probe.start(world, client, "server");
    BOOST_REQUIRE(world.run_until([&] { return probe.conn && accepted; }, 500ms));
    BOOST_TEST((probe.connected_at == Duration(2ms)));
    // An idle world does not move time on: a timer takes it to 1.5 s.
    client.scheduler().call_later(1500ms - world.elapsed(), [&] {
        probe.conn->write("c");
        accepted->write("s");
    });
    BOOST_REQUIRE(world.run_until([&] { return run.server_got != Duration{} && !probe.arrivals.empty(); }, 10s));
    run.client_got = probe.arrivals[0];
    for (const std::string& l : world.trace().lines())
        if (l.find("partition:") != std::string::npos && run.cut_line.empty()) run.cut_line = l;
    probe.conn->close();
    listener->close();
    world.run_for(10s);
    BOOST_TEST(server.scheduler().empty());
    BOOST_TEST(client.scheduler().empty());
    return run;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_partition_both_ways_holds_both_directions_until_it_heals) {
    const PartitionRun run = partition_run(24, 0);
    BOOST_TEST(run.cut_line.find("(both ways) from 1000000000 ns to 3000000000 ns") != std::string::npos,
               run.cut_line);
    // Sent at 1.5 s, 1 ms on the wire: held until the heal at 3 s.
    BOOST_TEST((run.server_got == Duration(3s)));
    BOOST_TEST((run.client_got == Duration(3s)));
}

BOOST_AUTO_TEST_CASE(a_one_way_partition_holds_one_direction_only_until_it_heals) {
    for (std::uint64_t seed : {25, 26, 27, 28}) {
        BOOST_TEST_CONTEXT("seed " << seed) {
            const PartitionRun run = partition_run(seed, 100);
            BOOST_TEST(run.cut_line.find("(both ways)") == std::string::npos, run.cut_line);
            const bool held_to_server = run.server_got == Duration(3s);
            const bool held_to_client = run.client_got == Duration(3s);
            BOOST_TEST(held_to_server != held_to_client);
            BOOST_TEST((std::min(run.server_got, run.client_got) == Duration(1501ms)));
        }
    }
}
