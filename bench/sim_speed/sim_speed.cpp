// SPDX-License-Identifier: MIT
// bench/sim_speed: how fast a simulated world runs (issue 48's targets:
// >= 300 seeds per minute on one core for a 10-virtual-second run of the
// echo server with 100 clients, and >= 1,000x real time for a run that is
// mostly idle, waiting on timeouts). bench/sim_speed/run builds and runs it;
// bench/results/simulation.md has its figures.
//
//   sim_speed echo [SEEDS]          seeds 1..SEEDS (default 100): echo_server's echo (examples/09) on
//                                   a host, 100 clients each in a loop of message, echo, pause for 10
//                                   virtual seconds, network and faults drawn from each seed
//   sim_speed idle [HOURS]          one world, HOURS virtual hours (default 24): 100 clients connected
//                                   to that server, each saying one byte every 10..60 s, each host with
//                                   100 timers re-armed at random, the server's 300 s idle timeout
//   sim_speed determinism [SEEDS]   each seed of `echo` twice (1 virtual second each): the same trace
//
// One line of figures per mode on stdout; exit 1 if an echo came back wrong
// or a seed's two runs differ. Nothing here touches a real socket.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/testing/sim/determinism.hpp>
#include <reactor/testing/sim/world.hpp>

#include "../../examples/09_echo_server/echo.hpp"

using namespace std::chrono_literals;
using reactor::Connection;
using reactor::ConnectionPtr;
using reactor::Duration;
namespace sim = reactor::testing::sim;

namespace {

constexpr std::uint16_t kPort = 7000;
constexpr int kClients = 100;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Duration random_duration(std::mt19937_64& rng, Duration low, Duration high) {
    return low + Duration{static_cast<Duration::rep>(rng() % static_cast<std::uint64_t>((high - low).count() + 1))};
}

// The server: echo_server's echo and options, its 300 s idle timeout.
struct EchoServer {
    std::uint64_t echoed = 0;
    reactor::ListenerPtr listener;

    explicit EchoServer(sim::Host& host) {
        reactor::ConnectionOptions deadlines;
        deadlines.idle_timeout = deadlines.write_timeout = 300s;
        reactor::Listener::Options options;
        options.connection = examples::echo_connection_options(deadlines);
        listener = reactor::Listener::listen(host.scheduler(), host.address(kPort),
                                             [this](const ConnectionPtr& c) { examples::echo(c, echoed); }, options);
    }
};

// A client: message, echo, pause, again, while its host's clock is before
// `until`; checks each echo byte for byte.
struct Client {
    sim::Host* host = nullptr;
    std::mt19937_64 rng;
    reactor::TimePoint until;
    Duration max_pause{};
    ConnectionPtr conn;
    std::string in_flight;
    std::size_t back = 0;
    std::uint64_t messages = 0;
    bool wrong = false;

    void send() {
        if (!conn || host->scheduler().now() >= until) return;
        in_flight.assign(1 + rng() % 1024, static_cast<char>('a' + rng() % 26));
        back = 0;
        conn->write(in_flight);
    }
    void start() {
        reactor::connect(host->scheduler(), "server", kPort, [this](ConnectionPtr c, std::error_code) {
            if (!(conn = std::move(c))) return;  // refused: the faults drawn
            conn->set_data_callback([this](Connection&, std::string_view d) {
                if (in_flight.compare(back, d.size(), d) != 0) wrong = true;
                if ((back += d.size()) < in_flight.size()) return;
                ++messages;
                host->scheduler().call_later(random_duration(rng, 0ms, max_pause), [this] { send(); });
            });
            conn->set_close_callback([this](Connection&, const reactor::CloseReason&) { conn.reset(); });
            send();
        });
    }
};

// One seed of the echo run: the world's state lives here, and every host
// crashes before it goes (close callbacks may reach it).
struct EchoRun {
    std::unique_ptr<EchoServer> server;
    std::vector<std::unique_ptr<Client>> clients;
    std::vector<sim::Host*> hosts;

