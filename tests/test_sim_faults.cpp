// SPDX-License-Identifier: MIT
// The simulated network's faults (sim::Params, "Faults"), each observed on
// its own with its rate at 100 %: a connection broken after a prefix (both
// sides reset), a connect refused though a listener waits, a clogged link
// that delivers late, partitions both ways and one way that hold what is
// sent until they heal; datagrams lost, duplicated and reordered; a host's
// fds running out; its kernel's resources failing (socket, accept4, connect,
// send, recv: ENOBUFS or ENOMEM), on one call, then over a swarm of echo
// worlds. Latency is fixed (1 ms, no jitter) so the times are exact.
// Virtual time only.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/net/udp_socket.hpp>
#include <reactor/testing/sim/swarm.hpp>
#include <reactor/testing/sim/world.hpp>

#include "../examples/09_echo_server/echo.hpp"

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

// ---------------------------------------------------------------- UDP

namespace {

struct Arrival {
    int number = 0;
    Duration at{};
};

struct Blast {
    std::vector<Arrival> arrivals;
    std::size_t lost_lines = 0;
    std::size_t duplicate_lines = 0;
};

// `count` datagrams, numbered, one every 100 us from the client to the
// server, over a link of 1 ms latency and up to 500 us jitter.
Blast udp_blast(std::uint64_t seed, const sim::Params& faults, int count = 400) {
    sim::Params p = exact();
    p.max_jitter = 500us;
    p.udp_loss_percent = faults.udp_loss_percent;
    p.udp_duplicate_percent = faults.udp_duplicate_percent;
    p.udp_reorder_percent = faults.udp_reorder_percent;
    p.max_reorder = faults.max_reorder;
    sim::World world(seed, p);
    world.trace().keep_lines(true);
    sim::Host& server = world.host("server");
    sim::Host& client = world.host("client");
    Blast blast;
    auto in = reactor::UdpSocket::bind(server.scheduler(), server.address(kPort));
    in->set_datagram_callback([&](reactor::UdpSocket&, std::string_view d, const reactor::Address&) {
        blast.arrivals.push_back(Arrival{std::stoi(std::string(d)), world.elapsed()});
    });
    auto out = reactor::UdpSocket::bind(client.scheduler(), client.address(0));
    for (int i = 0; i < count; ++i)
        client.scheduler().call_later(std::chrono::microseconds(100 * i),
                                      [&, i] { BOOST_TEST(out->send_to(std::to_string(i), in->local_address())); });
    BOOST_TEST((world.run_for(10s) == reactor::RunStatus::idle));
    for (const std::string& l : world.trace().lines()) {
        if (l.find("udp lost (fault)") != std::string::npos) ++blast.lost_lines;
        if (l.find("udp duplicate (fault)") != std::string::npos) ++blast.duplicate_lines;
    }
    in->close();
    out->close();
    world.run_for(1s);
    BOOST_TEST(server.scheduler().empty());
    BOOST_TEST(client.scheduler().empty());
    return blast;
}

std::vector<int> numbers(const Blast& b) {
    std::vector<int> n;
    for (const Arrival& a : b.arrivals) n.push_back(a.number);
    return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_lost_datagram_never_arrives_and_the_rest_arrive_when_they_would_have) {
    const Blast plain = udp_blast(40, {});
    BOOST_REQUIRE(plain.arrivals.size() == 400u);
    BOOST_TEST(plain.lost_lines == 0u);
    sim::Params lossy;
    lossy.udp_loss_percent = 30;
    const Blast lost = udp_blast(40, lossy);
    // About 30 % lost (400 draws: far from 0 and from all), each in the trace.
    BOOST_TEST(lost.arrivals.size() > 200u);
    BOOST_TEST(lost.arrivals.size() < 360u);
    BOOST_TEST(lost.lost_lines == 400u - lost.arrivals.size());
    // The survivors, in order, each at the time it arrived without the
    // fault: the faults draw from their own stream, jitter from another.
    for (const Arrival& a : lost.arrivals) {
        BOOST_REQUIRE(a.number < 400);
        BOOST_TEST((a.at == plain.arrivals[static_cast<std::size_t>(a.number)].at), "datagram " << a.number);
    }
    const std::vector<int> n = numbers(lost);
    BOOST_TEST(std::is_sorted(n.begin(), n.end()));
    sim::Params all;
    all.udp_loss_percent = 100;
    BOOST_TEST(udp_blast(40, all).arrivals.empty());
}

BOOST_AUTO_TEST_CASE(a_duplicated_datagram_arrives_twice_the_copy_no_earlier) {
    sim::Params twice;
    twice.udp_duplicate_percent = 100;
    twice.max_reorder = 2ms;
    const Blast b = udp_blast(41, twice, 100);
    BOOST_TEST(b.arrivals.size() == 200u);
    BOOST_TEST(b.duplicate_lines == 100u);
    for (int i = 0; i < 100; ++i) {
        std::vector<Duration> at;
        for (const Arrival& a : b.arrivals)
            if (a.number == i) at.push_back(a.at);
        BOOST_TEST_CONTEXT("datagram " << i) {
            BOOST_REQUIRE(at.size() == 2u);
            BOOST_TEST((at[0] <= at[1]));
            BOOST_TEST((at[1] - at[0] <= 2ms));
        }
    }
}

BOOST_AUTO_TEST_CASE(a_reordered_datagram_is_overtaken_and_every_datagram_arrives) {
    sim::Params shuffled;
    shuffled.udp_reorder_percent = 20;
    shuffled.max_reorder = 5ms;
    const Blast b = udp_blast(42, shuffled);
    std::vector<int> n = numbers(b);
    BOOST_TEST(n.size() == 400u);
    BOOST_TEST(!std::is_sorted(n.begin(), n.end()));
    std::size_t overtaken = 0;
    for (std::size_t i = 1; i < n.size(); ++i) overtaken += n[i] < n[i - 1] ? 1 : 0;
    BOOST_TEST(overtaken > 10u);
    std::sort(n.begin(), n.end());
    for (int i = 0; i < 400; ++i) BOOST_TEST(n[static_cast<std::size_t>(i)] == i);
    // Without the fault, the same jitter keeps them in order.
    const std::vector<int> plain = numbers(udp_blast(42, {}));
    BOOST_TEST(std::is_sorted(plain.begin(), plain.end()));
}

// A swarm seed's Params: the datagram faults come with the faults, within
// their bounds, and print; without faults they are off.
BOOST_AUTO_TEST_CASE(draw_params_draws_the_udp_faults_with_the_faults) {
    unsigned on = 0;
    for (std::uint64_t seed = 1; seed <= 50; ++seed) {
        const sim::Params calm = sim::draw_params(seed);
        BOOST_TEST(calm.udp_loss_percent + calm.udp_duplicate_percent + calm.udp_reorder_percent == 0u);
        const sim::Params p = sim::draw_params(seed, true);
        BOOST_TEST(p.udp_loss_percent <= 10u);
        BOOST_TEST(p.udp_duplicate_percent <= 10u);
        BOOST_TEST(p.udp_reorder_percent <= 10u);
        BOOST_TEST((p.max_reorder > Duration::zero() && p.max_reorder <= 50ms));
        if (p.udp_loss_percent != 0) {
            ++on;
            BOOST_TEST(sim::to_string(p).find(" udp loss " + std::to_string(p.udp_loss_percent) + "%") !=
                           std::string::npos,
                       sim::to_string(p));
        }
        // The network and the other faults are what the seed drew without them.
        BOOST_TEST((p.min_latency == calm.min_latency && p.max_buffer == calm.max_buffer));
        BOOST_TEST(sim::to_string(calm).find("udp") == std::string::npos);
    }
    BOOST_TEST(on > 20u);
}

// ---------------------------------------------------------------- fd exhaustion

namespace {

// A client of the echo: connects, sends `payload` in one write, reads the
// echo back, then ends its side; the echo closes, and so does it.
struct EchoUser {
    std::string payload;
    std::string echoed;
    std::error_code connect_error;
    std::optional<CloseReason> end;
    Duration connected_at{};
    Duration done_at{};

