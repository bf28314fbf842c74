// SPDX-License-Identifier: MIT
// TLS inside a simulated world replays from its seed once OpenSSL draws its
// randomness from the world (sim::TlsRandomness): the library's own
// tls::listen and tls::connect over simulated TCP, an echo, the same trace
// hash twice. The certificates are made once, outside the worlds (their
// validity is real time). Virtual time only.
//
// Then tls_echo_server (examples/19_tls_echo, its listen_tls_echo unchanged)
// in a world with 100 TLS clients, faults drawn, over a Swarm of seeds: every
// byte comes back in order, or the world ended the connection (a reset it
// injected, a connect it refused); and a client that closes after its last
// echo ends cleanly on both sides, as docs/tls.md "Ending" says: `local` on
// the client, `eof` on the server (its close_notify arrived). Failing seeds
// replay with REACTOR_SIM_SEED=<seed> test_sim_tls --run_test=<case>;
// REACTOR_SIM_SEEDS=<count> runs that many seeds instead of CI's few.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <reactor/tls/certificate_maker.hpp>
#include <reactor/tls/listen.hpp>
#include <reactor/testing/sim/swarm.hpp>
#include <reactor/testing/sim/tls_randomness.hpp>
#include <reactor/testing/sim/world.hpp>

#include "../examples/19_tls_echo/tls_echo.hpp"
#include "support/sim_certificates.hpp"

using namespace std::chrono_literals;
namespace sim = reactor::testing::sim;
namespace tls = reactor::tls;

