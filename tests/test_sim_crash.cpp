// SPDX-License-Identifier: MIT
// Hosts that crash and restart (sim::World::crash, restart, host(name,
// start)): a crash destroys the host's program and loop without running
// what was scheduled, resets its connections for the peers, and leaves it
// answering nothing; a restart runs its start again on a fresh loop, and
// clients connect to it anew; a connect to a host that stays down times
// out as Linux's would. Crashes drawn from the seed (Params::crash_percent)
// pick only hosts with a start, bring them back after the drawn downtime,
// and a swarm of seeds with a crashing echo server and reconnecting
// clients keeps its invariants. Virtual time only.
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/testing/sim/swarm.hpp>
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

// The server's program: an echo listener, and a timer that must never run
// once the host crashed. Counts its lives and deaths in `log`.
struct Log {
    int started = 0;
    int destroyed = 0;
    bool late_timer_ran = false;
};

struct EchoProgram {
    Log& log;
    reactor::ListenerPtr listener;
    EchoProgram(sim::Host& host, Log& l) : log(l) {
        ++log.started;
        listener = reactor::Listener::listen(host.scheduler(), host.address(kPort), [](const ConnectionPtr& c) {
            c->set_data_callback([](Connection& c, std::string_view d) { c.write(d); });
        });
        host.scheduler().call_later(10s, [&l = log] { l.late_timer_ran = true; });
    }
    ~EchoProgram() { ++log.destroyed; }
};

sim::Host::Start echo_start(Log& log) {
    return [&log](sim::Host& h) { return std::make_shared<EchoProgram>(h, log); };
}

struct Client {
    ConnectionPtr conn;
    std::error_code error;
    bool answered = false;
    std::string echoed;
    std::optional<CloseReason> end;
    Duration answered_at{};

    void start(sim::World& world, sim::Host& from) {
        reactor::connect(from.scheduler(), "server", kPort, [this, &world](ConnectionPtr c, std::error_code e) {
            answered = true;
            answered_at = world.elapsed();
            error = e;
            conn = c;
            if (!c) return;
            c->set_data_callback([this](Connection&, std::string_view d) { echoed += d; });
            c->set_close_callback([this](Connection&, const CloseReason& r) { end = r; });
            c->write("hello");
        });
    }
};

// A client that makes `rounds` round trips, one connection each, `pause`
// apart, and connects again after a failed connect or a connection that
// ended before its echo came back. Invariant: what comes back on a
// connection is always a prefix of what was sent on it, and a connection
// that ends before its echo ends reset (the server crashed): `violation`.
struct Reconnecting {
    sim::Host& host;
    int rounds;
    Duration pause;
    int done = 0;
    int broken = 0;  // connections that ended early, or connects that failed
    std::string sent, echoed, violation;

    Reconnecting(sim::Host& h, int n, Duration p) : host(h), rounds(n), pause(p) {}
    void start() {
        reactor::connect(host.scheduler(), "server", kPort, [this](ConnectionPtr c, std::error_code) {
            if (!c) return again(true);
            sent = "round " + std::to_string(done) + " of " + host.name() + "\n";
            echoed.clear();
            c->set_data_callback([this](Connection& c, std::string_view d) {
                echoed += d;
                if (sent.compare(0, echoed.size(), echoed) != 0) violation = "echo is not a prefix: " + echoed;
                if (echoed != sent) return;
                ++done;
                c.close();
                if (done < rounds) again(false);
            });
            c->set_close_callback([this](Connection&, const CloseReason& r) {
                if (echoed == sent) return;  // our own close after the round
                if (r.kind != CloseKind::reset) violation = "ended early but not reset: " + r.to_string();
                again(true);
            });
            c->write(sent);
        });
    }
    void again(bool failed) {
        broken += failed;
        host.scheduler().call_later(pause, [this] { start(); });
    }
};

sim::Params exact() {
    sim::Params p;
    p.min_latency = p.max_latency = 1ms;
    p.max_jitter = Duration::zero();
    return p;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_crashed_host_resets_its_peers_runs_nothing_more_and_restarts_with_its_start) {
    sim::World world(31, exact());
    Log log;
    sim::Host& server = world.host("server", echo_start(log));
    sim::Host& client = world.host("client");
    BOOST_TEST(log.started == 1);
    BOOST_TEST(server.boots() == 1u);
    Client first;
    first.start(world, client);
    BOOST_REQUIRE(world.run_until([&] { return first.echoed == "hello"; }, 1s));

    // From a callback on another host: the crash happens after that step.
    client.scheduler().call_later(100ms, [&] { world.crash(server); });
    BOOST_REQUIRE(world.run_until([&] { return first.end.has_value(); }, 1s));
    BOOST_TEST((first.end->kind == CloseKind::reset), first.end->to_string());
    BOOST_TEST(!server.up());
    BOOST_TEST(log.destroyed == 1);
    BOOST_CHECK_THROW(server.scheduler(), std::logic_error);
    world.run_for(20s);
    BOOST_TEST(!log.late_timer_ran);  // destroyed unrun with its loop

    world.restart(server);
    BOOST_TEST(server.up());
    BOOST_TEST(server.boots() == 2u);
    BOOST_TEST(log.started == 2);
    Client second;
    second.start(world, client);
    BOOST_REQUIRE(world.run_until([&] { return second.echoed == "hello"; }, 1s));
    BOOST_TEST(!second.error);
    second.conn->close();
    world.crash(server);  // outside a run: at once
    BOOST_TEST(log.destroyed == 2);
    BOOST_TEST((world.run_for(1min) == reactor::RunStatus::idle));
    BOOST_TEST(client.scheduler().empty());
}