    void start(sim::World& world, sim::Host& host) {
        reactor::connect(host.scheduler(), "server", kPort, [this, &world](ConnectionPtr c, std::error_code e) {
            connect_error = e;
            if (!c) return;
            connected_at = world.elapsed();
            c->set_data_callback([this, &world](Connection& c, std::string_view d) {
                echoed += d;
                if (echoed.size() == payload.size()) {
                    done_at = world.elapsed();
                    c.write_eof();
                }
            });
            c->set_close_callback([this](Connection&, const CloseReason& r) { end = r; });
            c->write(payload);
        });
    }
};

}  // namespace

// examples/09's echo (as test_sim_examples runs it) on a host that may hold
// three fds: its listener and two connections. Six clients come at once:
// two are served, the others wait in the listener's queue while accept4
// says EMFILE and the Listener pauses accepting (Options::accept_pause),
// and are served as fds free. Nobody hangs, no byte is lost, and once the
// crowd is gone a late client is served at once.
BOOST_AUTO_TEST_CASE(a_host_out_of_fds_makes_the_echo_pause_accepting_and_serve_everyone_in_turn) {
    sim::World world(50, exact());
    sim::Host& server = world.host("server");
    server.set_fd_limit(3);
    std::uint64_t echoed = 0;
    int open = 0;
    int most_open = 0;
    reactor::Listener::Options options;
    options.connection = examples::echo_connection_options({});
    options.accept_pause = std::chrono::milliseconds(100);
    auto listener = reactor::Listener::listen(
        server.scheduler(), server.address(kPort),
        [&](const ConnectionPtr& c) {
            most_open = std::max(most_open, ++open);
            examples::echo(c, echoed);
            // The echo keeps its own data callback; the close is ours to watch.
            c->set_close_callback([&](Connection&, const CloseReason&) { --open; });
        },
        options);
    std::vector<std::string> errors;
    listener->set_error_callback([&](reactor::Listener&, std::error_code e, std::string_view what) {
        errors.push_back(std::string(what) + ": " + e.message());
    });
    std::vector<std::unique_ptr<EchoUser>> users;
    for (int i = 0; i < 6; ++i) {
        auto& u = users.emplace_back(std::make_unique<EchoUser>());
        u->payload = std::string(30'000 + 1000 * static_cast<std::size_t>(i), static_cast<char>('a' + i));
        u->start(world, world.host("client-" + std::to_string(i)));
    }
    const auto all_ended = [&] {
        return std::all_of(users.begin(), users.end(), [](const auto& u) { return u->end.has_value(); });
    };
    BOOST_REQUIRE(world.run_until(all_ended, 60s));
    for (const auto& u : users) {
        BOOST_TEST(!u->connect_error);  // the client's side was established: it waited in the queue
        BOOST_TEST(u->echoed == u->payload);
        BOOST_TEST((u->end->kind == CloseKind::eof), u->end->to_string());
    }
    BOOST_TEST(most_open == 2);
    BOOST_TEST(listener->accept_failures() > 0u);
    BOOST_REQUIRE(!errors.empty());
    BOOST_TEST(errors[0].find("Too many open files") != std::string::npos, errors[0]);
    // Served in turn: the last ones finished well after the first.
    Duration first = users[0]->done_at, last = users[0]->done_at;
    for (const auto& u : users) {
        first = std::min(first, u->done_at);
        last = std::max(last, u->done_at);
    }
    BOOST_TEST((last - first >= 100ms));
    BOOST_TEST(echoed == 6u * 30'000u + 15'000u);

    // Recovered: with the crowd gone, a late client is served without a pause.
    BOOST_TEST((world.run_for(1s) == reactor::RunStatus::idle));
    BOOST_TEST(open == 0);
    const std::uint64_t failures = listener->accept_failures();
    EchoUser late;
    late.payload = "late";
    const Duration start = world.elapsed();
    late.start(world, world.host("client-late"));
    BOOST_REQUIRE(world.run_until([&] { return late.end.has_value(); }, 10s));
    BOOST_TEST(late.echoed == "late");
    BOOST_TEST((late.done_at - start == 4ms));  // connect and echo: two round trips of 1 ms each way
    BOOST_TEST(listener->accept_failures() == failures);

    // A client host out of fds: its connect fails with EMFILE at once.
    sim::Host& crowded = world.host("crowded");
    crowded.set_fd_limit(1);
    auto squatter = reactor::UdpSocket::bind(crowded.scheduler(), crowded.address(0));
    EchoUser refused;
    refused.payload = "x";
    refused.start(world, crowded);
    world.run_for(1s);
    BOOST_TEST((refused.connect_error == std::error_code(EMFILE, std::generic_category())),
               refused.connect_error.message());
    squatter->close();
    listener->close();
    world.run_for(1s);
    BOOST_TEST(server.scheduler().empty());
}

// ---------------------------------------------------------------- kernel resources failing

namespace {

std::error_code errno_code(int e) { return std::error_code(e, std::generic_category()); }

bool resource_errno(const std::error_code& e) { return e == errno_code(ENOBUFS) || e == errno_code(ENOMEM); }

}  // namespace

// accept4() says ENOMEM (Params::resource_fault_percent, here on the
// server's accept4 only): the Listener pauses accepting (accept_pause),
// retries, and serves every client once the kernel has memory again; the
// clients wait in the backlog meanwhile, none lost.
BOOST_AUTO_TEST_CASE(accept4_out_of_memory_pauses_accepting_and_loses_no_client) {
    sim::World world(60, exact());
    sim::Host& server = world.host("server");
    std::uint64_t echoed = 0;
    reactor::Listener::Options options;
    options.connection = examples::echo_connection_options({});
    options.accept_pause = std::chrono::milliseconds(100);
    auto listener = reactor::Listener::listen(
        server.scheduler(), server.address(kPort), [&](const ConnectionPtr& c) { examples::echo(c, echoed); },
        options);
    std::vector<std::string> errors;
    listener->set_error_callback([&](reactor::Listener&, std::error_code e, std::string_view what) {
        errors.push_back(std::string(what) + ": " + e.message());
    });
    server.set_resource_faults(100, sim::Host::accept_call);
    std::vector<std::unique_ptr<EchoUser>> users;
    for (int i = 0; i < 4; ++i) {
        auto& u = users.emplace_back(std::make_unique<EchoUser>());
        u->payload = std::string(5'000, static_cast<char>('a' + i));
        u->start(world, world.host("client-" + std::to_string(i)));
    }
    world.run_for(350ms);
    BOOST_TEST(listener->connections().empty());
    BOOST_TEST(listener->accept_failures() >= 3u);  // one try per pause
    BOOST_REQUIRE(!errors.empty());
    BOOST_TEST(errors[0].find("Cannot allocate memory") != std::string::npos, errors[0]);
    for (const auto& u : users) BOOST_TEST(!u->end.has_value());
    server.set_resource_faults(0);
    const auto all_ended = [&] {
        return std::all_of(users.begin(), users.end(), [](const auto& u) { return u->end.has_value(); });
    };
    BOOST_REQUIRE(world.run_until(all_ended, 10s));
    for (const auto& u : users) {
        BOOST_TEST(!u->connect_error);
        BOOST_TEST(u->echoed == u->payload);
        BOOST_TEST((u->end->kind == CloseKind::eof), u->end->to_string());
    }
    BOOST_TEST(echoed == 4u * 5'000u);
    listener->close();
    world.run_for(1s);
    BOOST_TEST(server.scheduler().empty());
}

// send() says ENOBUFS on one client, recv() says ENOMEM on another: each
// of those connections ends with EndKind::error and that errno; the server
// and a third client go on.
BOOST_AUTO_TEST_CASE(send_or_recv_out_of_buffers_ends_that_connection_with_the_errno_and_the_others_go_on) {
    sim::World world(61, exact());
    auto listener = echo(world.host("server"));
    sim::Host& sender = world.host("sender");
    sim::Host& receiver = world.host("receiver");
    sim::Host& bystander = world.host("bystander");
    Probe a, b, c;
    a.start(world, sender, "server");
    b.start(world, receiver, "server");
    c.start(world, bystander, "server");
    BOOST_REQUIRE(world.run_until([&] { return a.conn && b.conn && c.conn; }, 1s));
    sender.set_resource_faults(100, sim::Host::send_call);
    a.conn->write("never sent");
    receiver.set_resource_faults(100, sim::Host::recv_call);
    b.conn->write("sent, its echo never read");
    c.conn->write("hello");
    BOOST_REQUIRE(world.run_until([&] { return a.end && b.end && c.received == "hello"; }, 1s));
    BOOST_TEST((a.end->kind == CloseKind::error), a.end->to_string());
    BOOST_TEST((a.end->error == errno_code(ENOBUFS)), a.end->error.message());
    BOOST_TEST((b.end->kind == CloseKind::error), b.end->to_string());
    BOOST_TEST((b.end->error == errno_code(ENOMEM)), b.end->error.message());
    BOOST_TEST(b.received.empty());
    BOOST_TEST(!c.end.has_value());
    c.conn->write(" again");
    BOOST_REQUIRE(world.run_until([&] { return c.received == "hello again"; }, 1s));
    c.conn->close();
    listener->close();
    world.run_for(1s);
    BOOST_TEST(world.host("server").scheduler().empty());
}

// socket() or connect() says ENOBUFS: reactor::connect reports it, nothing
// reaches the server; the next connect, with memory again, succeeds.
BOOST_AUTO_TEST_CASE(socket_or_connect_out_of_buffers_is_reported_by_connect) {
    for (const unsigned call : {unsigned{sim::Host::socket_call}, unsigned{sim::Host::connect_call}}) {
        BOOST_TEST_CONTEXT("call mask " << call) {
            sim::World world(62, exact());
            auto listener = echo(world.host("server"));
            sim::Host& client = world.host("client");
            client.set_resource_faults(100, call);
            Probe failed;
            failed.start(world, client, "server");
            BOOST_REQUIRE(world.run_until([&] { return failed.answered; }, 1s));
            BOOST_TEST((failed.error == errno_code(ENOBUFS)), failed.error.message());
            BOOST_TEST(!failed.conn);
            world.run_for(100ms);
            BOOST_TEST(listener->connections().empty());
            client.set_resource_faults(0);
            Probe again;
            again.start(world, client, "server");
            BOOST_REQUIRE(world.run_until([&] { return again.answered; }, 1s));
            BOOST_TEST(!again.error, again.error.message());
            BOOST_REQUIRE(again.conn);
            again.conn->close();
            listener->close();
            world.run_for(1s);
        }
    }
}

// draw_params draws the rate with the faults, 0 or 1 %, from its own
// stream: the rest of a seed's draw is what it was, and it prints.
BOOST_AUTO_TEST_CASE(draw_params_draws_the_resource_faults_with_the_faults_from_their_own_stream) {
    unsigned on = 0;
    for (std::uint64_t seed = 1; seed <= 50; ++seed) {
        BOOST_TEST(sim::draw_params(seed).resource_fault_percent == 0u);
        sim::Params p = sim::draw_params(seed, true);
        BOOST_TEST(p.resource_fault_percent <= 1u);
        if (p.resource_fault_percent != 0) {
            ++on;
            BOOST_TEST(sim::to_string(p).find(" resource-fault 1%") != std::string::npos, sim::to_string(p));
        }
        BOOST_TEST(sim::to_string(sim::draw_params(seed, true, true)).find("resource-fault") ==
                   sim::to_string(p).find("resource-fault"));
        p.resource_fault_percent = 0;
        BOOST_TEST(sim::to_string(p).find("resource") == std::string::npos);
    }
    BOOST_TEST((on > 10u && on < 40u), on);
}

// examples/09's echo with every host's accept4(), connect(), send() and
// recv() (and the clients' socket()) failing 2 % of the time, over 20 seeds' networks: each
// client gets every byte back in order, or its connection ended for a
// reason the world caused (its own call's ENOBUFS/ENOMEM, or the server's,
// which aborts that connection: a reset, or an end of stream, here).
BOOST_AUTO_TEST_CASE(echo_swarm_with_resources_failing_echoes_every_byte_in_order_or_the_world_ended_it) {
    std::uint64_t faults_met = 0;
    std::uint64_t whole = 0;
    std::ostringstream out;
    sim::SwarmOptions options;
    options.out = &out;
    options.check_determinism = true;  // each seed twice, traces (the faults noted in them) compared
    options.replay = "test_sim_faults --run_test=echo_swarm_with_resources_failing_echoes_every_byte_in_order_or_the_world_ended_it";
    sim::Swarm swarm(
        [&](sim::World& world) {
            sim::Host& server = world.host("server");
            std::uint64_t echoed = 0;
            std::uint64_t server_resource_ends = 0;
            reactor::Listener::Options lo;
            lo.connection = examples::echo_connection_options({});
            auto listener = reactor::Listener::listen(
                server.scheduler(), server.address(kPort),
                [&](const ConnectionPtr& c) {
                    examples::echo(c, echoed);
                    c->set_close_callback([&](Connection&, const CloseReason& r) {
                        if (r.kind == CloseKind::error && resource_errno(r.error)) ++server_resource_ends;
                    });
                },
                lo);
            listener->set_error_callback([](reactor::Listener&, std::error_code, std::string_view) {});
            server.set_resource_faults(2);
            std::vector<std::unique_ptr<EchoUser>> users;
            for (int i = 0; i < 6; ++i) {
                sim::Host& host = world.host("client-" + std::to_string(i));
                host.set_resource_faults(2, sim::Host::all_calls);  // their socket() too
                auto& u = users.emplace_back(std::make_unique<EchoUser>());
                for (int k = 0; u->payload.size() < 20'000; ++k) u->payload += std::to_string(i * 100'000 + k) + ",";
                u->start(world, host);
            }
            const auto done = [&] {
                return std::all_of(users.begin(), users.end(),
                                   [](const auto& u) { return u->connect_error || u->end.has_value(); });
            };
            if (!world.run_until(done, 120s)) throw std::runtime_error("a client neither finished nor ended");
            for (const auto& u : users) {
                if (u->payload.compare(0, u->echoed.size(), u->echoed) != 0)
                    throw std::runtime_error("bytes echoed out of order or changed");
                if (u->connect_error) {
                    if (!resource_errno(u->connect_error))
                        throw std::runtime_error("connect failed: " + u->connect_error.message());
                    ++faults_met;
                    continue;
                }
                if (u->echoed == u->payload && u->end->kind == CloseKind::eof) {
                    ++whole;
                    continue;
                }
                const bool own = u->end->kind == CloseKind::error && resource_errno(u->end->error);
                const bool servers = server_resource_ends > 0 &&
                                     (u->end->kind == CloseKind::reset || u->end->kind == CloseKind::eof);
                if (!own && !servers)
                    throw std::runtime_error("ended short without a resource fault: " + u->end->to_string() + " after " +
                                             std::to_string(u->echoed.size()) + " of " +
                                             std::to_string(u->payload.size()) + " bytes");
                ++faults_met;
            }
            listener->close();
            world.run_for(5s);
        },
        options);
    const sim::SwarmResult result = swarm.run(1, 20);
    BOOST_TEST(result.failures.empty(), out.str());
    BOOST_TEST_MESSAGE("resource swarm: " << whole << " clients whole, " << faults_met << " ended by a fault");
    if (result.runs == 20) {
        BOOST_TEST(whole > 0u);
        BOOST_TEST(faults_met > 0u);
    }
}
