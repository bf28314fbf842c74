// SPDX-License-Identifier: MIT
// docs/simulation.md (and docs/testing.md's pointer to it): a server written
// as a function of a Scheduler, run in a sim::World with clients, checked by
// an invariant over a Swarm of seeds that finds the bug planted in it (a
// server that takes each read for one whole line), the failing seed
// replayed, the fixed server holding, determinism checked, faults and a
// crash. Virtual time only: no real socket is opened here, except the one
// loopback check that the naive server passes a test on a real loop.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/line_reader.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/testing/sim/determinism.hpp>
#include <reactor/testing/sim/swarm.hpp>
#include <reactor/testing/sim/world.hpp>

using namespace std::chrono_literals;
namespace sim = reactor::testing::sim;

BOOST_AUTO_TEST_CASE(simulation_a_server_and_a_client_in_one_world) {
    const std::uint64_t seed = 1;
    bool done = false;
    auto on_accept = [](const reactor::ConnectionPtr& c) {
        c->set_data_callback([](reactor::Connection& c, std::string_view d) { c.write(d); });
    };
    auto on_connect = [&](reactor::ConnectionPtr c, std::error_code) {
        c->set_data_callback([&](reactor::Connection& c, std::string_view) {
            done = true;
            c.close();
        });
        c->write("ping");
    };
    // [snippet:world]
    sim::World world(seed);
    sim::Host& server = world.host("server");  // 10.0.0.1
    auto listener = reactor::Listener::listen(server.scheduler(), server.address(7), on_accept);
    reactor::connect(world.host("client").scheduler(), "server", 7, on_connect);  // names resolve in the world
    world.run_until([&] { return done; }, 60s);        // virtual seconds: no real time passes
    const std::uint64_t trace = world.trace().hash();  // the same on every run of `seed`
    // [end-snippet:world]
    BOOST_TEST(done);
    BOOST_TEST(trace == world.trace().hash());
    BOOST_TEST(world.trace().events() > 0u);  // the connect, the accept, ping both ways, the ends
}

namespace {

constexpr std::uint16_t kSumsPort = 7000;

// [snippet:naive_server]
// Answers each line "a b" with the line "a+b". Naive: it takes each read
// for one whole line, which loopback nearly always gives it.
reactor::ListenerPtr serve_sums(reactor::Scheduler& sched, const reactor::Address& at) {
    return reactor::Listener::listen(sched, at, [](const reactor::ConnectionPtr& c) {
        c->set_data_callback([](reactor::Connection& c, std::string_view line) {
            long a = 0, b = 0;
            std::sscanf(std::string(line).c_str(), "%ld %ld", &a, &b);
            c.write(std::to_string(a + b) + "\n");
        });
    });
}
// [end-snippet:naive_server]

// [snippet:fixed_server]
reactor::ListenerPtr serve_sums_fixed(reactor::Scheduler& sched, const reactor::Address& at) {
    return reactor::Listener::listen(sched, at, [](const reactor::ConnectionPtr& c) {
        reactor::LineReader::attach(c, [](reactor::Connection& c, std::string_view line) {  // whole lines only
            long a = 0, b = 0;
            std::sscanf(std::string(line).c_str(), "%ld %ld", &a, &b);
            c.write(std::to_string(a + b) + "\n");
        });
    });
}
// [end-snippet:fixed_server]

using Serve = std::function<reactor::ListenerPtr(reactor::Scheduler&, const reactor::Address&)>;

// [snippet:sums_world]
// One client: asks "k <i>" for k = 1..asks, one at a time, and keeps the answers.
struct SumsClient {
    int index = 0, asks = 0, asked = 0;
    std::string answers;  // what came back
    bool ended = false;
    std::string excuse;  // why the world may end it early, if it did