BOOST_AUTO_TEST_CASE(a_connect_to_a_host_that_is_down_waits_for_its_restart_or_times_out) {
    sim::World world(32, exact());
    Log log;
    sim::Host& server = world.host("server", echo_start(log));
    sim::Host& client = world.host("client");
    world.crash(server);
    Client waits, gives_up;
    waits.start(world, client);
    // Down for 5 s: the requests at 1 ms, 1 s, 3 s go unanswered; the one
    // sent again at 7 s finds the server back.
    client.scheduler().call_later(5s, [&] { world.restart(server); });
    BOOST_REQUIRE(world.run_until([&] { return waits.echoed == "hello"; }, 20s));
    BOOST_TEST(!waits.error);
    BOOST_TEST((waits.answered_at == Duration(7s + 2ms)), waits.answered_at.count());
    waits.conn->close();

    world.crash(server);
    const Duration began = world.elapsed();
    gives_up.start(world, client);
    BOOST_REQUIRE(world.run_until([&] { return gives_up.answered; }, 10min));
    BOOST_TEST((gives_up.error == std::error_code(ETIMEDOUT, std::generic_category())), gives_up.error.message());
    BOOST_TEST((gives_up.answered_at - began == Duration(127s + 1ms)), (gives_up.answered_at - began).count());
    BOOST_TEST((world.run_for(1min) == reactor::RunStatus::idle));
    BOOST_TEST(client.scheduler().empty());
}

BOOST_AUTO_TEST_CASE(a_second_host_of_one_name_with_a_start_is_refused) {
    sim::World world(33);
    world.host("server");
    BOOST_CHECK_THROW(world.host("server", [](sim::Host&) { return std::shared_ptr<void>(); }), std::logic_error);
}

BOOST_AUTO_TEST_CASE(crashes_drawn_from_the_seed_pick_hosts_with_a_start_and_restart_them_after_the_downtime) {
    sim::Params params = exact();
    params.crash_percent = 100;  // a crash at every chance
    params.min_crash_gap = 1s;
    params.max_crash_gap = 2s;
    params.min_downtime = 100ms;
    params.max_downtime = 500ms;
    auto run = [&](std::uint64_t seed) {
        sim::World world(seed, params);
        world.trace().keep_lines(true);
        Log log;
        sim::Host& server = world.host("server", echo_start(log));
        sim::Host& client = world.host("client");  // no start: never drawn
        Reconnecting c(client, 30, 300ms);
        c.start();
        BOOST_REQUIRE(world.run_until([&] { return c.done == c.rounds; }, 10min));
        BOOST_TEST(c.violation.empty(), c.violation);
        BOOST_TEST(client.boots() == 1u);
        BOOST_TEST(server.boots() > 2u);
        BOOST_TEST(log.started == static_cast<int>(server.boots()));
        int noted = 0;
        for (const std::string& l : world.trace().lines()) noted += l.find("host server crashes") != std::string::npos;
        BOOST_TEST(noted == static_cast<int>(server.boots()) - 1);
        return world.trace().hash();
    };
    BOOST_TEST(run(61) == run(61));
    // Off (the default), nothing crashes: a world runs as it did before crashes existed.
    sim::World quiet(62, exact());
    Log log;
    sim::Host& server = quiet.host("server", echo_start(log));
    quiet.run_for(1h);
    BOOST_TEST(server.boots() == 1u);
}

BOOST_AUTO_TEST_CASE(a_swarm_with_a_crashing_server_keeps_every_echo_a_prefix_and_every_client_finishes) {
    std::ostringstream out;
    sim::SwarmOptions options;
    options.out = &out;
    options.crashes = true;
    options.check_determinism = true;
    int crashes = 0, broken = 0;
    sim::Swarm swarm(
        [&](sim::World& w) {
            Log log;
            sim::Host& server = w.host("server", echo_start(log));
            std::vector<std::unique_ptr<Reconnecting>> clients;
            for (int i = 0; i < 4; ++i) {
                clients.push_back(std::make_unique<Reconnecting>(w.host("client-" + std::to_string(i)), 40, 250ms));
                clients.back()->start();
            }
            const bool finished = w.run_until(
                [&] {
                    for (auto& c : clients)
                        if (c->done < c->rounds) return false;
                    return true;
                },
                30min);
            for (auto& c : clients) {
                if (!c->violation.empty()) throw std::runtime_error(c->host.name() + ": " + c->violation);
                if (c->host.boots() != 1) throw std::runtime_error(c->host.name() + " crashed: it has no start");
                broken += c->broken;
            }
            if (!finished) throw std::runtime_error("a client did not finish its rounds in 30 virtual minutes");
            crashes += static_cast<int>(server.boots()) - 1;
        },
        options);
    BOOST_TEST(swarm.params_for(5).crash_percent > 0u);
    BOOST_TEST(swarm.params_for(5).min_latency == sim::draw_params(5).min_latency);  // crashes drawn apart
    const sim::SwarmResult result = swarm.run(3000, 20);
    BOOST_TEST(result.failures.empty(), out.str());
    BOOST_TEST_MESSAGE("20 seeds x 2 runs: " << crashes << " crashes, " << broken << " broken connections or connects");
    BOOST_TEST(crashes > 20);
    BOOST_TEST(broken > 0);
}
