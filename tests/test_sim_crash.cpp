// SPDX-License-Identifier: MIT
// Hosts that crash and restart (sim::World::crash, restart, host(name,
// start)): a crash destroys the host's program and loop without running
// what was scheduled, resets its connections for the peers, and leaves it
// answering nothing; a restart runs its start again on a fresh loop, and
// clients connect to it anew; a connect to a host that stays down times
// out as Linux's would. Virtual time only.
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

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