    // The first answer that is not k + index, if any: "answer 2 is \"0\", not \"2\"".
    std::string wrong_answer() const {
        std::size_t from = 0;
        for (int k = 1; from < answers.size(); ++k) {
            const std::size_t end = answers.find('\n', from);
            if (end == std::string::npos) break;  // the last one, cut short by a fault
            const std::string got = answers.substr(from, end - from), want = std::to_string(k + index);
            if (got != want) return "answer " + std::to_string(k) + " is \"" + got + "\", not \"" + want + "\"";
            from = end + 1;
        }
        return {};
    }
    bool all_answered() const { return std::ranges::count(answers, '\n') == asks; }
    void ask(reactor::Connection& c) { c.write(std::to_string(++asked) + " " + std::to_string(index) + "\n"); }
};

// The body of one seed: the server on a host, `clients` clients on hosts
// of their own; it throws if the invariant fails, and returns how many
// clients the world's faults ended early.
int sums_world(sim::World& world, const Serve& serve, int clients = 10, int asks = 20) {
    sim::Host& server = world.host("server");
    auto listener = serve(server.scheduler(), server.address(kSumsPort));  // the server's own code, unchanged
    std::vector<SumsClient> all(static_cast<std::size_t>(clients));
    for (int i = 0; i < clients; ++i) {
        SumsClient& client = all[static_cast<std::size_t>(i)];
        client.index = i;
        client.asks = asks;
        sim::Host& host = world.host("client-" + std::to_string(i));
        reactor::connect(host.scheduler(), "server", kSumsPort, [&client, &world](reactor::ConnectionPtr c, std::error_code ec) {
            if (!c) {  // only a fault of the world may refuse it
                client.ended = true;
                client.excuse = world.params().refuse_percent > 0 ? ec.message() : "";
                return;
            }
            c->set_data_callback([&client](reactor::Connection& c, std::string_view d) {
                client.answers += d;
                if (!client.answers.ends_with('\n')) return;  // the rest of the answer is on its way
                if (client.asked == client.asks) return c.close();
                client.ask(c);
            });
            c->set_close_callback([&client, &world](reactor::Connection&, const reactor::End& why) {
                client.ended = true;
                if (why.kind == reactor::EndKind::reset && world.params().reset_percent > 0)
                    client.excuse = why.to_string();
            });
            client.ask(*c);
        });
    }
    world.run_until([&] { return std::ranges::all_of(all, &SumsClient::ended); }, 10min);

    // The invariant: every answer right, and every client done, unless the
    // world's faults ended it (then what it got is still right).
    int excused = 0;
    for (const SumsClient& c : all) {
        const std::string name = "client-" + std::to_string(c.index);
        if (const std::string wrong = c.wrong_answer(); !wrong.empty()) throw std::runtime_error(name + ": " + wrong);
        if (!c.ended) throw std::runtime_error(name + " never ended, " + std::to_string(c.asked) + " asked");
        if (!c.all_answered()) {
            if (c.excuse.empty()) throw std::runtime_error(name + " ended early without a fault to excuse it");
            ++excused;
        }
    }
    return excused;
}
// [end-snippet:sums_world]

}  // namespace

BOOST_AUTO_TEST_CASE(simulation_the_naive_server_passes_on_loopback) {
    reactor::Scheduler sched;
    auto listener = serve_sums(sched, reactor::Address::parse("127.0.0.1", 0));
    std::string answer;
    reactor::connect(sched, listener->address(), [&](reactor::ConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE_MESSAGE(c, ec.message());
        c->set_data_callback([&](reactor::Connection& c, std::string_view d) {
            answer += d;
            c.close();
            sched.stop();
        });
        c->write("2 3\n");
    });
    sched.call_later(10s, [&] { sched.stop(); });
    sched.run();
    BOOST_TEST(answer == "5\n");
}

namespace {

// [snippet:swarm]
// 100 seeds, each its own network drawn from the seed; a failure is one line in `out`.
sim::SwarmResult sums_hold(const Serve& serve, std::ostream& out) {
    sim::SwarmOptions options;
    options.out = &out;                                 // default: std::cerr
    options.replay = "sums_test --run_test=sums_hold";  // the command a failure's replay line names
    sim::Swarm swarm([&](sim::World& w) { sums_world(w, serve); }, options);
    return swarm.run(1, 100);  // seeds 1..100; with REACTOR_SIM_SEED set, that seed only, traced
}
// ...and in the test case: BOOST_TEST(sums_hold(serve_sums, std::cerr).failures.empty());
// [end-snippet:swarm]

}  // namespace