namespace {

constexpr std::uint16_t kPort = 443;

// One TLS echo in a fresh world of `seed`: its trace hash. Tickets off: a
// ticket carries its real issue time (tls_randomness.hpp).
std::uint64_t tls_echo_hash(std::uint64_t seed) {
    const reactor_test::SimCertificates& certs = reactor_test::sim_certificates();
    tls::ServerOptions server_options;
    server_options.identity = certs.server.identity();
    server_options.session_tickets = false;
    tls::ClientOptions client_options;
    client_options.trust = certs.ca.trust();
    client_options.session_cache = false;

    sim::World world(seed);
    sim::Host& server = world.host("server");
    sim::Host& client = world.host("client");
    auto listener = tls::listen(server.scheduler(), server.address(kPort), tls::Context::server(server_options),
                                [](const tls::ConnectionPtr& c) {
                                    c->set_data_callback([](tls::Connection& c, std::string_view d) { c.write(d); });
                                });
    std::string echoed;
    tls::ConnectionPtr conn;
    reactor::tls::connect(client.scheduler(), "server", kPort, tls::Context::client(client_options),
                          [&](tls::ConnectionPtr c, std::error_code e) {
                              BOOST_REQUIRE_MESSAGE(c, e.message());
                              conn = c;
                              c->set_data_callback([&](tls::Connection&, std::string_view d) { echoed += d; });
                              c->write("hello over simulated TLS");
                          });
    BOOST_REQUIRE(world.run_until([&] { return echoed == "hello over simulated TLS"; }, 1min));
    conn->close();
    world.run_for(1s);
    return world.trace().hash();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_tls_echo_in_a_world_replays_to_the_same_trace_with_the_worlds_randomness) {
    (void)reactor_test::sim_certificates();  // made before: outside any world
    {
        sim::TlsRandomness seeded;
        const std::uint64_t first = tls_echo_hash(71);
        BOOST_TEST(tls_echo_hash(71) == first);
        BOOST_TEST(tls_echo_hash(72) != first);
        BOOST_CHECK_THROW(sim::TlsRandomness(), std::logic_error);  // one at a time
    }
    // Without it, OpenSSL's own randomness: the handshake's bytes differ.
    BOOST_TEST(tls_echo_hash(71) != tls_echo_hash(71));
}

// Issue 48: a send that fails for want of a kernel resource under a
// handshake (one host's send() made to fail: Host::set_resource_faults)
// ends that side with the errno, as the plain connection ends (kind error,
// ENOBUFS), not handshake_failed: the client's first flight (sent inside
// tls::connect's start_client), or the server's answer to it. The failed
// side's transport closes: the other side meets its EOF under the
// handshake, which the engine names (a cut-short handshake, as before).
BOOST_AUTO_TEST_CASE(a_send_failing_for_want_of_resources_under_a_handshake_ends_it_with_enobufs) {
    (void)reactor_test::sim_certificates();  // made before: outside any world
    for (const bool server_fails : {false, true}) {
        BOOST_TEST_CONTEXT((server_fails ? "the server's send fails" : "the client's send fails")) {
            std::optional<reactor::End> server_end, client_end;  // outlive the world: its end closes them
            sim::World world(3);
            sim::Host& server = world.host("server");
            sim::Host& client = world.host("client");
            auto listener = tls::listen(server.scheduler(), server.address(kPort), tls::Context::server([] {
                tls::ServerOptions options;
                options.identity = reactor_test::sim_certificates().server.identity();
                return options;
            }()),
                                        [&](const tls::ConnectionPtr& c) {
                                            c->set_close_callback([&](tls::Connection&, const reactor::End& e) {
                                                server_end = e;
                                            });
                                        });
            (server_fails ? server : client).set_resource_faults(100, sim::Host::send_call);
            tls::ClientOptions client_options;
            client_options.trust = reactor_test::sim_certificates().ca.trust();
            tls::connect(client.scheduler(), "server", kPort, tls::Context::client(client_options),
                         [&](tls::ConnectionPtr c, std::error_code ec) {
                             BOOST_REQUIRE_MESSAGE(c, ec.message());
                             c->set_close_callback(
                                 [&](tls::Connection&, const reactor::End& e) { client_end = e; });
                         });
            BOOST_REQUIRE(world.run_until([&] { return client_end && server_end; }, std::chrono::minutes(2)));
            const reactor::End& failed = server_fails ? *server_end : *client_end;
            const reactor::End& other = server_fails ? *client_end : *server_end;
            BOOST_TEST((failed.kind == reactor::EndKind::error), failed.to_string());
            BOOST_TEST((failed.error == std::errc::no_buffer_space), failed.to_string());
            BOOST_TEST(failed.detail.empty(), failed.to_string());
            BOOST_TEST((other.kind == reactor::EndKind::handshake_failed), other.to_string());
            BOOST_TEST(other.detail.find("unexpected eof while reading") != std::string::npos, other.to_string());
            BOOST_TEST((server_fails ? server : client).resource_faults() > 0u);
        }
    }
}

namespace {

using reactor::Duration;
using reactor::EndKind;

constexpr std::uint16_t kEchoPort = 7443;  // tls_echo_server's default
constexpr int kClients = 100;

// What the clients of a swarm met, summed over its seeds: the faults and
// the clean closes must have been met for the invariant to mean anything.
struct Met {
    std::uint64_t bytes = 0;
    int clean = 0, resets = 0, refusals = 0;
};

// One TLS echo client: once its handshake is done, `messages` messages of
// random sizes, at most two in flight, each sent after a random pause once
// the one before the last has come back; every byte must come back in
// order. Closes (close_notify) when all have.
struct TlsEchoClient {
    std::string name;
    std::mt19937_64 rng;
    int messages = 5;
    std::size_t max_size = 2048;
    Duration max_pause = std::chrono::milliseconds(100);
    tls::ConnectionPtr conn;
    std::string sent;  // everything sent so far
    std::size_t echoed = 0;
    std::vector<std::size_t> ends;  // where each message sent ends in `sent`
    std::size_t completed = 0;
    bool ended = false, clean = false;
    bool reset = false, refused = false;  // the world's faults, met
    std::string failure;

