// SPDX-License-Identifier: MIT
// The simulation's runs of many seeds (reactor/testing/sim/swarm.hpp,
// determinism.hpp): every seed of an echo world replays to the same trace;
// a body that is not deterministic is caught and its first divergent event
// named; a server with a planted bug fails some seeds of a swarm, each
// printed with its parameters and a replay line, and REACTOR_SIM_SEED
// replays one to the same failure with its whole trace. Virtual time only.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/testing/sim/determinism.hpp>
#include <reactor/testing/sim/swarm.hpp>
#include <reactor/testing/sim/world.hpp>

using namespace std::chrono_literals;
using reactor::Connection;
using reactor::ConnectionPtr;
namespace sim = reactor::testing::sim;

namespace {

constexpr std::uint16_t kPort = 7;

// An echo world: `clients` clients each send `bytes` bytes and read them
// back. With `bug`, the server drops the first byte of any read that
// returned exactly one byte (as a server that mishandled short reads would):
// only seeds whose network makes one-byte reads see it. Throws, naming the
// client, when an echo is not what was sent.
// With `faults` (connections may break or be refused), each echo need only
// be a prefix of what was sent, and every client must have ended.
void echo_world(sim::World& world, int clients, std::size_t bytes, bool bug, std::string payload_salt = {},
                bool faults = false) {
    sim::Host& server = world.host("server");
    auto listener = reactor::Listener::listen(server.scheduler(), server.address(kPort), [bug](const ConnectionPtr& c) {
        c->set_data_callback([bug](Connection& c, std::string_view d) { c.write(bug && d.size() == 1 ? d.substr(1) : d); });
    });
    struct Client {
        std::string sent, echoed;
        bool done = false;
    };
    std::vector<std::unique_ptr<Client>> all;
    for (int i = 0; i < clients; ++i) {
        auto& cl = all.emplace_back(std::make_unique<Client>());
        for (std::size_t b = 0; b < bytes; ++b) cl->sent.push_back(static_cast<char>('a' + (b * 7 + i) % 26));
        cl->sent += payload_salt;
        reactor::connect(world.host("client-" + std::to_string(i)).scheduler(), "server", kPort,
                         [c = cl.get()](ConnectionPtr conn, std::error_code) {
                             if (!conn) {
                                 c->done = true;
                                 return;
                             }
                             conn->set_data_callback([c](Connection& conn, std::string_view d) {
                                 c->echoed += d;
                                 if (c->echoed.size() >= c->sent.size()) conn.close();
                             });
                             conn->set_close_callback([c](Connection&, const reactor::CloseReason&) { c->done = true; });
                             conn->write(c->sent);
                         });
    }
    world.run_until(
        [&] {
            for (auto& c : all)
                if (!c->done) return false;
            return true;
        },
        60s);
    listener->close();
    for (std::size_t i = 0; i < all.size(); ++i)
        if (faults ? !all[i]->done || all[i]->sent.compare(0, all[i]->echoed.size(), all[i]->echoed) != 0
                   : all[i]->echoed != all[i]->sent)
            throw std::runtime_error("client-" + std::to_string(i) + " got " + std::to_string(all[i]->echoed.size()) +
                                     " of " + std::to_string(all[i]->sent.size()) + " bytes back");
}

// Sets REACTOR_SIM_SEED for one scope.
struct SeedVariable {
    explicit SeedVariable(std::uint64_t seed) { ::setenv(sim::Swarm::kSeedVariable, std::to_string(seed).c_str(), 1); }
    ~SeedVariable() { ::unsetenv(sim::Swarm::kSeedVariable); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(fifty_seeds_each_with_its_own_network_replay_to_the_same_trace) {
    std::ostringstream out;
    sim::SwarmOptions options;
    options.out = &out;
    options.check_determinism = true;
    sim::Swarm swarm([](sim::World& w) { echo_world(w, 2, 1'500, false); }, options);
    const sim::SwarmResult result = swarm.run(1000, 50);
    BOOST_TEST(result.runs == 50u);
    BOOST_TEST(result.failures.empty(), out.str());
}

BOOST_AUTO_TEST_CASE(with_faults_drawn_too_every_seed_replays_and_every_echo_is_a_prefix) {
    std::ostringstream out;
    sim::SwarmOptions options;
    options.out = &out;
    options.faults = true;
    options.check_determinism = true;
    // The determinism check keeps the trace's lines: count the faults met.
    int resets = 0, refusals = 0, partitions = 0;
    sim::Swarm swarm(
        [&](sim::World& w) {
            echo_world(w, 3, 20'000, false, {}, true);
            for (const std::string& l : w.trace().lines()) {
                resets += l.find("reset (fault)") != std::string::npos;
                refusals += l.find("refused (fault)") != std::string::npos;
                partitions += l.find("partition:") != std::string::npos;
            }
        },
        options);
    BOOST_TEST(swarm.params_for(1).partition_percent == sim::draw_params(1, true).partition_percent);
    const sim::SwarmResult result = swarm.run(2000, 30);
    BOOST_TEST(result.failures.empty(), out.str());
    BOOST_TEST_MESSAGE("30 seeds x 2 runs met " << resets << " fault resets, " << refusals << " refusals, "
                                                << partitions << " partitions");
    BOOST_TEST(resets > 0);
    BOOST_TEST(refusals > 0);
    BOOST_TEST(partitions > 0);
}

BOOST_AUTO_TEST_CASE(a_body_that_depends_on_more_than_its_seed_is_caught_at_its_first_divergent_event) {
    int run = 0;
    const sim::DeterminismReport report = sim::check_determinism(5, [&](sim::World& w) {
        // The second run sends one byte more: a stand-in for real time or
        // an address leaking into what a program does. (The short write
        // drawn for it differs too: the lines name different sizes.)
        echo_world(w, 1, 100, false, ++run == 1 ? "" : "!");
    });
    BOOST_TEST(!report.same);
    BOOST_REQUIRE(report.divergence.has_value());
    // The connect and its answer are the same; the client's data is not.
    BOOST_TEST(report.divergence->event == 2u, report.to_string());
    BOOST_TEST(report.divergence->first.find("data") != std::string::npos, report.to_string());
    BOOST_TEST(report.divergence->second.find("data") != std::string::npos, report.to_string());
    BOOST_TEST(report.divergence->first != report.divergence->second, report.to_string());
    BOOST_TEST(report.to_string().find("NOT deterministic") != std::string::npos);
    BOOST_TEST(sim::check_determinism(5, [](sim::World& w) { echo_world(w, 1, 100, false); }).same);
}

BOOST_AUTO_TEST_CASE(a_swarm_finds_a_planted_bug_and_its_printed_seed_replays_the_same_failure) {
    std::ostringstream out;
    sim::SwarmOptions options;
    options.out = &out;
    options.replay = "test_sim_swarm --run_test=a_swarm_finds_a_planted_bug_and_its_printed_seed_replays_the_same_failure";
    sim::Swarm swarm([](sim::World& w) { echo_world(w, 2, 300, true); }, options);
    const sim::SwarmResult result = swarm.run(1, 40);
    BOOST_TEST_MESSAGE(out.str());
    BOOST_TEST(result.runs == 40u);
    // Some networks make one-byte reads, some never do.
    BOOST_REQUIRE(!result.failures.empty());
    BOOST_TEST(result.failures.size() < 40u);
    const sim::SwarmFailure& failure = result.failures.front();
    BOOST_TEST(failure.line.find("sim: seed " + std::to_string(failure.seed) + " failed: client-") == 0u, failure.line);
    BOOST_TEST(failure.line.find(sim::to_string(failure.params)) != std::string::npos, failure.line);
    BOOST_TEST(failure.line.find("replay: REACTOR_SIM_SEED=" + std::to_string(failure.seed) + " test_sim_swarm") !=
                   std::string::npos,
               failure.line);
    BOOST_TEST(out.str().find(failure.line + "\n") != std::string::npos);

    // The replay: the variable names the seed, run() runs only it and
    // prints its trace, and it fails the same way.
    std::ostringstream replayed;
    swarm.options().out = &replayed;
    const SeedVariable variable(failure.seed);
    const sim::SwarmResult again = swarm.run(1, 40);
    BOOST_TEST(again.runs == 1u);
    BOOST_REQUIRE(again.failures.size() == 1u);
    BOOST_TEST(again.failures[0].seed == failure.seed);
    BOOST_TEST(again.failures[0].what == failure.what);
    const std::string text = replayed.str();
    BOOST_TEST(text.find("sim: replaying seed " + std::to_string(failure.seed)) == 0u, text);
    BOOST_TEST(text.find(" connect 10.0.0.") != std::string::npos, text);
    BOOST_TEST(text.find(" data 10.0.0.1:7 -> ") != std::string::npos, text);
    BOOST_TEST(text.find(failure.line) != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_seed_variable_that_is_not_a_number_is_refused) {
    ::setenv(sim::Swarm::kSeedVariable, "seven", 1);
    BOOST_CHECK_THROW(sim::Swarm::seed_from_environment(), std::invalid_argument);
    ::unsetenv(sim::Swarm::kSeedVariable);
    BOOST_TEST(!sim::Swarm::seed_from_environment().has_value());
}

BOOST_AUTO_TEST_CASE(draw_params_is_a_function_of_the_seed) {
    BOOST_TEST(sim::to_string(sim::draw_params(3)) == sim::to_string(sim::draw_params(3)));
    BOOST_TEST(sim::to_string(sim::draw_params(3)) != sim::to_string(sim::draw_params(4)));
    const sim::Params p = sim::draw_params(3);
    BOOST_TEST((p.min_latency <= p.max_latency));
    BOOST_TEST(p.min_buffer <= p.max_buffer);
    BOOST_TEST(p.min_buffer >= 1u);
}

// A hunt (bench/sim_mutants/run): REACTOR_SIM_STOP_AT_FAILURE=1 stops the
// run at the first failing seed, and every run ends with one summary line
// saying how many seeds ran, how many failed, after how many seeds the
// first did, and the virtual time the worlds ran (real time too, never
// checked).
BOOST_AUTO_TEST_CASE(stop_at_failure_ends_the_run_at_the_first_failing_seed_with_a_summary_line) {
    // Seeds 1..9 pass, every later one fails; each world runs one virtual second.
    const auto body = [](sim::World& w) {
        w.host("a").scheduler().call_later(std::chrono::seconds(2), [] {});  // something to wait for
        w.run_for(std::chrono::seconds(1));
        if (w.seed() >= 10) throw std::runtime_error("planted");
    };
    std::ostringstream out;
    sim::SwarmOptions options;
    options.out = &out;
    sim::Swarm swarm(body, options);
    const sim::SwarmResult all = swarm.run(1, 12);
    BOOST_TEST(all.runs == 12u);
    BOOST_TEST(all.failures.size() == 3u);
    BOOST_TEST(all.first_failure_after == 10u);
    BOOST_TEST((all.virtual_time == std::chrono::seconds(12)));
    BOOST_TEST(out.str().find("\nsim: 12 seeds, 3 failed; first failure after 10 seeds; 12.0 s virtual, ") !=
                   std::string::npos,
               out.str());

    ::setenv(sim::Swarm::kStopVariable, "1", 1);
    std::ostringstream stopped;
    swarm.options().out = &stopped;
    const sim::SwarmResult first = swarm.run(1, 12);
    ::unsetenv(sim::Swarm::kStopVariable);
    BOOST_TEST(first.runs == 10u);
    BOOST_TEST(first.failures.size() == 1u);
    BOOST_TEST(first.failures[0].seed == 10u);
    BOOST_TEST(stopped.str().find("sim: seed 10 failed: planted") == 0u, stopped.str());
    BOOST_TEST(stopped.str().find("\nsim: 10 seeds, 1 failed; first failure after 10 seeds; 10.0 s virtual, ") !=
                   std::string::npos,
               stopped.str());

    std::ostringstream clean;
    swarm.options().out = &clean;
    BOOST_TEST(swarm.run(1, 3).failures.empty());
    BOOST_TEST(clean.str().find("sim: 3 seeds, 0 failed; first failure after none; 3.0 s virtual, ") == 0u, clean.str());
}

// A seed that failed the determinism check replays as that failure: the
// traced run alone would pass (it is one run), so the check follows it.
BOOST_AUTO_TEST_CASE(a_failure_of_determinism_replays_from_its_seed) {
    static int runs = 0;  // each run sends a different amount: no two traces agree
    std::ostringstream out;
    sim::SwarmOptions options;
    options.out = &out;
    options.check_determinism = true;
    sim::Swarm swarm([](sim::World& w) { echo_world(w, 1, 100 + 50 * (runs++ % 2), false); }, options);
    const sim::SwarmResult result = swarm.replay(3);
    BOOST_REQUIRE(result.failures.size() == 1u);
    BOOST_TEST(result.failures[0].what.find("NOT deterministic") != std::string::npos, result.failures[0].what);
    BOOST_TEST(out.str().find("sim: seed 3 failed: ") != std::string::npos, out.str());
}