BOOST_AUTO_TEST_CASE(simulation_a_swarm_finds_the_naive_server_and_its_seed_replays) {
    std::ostringstream out;
    const sim::SwarmResult result = sums_hold(serve_sums, out);
    BOOST_TEST(result.runs == 100u);
    BOOST_REQUIRE(!result.failures.empty());  // the planted bug is found
    const sim::SwarmFailure& first = result.failures.front();
    BOOST_TEST_MESSAGE(result.failures.size() << " seeds of 100 failed; the first: " << first.line);
    BOOST_TEST(first.what.find(": answer ") != std::string::npos, first.what);
    BOOST_TEST(first.line.find("replay: REACTOR_SIM_SEED=" + std::to_string(first.seed) + " sums_test") !=
               std::string::npos);

    std::ostringstream replayed;
    sim::SwarmOptions options;
    options.out = &replayed;
    sim::Swarm swarm([](sim::World& w) { sums_world(w, serve_sums); }, options);
    // [snippet:replay]
    const sim::SwarmResult again = swarm.replay(first.seed);  // as REACTOR_SIM_SEED=<seed> does: the trace, then the line
    // [end-snippet:replay]
    BOOST_REQUIRE(again.failures.size() == 1u);
    BOOST_TEST(again.failures[0].what == first.what);
    BOOST_TEST(replayed.str().find(" data 10.0.0.1:7000 -> ") != std::string::npos);
    if (std::getenv("SIMULATION_SHOW_REPLAY")) std::cout << replayed.str();  // for the guide's excerpt
}

BOOST_AUTO_TEST_CASE(simulation_the_fixed_server_holds_and_every_seed_replays) {
    std::ostringstream out;
    sim::SwarmOptions options;
    options.out = &out;
    options.check_determinism = true;  // each seed twice, traces compared
    sim::Swarm swarm([](sim::World& w) { sums_world(w, serve_sums_fixed); }, options);
    const sim::SwarmResult result = swarm.run(1, 100);
    BOOST_TEST(result.runs == 100u);
    BOOST_TEST(result.failures.empty(), out.str());

    const std::uint64_t seed = 7;
    // [snippet:determinism]
    const sim::DeterminismReport report =
        sim::check_determinism(seed, [](sim::World& w) { sums_world(w, serve_sums_fixed); });
    BOOST_TEST(report.same, report.to_string());  // if not: the first event where the two runs part
    // [end-snippet:determinism]
}

BOOST_AUTO_TEST_CASE(simulation_faults_set_in_params_are_met_and_excused) {
    int excused = 0;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        // [snippet:faults]
        sim::Params params;        // the defaults: a network that delays but never fails
        params.reset_percent = 5;  // of connections: broken after a drawn prefix
        params.refuse_percent = 5;
        params.partition_percent = 30;  // of stable periods: one host cut off for a while
        sim::World world(seed, params);
        excused += sums_world(world, serve_sums_fixed);  // clients a fault ended early, each excused
        // [end-snippet:faults]
    }
    BOOST_TEST(excused > 0);  // the faults were met
    // A swarm draws them per seed: options.faults (and options.crashes).
    const sim::Params drawn = sim::draw_params(3, true);
    BOOST_TEST(sim::to_string(drawn) == sim::to_string(sim::draw_params(3, true)));
}

BOOST_AUTO_TEST_CASE(simulation_a_host_crashes_and_restarts) {
    sim::World world(5);
    // [snippet:crash]
    sim::Host& server = world.host("server", [](sim::Host& h) -> std::shared_ptr<void> {
        return serve_sums_fixed(h.scheduler(), h.address(kSumsPort));  // what keeps the program alive
    });
    world.crash(server);    // its sockets vanish (peers reset), its program, then its loop, destroyed
    world.restart(server);  // a fresh loop and kernel; the start function runs again
    // [end-snippet:crash]
    BOOST_TEST(server.boots() == 2u);
    std::string answer;
    reactor::connect(world.host("client").scheduler(), "server", kSumsPort,
                     [&](reactor::ConnectionPtr c, std::error_code) {
                         c->set_data_callback([&](reactor::Connection& c, std::string_view d) {
                             answer += d;
                             c.close();
                         });
                         c->write("40 2\n");
                     });
    BOOST_TEST(world.run_until([&] { return answer == "42\n"; }, 60s));
}