    void run(sim::World& world, Duration length) {
        hosts.push_back(&world.host("server"));
        server = std::make_unique<EchoServer>(*hosts.back());
        for (int i = 0; i < kClients; ++i) {
            auto& c = clients.emplace_back(std::make_unique<Client>());
            c->host = &world.host("client-" + std::to_string(i));
            hosts.push_back(c->host);
            c->rng.seed(world.seed() * 1'000'003 + static_cast<std::uint64_t>(i));
            c->until = world.now() + length;
            c->max_pause = 100ms;
            c->start();
        }
        world.run_for(length);
        for (auto it = hosts.rbegin(); it != hosts.rend(); ++it) world.crash(**it);
    }
    std::uint64_t messages() const {
        std::uint64_t n = 0;
        for (const auto& c : clients) n += c->messages;
        return n;
    }
    bool wrong() const {
        for (const auto& c : clients)
            if (c->wrong) return true;
        return false;
    }
};

int echo_mode(std::uint64_t seeds) {
    std::uint64_t messages = 0, events = 0;
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
        sim::World world(seed, sim::draw_params(seed, true));
        EchoRun run;
        run.run(world, 10s);
        messages += run.messages();
        events += world.trace().events();
        if (run.wrong()) {
            std::printf("sim_speed echo: seed %llu: an echo came back wrong\n", static_cast<unsigned long long>(seed));
            return 1;
        }
    }
    const double real = seconds_since(start);
    std::printf("sim_speed echo: %llu seeds x 10 virtual s, 100 clients: %.1f s real, %.0f seeds/min, %.1fx real "
                "time, %llu messages echoed, %llu network events (%.0f per real s)\n",
                static_cast<unsigned long long>(seeds), real, static_cast<double>(seeds) * 60 / real,
                static_cast<double>(seeds) * 10 / real, static_cast<unsigned long long>(messages),
                static_cast<unsigned long long>(events), static_cast<double>(events) / real);
    return 0;
}

// Idle-heavy: 100 connected clients that say a byte every 10..60 s, and on
// every host 100 timers, each re-armed for 1..600 s when it fires.
int idle_mode(std::uint64_t hours) {
    sim::World world(1);
    std::vector<sim::Host*> hosts;
    hosts.push_back(&world.host("server"));
    auto server = std::make_unique<EchoServer>(*hosts.back());
    struct Idle {
        sim::Host* host;
        std::mt19937_64 rng;
        ConnectionPtr conn;
        std::uint64_t timers = 0, bytes = 0;
        void arm() {
            host->scheduler().call_later(random_duration(rng, 1s, 600s), [this] {
                ++timers;
                arm();
            });
        }
        void say() {
            host->scheduler().call_later(random_duration(rng, 10s, 60s), [this] {
                if (!conn) return;
                conn->write("x");
                say();
            });
        }
    };
    std::vector<std::unique_ptr<Idle>> all;
    for (int i = 0; i <= kClients; ++i) {
        auto& idle = all.emplace_back(std::make_unique<Idle>());
        idle->host = i == 0 ? hosts[0] : &world.host("client-" + std::to_string(i));
        if (i > 0) hosts.push_back(idle->host);
        idle->rng.seed(static_cast<std::uint64_t>(i));
        for (int t = 0; t < 100; ++t) idle->arm();
        if (i == 0) continue;
        reactor::connect(idle->host->scheduler(), "server", kPort, [p = idle.get()](ConnectionPtr c, std::error_code) {
            if (!(p->conn = std::move(c))) return;
            p->conn->set_data_callback([p](Connection&, std::string_view d) { p->bytes += d.size(); });
            p->conn->set_close_callback([p](Connection&, const reactor::CloseReason&) { p->conn.reset(); });
            p->say();
        });
    }
    const auto start = std::chrono::steady_clock::now();
    world.run_for(std::chrono::hours(hours));
    const double real = seconds_since(start);
    std::uint64_t timers = 0, bytes = 0;
    for (const auto& idle : all) {
        timers += idle->timers;
        bytes += idle->bytes;
    }
    for (auto it = hosts.rbegin(); it != hosts.rend(); ++it) world.crash(**it);
    const double virtual_seconds = static_cast<double>(hours) * 3600;
    std::printf("sim_speed idle: %llu virtual h, 101 hosts, 10,100 timers re-armed: %.2f s real, %.0fx real time, "
                "%llu timers fired, %llu bytes echoed, %llu loop iterations\n",
                static_cast<unsigned long long>(hours), real, virtual_seconds / real,
                static_cast<unsigned long long>(timers), static_cast<unsigned long long>(bytes),
                static_cast<unsigned long long>(world.steps()));
    return 0;
}

int determinism_mode(std::uint64_t seeds) {
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t differ = 0;
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
        const sim::DeterminismReport report = sim::check_determinism(seed, sim::draw_params(seed, true), [](sim::World& w) {
            EchoRun run;
            run.run(w, 1s);
        });
        if (!report.same) {
            if (differ++ == 0) std::printf("%s\n", report.to_string().c_str());
        }
    }
    const double real = seconds_since(start);
    std::printf("sim_speed determinism: %llu of %llu seeds ran twice to the same trace (echo, 100 clients, 1 virtual "
                "s each): %.1f s real\n",
                static_cast<unsigned long long>(seeds - differ), static_cast<unsigned long long>(seeds), real);
    return differ == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string_view mode = argc > 1 ? argv[1] : "";
    const std::uint64_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
    if (mode == "echo") return echo_mode(n ? n : 100);
    if (mode == "idle") return idle_mode(n ? n : 24);
    if (mode == "determinism") return determinism_mode(n ? n : 100);
    std::fprintf(stderr, "usage: sim_speed echo|idle|determinism [N]\n");
    return 2;
}