    void fail(std::string why) {
        if (failure.empty()) failure = std::move(why);
    }
    bool done() const { return completed == static_cast<std::size_t>(messages); }
    void send_one() {
        if (ends.size() == static_cast<std::size_t>(messages) || !conn) return;
        std::string message(1 + rng() % max_size, '\0');
        for (char& ch : message) ch = static_cast<char>('a' + rng() % 26);
        sent += message;
        ends.push_back(sent.size());
        conn->write(message);
    }
    // The world's faults may end a connection before its clean close, and
    // only they: a reset may also come after the last echo, while our
    // close_notify is on its way (seeds 5148 and 5658 of 10,000).
    // A kernel resource failing (Params::resource_fault_percent, counted per
    // host by Host::resource_faults) may end it too: our own send or recv
    // (EndKind::error, ENOBUFS or ENOMEM), or the server's, which aborts
    // the connection (send: a reset here) or closes it without a
    // close_notify (recv: an EOF, truncated or a failed handshake here).
    void ended_by_world(sim::World& world, const reactor::End& why) {
        reset = why.kind == EndKind::reset;
        if (reset && world.params().reset_percent > 0) return;
        if (why.kind == EndKind::error &&
            (why.error == std::errc::no_buffer_space || why.error == std::errc::not_enough_memory) &&
            world.host(name).resource_faults() > 0)
            return;
        if ((reset || why.kind == EndKind::eof || why.kind == EndKind::truncated ||
             why.kind == EndKind::handshake_failed) &&
            world.host("server").resource_faults() > 0)
            return;
        fail(fmt::format("{} ended {} ({} of {} bytes echoed, reset_percent {}, resource faults: {} here, {} on the "
                         "server)",
                         name, why.to_string(), echoed, sent.size(), world.params().reset_percent,
                         world.host(name).resource_faults(), world.host("server").resource_faults()));
    }
    void start(sim::World& world, sim::Host& host, const tls::ContextPtr& context) {
        tls::connect(host.scheduler(), "server", kEchoPort, context,
                     [this, &world, &host](tls::ConnectionPtr c, std::error_code ec) {
            if (!c) {
                ended = true;
                refused = ec == std::errc::connection_refused;
                // ENOBUFS: our connect failed for want of a kernel resource.
                const bool resources = ec == std::errc::no_buffer_space && host.resource_faults() > 0;
                if ((!refused || world.params().refuse_percent == 0) && !resources)
                    fail(fmt::format("{}: connect failed: {} (refuse_percent {})", name, ec.message(),
                                     world.params().refuse_percent));
                return;
            }
            conn = c;
            c->set_handshake_callback([this](tls::Connection&) {
                send_one();
                send_one();
            });
            c->set_data_callback([this, &host](tls::Connection& c, std::string_view d) {
                if (echoed + d.size() > sent.size() || sent.compare(echoed, d.size(), d) != 0) {
                    fail(fmt::format("{}: bytes {}..{} are not what was sent", name, echoed, echoed + d.size()));
                    return c.abort();
                }
                echoed += d.size();
                while (completed < ends.size() && ends[completed] <= echoed) {
                    ++completed;
                    const Duration pause{static_cast<Duration::rep>(rng() % (max_pause.count() + 1))};
                    host.scheduler().call_later(pause, [this] { send_one(); });
                }
                if (done()) c.close();
            });
            c->set_close_callback([this, &world](tls::Connection&, const reactor::End& why) {
                conn.reset();
                ended = true;
                clean = done() && why.kind == EndKind::local;  // our close(): close_notify sent
                if (!clean) ended_by_world(world, why);
            });
        });
    }
};

// The server's contexts: session tickets off, as a ticket carries its real
// issue time (tls_randomness.hpp); the client's cache off with them.
tls::ContextPtr echo_server_context() {
    tls::ServerOptions options;
    options.identity = reactor_test::sim_certificates().server.identity();
    options.session_tickets = false;
    return tls::Context::server(options);
}
tls::ContextPtr echo_client_context() {
    tls::ClientOptions options;
    options.trust = reactor_test::sim_certificates().ca.trust();
    options.session_cache = false;
    return tls::Context::client(options);
}

// tls_echo_server's run() on one loop, with its defaults: --idle-timeout
// 300 s, --handshake-timeout 10 s, --max-handshakes a quarter of the usual
// 1024 fds less 64 (above the 100 clients). kClients clients on hosts of
// their own; runs until every client has ended and the server has seen each
// clean close, then checks each, and adds to `met`.
void tls_echo_world(sim::World& world, Met& met) {
    sim::Host& server = world.host("server");
    examples::TlsEchoCounts counts;
    std::map<std::string, reactor::End> server_ends;  // by the client's address, for the handshakes done
    reactor::Listener::Options listen_options;
    listen_options.connection.idle_timeout = std::chrono::seconds(300);
    listen_options.connection.write_timeout = std::chrono::seconds(300);
    tls::Options tls_options;
    tls_options.handshake_timeout = std::chrono::seconds(10);
    tls_options.max_handshakes = (1024 - 64) / 4;
    auto listener = examples::listen_tls_echo(
        server.scheduler(), server.address(kEchoPort), echo_server_context(), counts,
        [&server_ends](tls::Connection& c, const reactor::End& why) {
            if (c.handshake_done()) server_ends[c.transport().peer_address().host()] = why;
        },
        listen_options, tls_options);

    const tls::ContextPtr client_context = echo_client_context();
    std::vector<std::unique_ptr<TlsEchoClient>> clients;
    std::vector<sim::Host*> hosts{&server};
    for (int i = 0; i < kClients; ++i) {
        auto& c = clients.emplace_back(std::make_unique<TlsEchoClient>());
        c->name = fmt::format("client-{}", i);
        c->rng.seed(world.seed() * 1'000'003 + static_cast<std::uint64_t>(i));
        sim::Host& host = world.host(c->name);
        hosts.push_back(&host);
        c->start(world, host, client_context);
    }
    auto every_client_ended = [&] {
        for (std::size_t i = 0; i < clients.size(); ++i) {
            if (!clients[i]->ended) return false;
            if (clients[i]->clean && !server_ends.contains(hosts[i + 1]->ip())) return false;
        }
        return true;
    };
    const bool all_ended = world.run_until(every_client_ended, std::chrono::minutes(10));
    std::string failure;
    for (std::size_t i = 0; i < clients.size() && failure.empty(); ++i) {
        const TlsEchoClient& c = *clients[i];
        if (!c.failure.empty()) {
            failure = c.failure;
        } else if (!c.ended) {
            failure = fmt::format("{} never ended: {} of {} bytes echoed, {} of {} messages", c.name, c.echoed,
                                  c.sent.size(), c.completed, c.messages);
        } else if (c.clean) {
            // Its close_notify reached the server: `eof` there, even when the
            // server's answer met the client's closed socket (docs/tls.md).
            const auto end = server_ends.find(hosts[i + 1]->ip());
            if (end == server_ends.end())
                failure = fmt::format("{} closed cleanly, but the server's connection never ended", c.name);
            else if (end->second.kind != EndKind::eof &&
                     !(end->second.kind == EndKind::reset && world.params().reset_percent > 0) &&
                     // the server's own send or recv failed for want of a kernel resource
                     !(end->second.kind == EndKind::error &&
                       (end->second.error == std::errc::no_buffer_space ||
                        end->second.error == std::errc::not_enough_memory) &&
                       server.resource_faults() > 0))
                failure = fmt::format("{} closed cleanly, but the server's connection ended {}", c.name,
                                      end->second.to_string());
        }
    }
    if (failure.empty() && !all_ended) failure = "not every client ended";
    // Every host's loop ends while the clients are alive (their close
    // callbacks reach them), newest first.
    for (auto it = hosts.rbegin(); it != hosts.rend(); ++it) world.crash(**it);
    if (!failure.empty()) throw std::runtime_error(failure);
    met.bytes += counts.echoed;
    for (const auto& c : clients) {
        met.clean += c->clean;
        met.resets += c->reset;
        met.refusals += c->refused;
    }
}

// CI's seeds: a hundred handshakes a seed, each a few signatures; fewer in
// a sanitizer or Debug build, an order of magnitude slower.
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
constexpr std::size_t kSeeds = 3;
#else
constexpr std::size_t kSeeds = 20;
#endif

}  // namespace

BOOST_AUTO_TEST_CASE(tls_echo_server_echoes_every_byte_in_order_and_a_client_close_ends_cleanly_or_the_world_ended_it) {
    (void)reactor_test::sim_certificates();  // made before: outside any world
    sim::TlsRandomness seeded;  // each seed's handshakes replay
    Met met;
    std::ostringstream out;
    sim::SwarmOptions options;
    options.out = &out;
    options.faults = true;
    options.replay = "test_sim_tls --run_test="
                     "tls_echo_server_echoes_every_byte_in_order_and_a_client_close_ends_cleanly_or_the_world_ended_it";
    options.check_determinism = std::getenv("REACTOR_SIM_TWICE") != nullptr;
    std::size_t count = kSeeds;
    if (const char* more = std::getenv("REACTOR_SIM_SEEDS")) count = std::stoul(more);
    std::uint64_t first = 1;  // REACTOR_SIM_FIRST=<seed>: a long run split in parts
    if (const char* from = std::getenv("REACTOR_SIM_FIRST")) first = std::stoull(from);
    sim::Swarm swarm([&](sim::World& w) { tls_echo_world(w, met); }, options);
    const sim::SwarmResult result = swarm.run(first, count);
    BOOST_TEST(result.failures.empty(), out.str());
    BOOST_TEST_MESSAGE("tls_echo_server: " << result.runs << " seeds, " << result.failures.size() << " failed; "
                                           << met.bytes << " bytes echoed, " << met.clean << " clean closes, "
                                           << met.resets << " connections reset, " << met.refusals << " refused");
    if (result.runs != count) {  // REACTOR_SIM_SEED: one seed replayed, its whole trace
        std::cout << out.str();
        return;
    }
    BOOST_TEST(met.bytes > 0u);
    BOOST_TEST(met.clean > 0);
    BOOST_TEST(met.resets > 0);  // the faults were met
    BOOST_TEST(met.refusals > 0);
}
