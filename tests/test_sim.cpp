// SPDX-License-Identifier: MIT
// The simulated world (reactor/testing/sim/world.hpp): the library's own
// Listener, connect() and Connection between hosts on virtual time, over
// the simulated TCP; every byte echoed; the same seed gives the same trace,
// another seed another; refused and unreachable connects, a reset, timers,
// and a host's loop run directly refused. Virtual time only: nothing here
// touches a real socket or waits for real time.
#include <fcntl.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <futures/stream.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/testing/sim/random.hpp>
#include <reactor/testing/sim/world.hpp>

using namespace std::chrono_literals;
using reactor::CloseKind;
using reactor::CloseReason;
using reactor::Connection;
using reactor::ConnectionPtr;
namespace sim = reactor::testing::sim;

namespace {

constexpr std::uint16_t kEchoPort = 7;

// The plain callback echo server of the examples, on a host's loop.
reactor::ListenerPtr echo_server(sim::Host& host) {
    return reactor::Listener::listen(host.scheduler(), host.address(kEchoPort), [](const ConnectionPtr& c) {
        c->set_data_callback([](Connection& c, std::string_view d) { c.write(d); });
    });
}

// One client: connects by the server's name, sends `payload` in pieces of
// sizes drawn from its own stream, reads the echo back, then ends its side;
// the server's echo sees the end and closes, and so does the client.
struct EchoClient {
    std::string payload;
    std::string echoed;
    std::error_code connect_error;
    CloseReason closed{CloseKind::local, {}};
    bool done = false;

    void start(sim::Host& host, sim::Random pieces) {
        reactor::connect(host.scheduler(), "server", kEchoPort,
                         [this, pieces](ConnectionPtr c, std::error_code e) mutable {
                             connect_error = e;
                             if (!c) {
                                 done = true;
                                 return;
                             }
                             c->set_data_callback([this](Connection& c, std::string_view d) {
                                 echoed += d;
                                 if (echoed.size() == payload.size()) c.write_eof();
                             });
                             c->set_close_callback([this](Connection&, const CloseReason& r) {
                                 closed = r;
                                 done = true;
                             });
                             for (std::size_t at = 0; at < payload.size();) {
                                 const std::size_t n = std::min<std::size_t>(payload.size() - at,
                                                                             1 + pieces.below(8192));
                                 c->write(std::string_view(payload).substr(at, n));
                                 at += n;
                             }
                         });
    }
};

struct EchoRun {
    std::uint64_t hash = 0;
    std::uint64_t events = 0;
    bool all_echoed = true;
    reactor::Duration elapsed{};
};

EchoRun run_echo(std::uint64_t seed, int clients = 3, std::size_t bytes = 100'000) {
    sim::World world(seed);
    sim::Host& server = world.host("server");
    auto listener = echo_server(server);
    sim::Random draws(seed);
    std::vector<std::unique_ptr<EchoClient>> echo(static_cast<std::size_t>(clients));
    for (int i = 0; i < clients; ++i) {
        auto& e = echo[static_cast<std::size_t>(i)];
        e = std::make_unique<EchoClient>();
        for (std::size_t b = 0; b < bytes; ++b) e->payload.push_back(static_cast<char>('a' + (b * 7 + i) % 26));
        e->start(world.host("client-" + std::to_string(i)), draws.split(static_cast<std::uint64_t>(i)));
    }
    const bool finished = world.run_until(
        [&] {
            for (auto& e : echo)
                if (!e->done) return false;
            return listener->connections().empty();
        },
        60s);
    BOOST_TEST(finished);
    EchoRun run;
    for (auto& e : echo) {
        BOOST_TEST(!e->connect_error);
        BOOST_TEST(e->echoed.size() == e->payload.size());
        BOOST_TEST((e->closed.kind == CloseKind::eof), "client closed: " << e->closed.to_string());
        run.all_echoed = run.all_echoed && e->echoed == e->payload;
    }
    listener->close();
    BOOST_TEST((world.run_for(1s) == reactor::RunStatus::idle));
    for (std::size_t i = 0; i < world.host_count(); ++i) {
        sim::Host& h = i == 0 ? server : world.host("client-" + std::to_string(i - 1));
        BOOST_TEST(h.scheduler().empty(), h.name() << "'s loop is not empty");
    }
    run.hash = world.trace().hash();
    run.events = world.trace().events();
    run.elapsed = world.elapsed();
    return run;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_callback_echo_serves_every_byte_to_three_clients_in_a_world) {
    const EchoRun run = run_echo(1);
    const double virtual_ms = std::chrono::duration<double, std::milli>(run.elapsed).count();
    BOOST_TEST_MESSAGE("seed 1: " << run.events << " events, trace " << std::hex << run.hash << std::dec << ", "
                                  << virtual_ms << " virtual ms");
    BOOST_TEST(run.all_echoed);
    BOOST_TEST(run.events > 0u);
    BOOST_TEST(run.elapsed > reactor::Duration::zero());
    BOOST_TEST(run.elapsed < 60s);
}

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_trace_and_another_seed_another) {
    const EchoRun first = run_echo(42);
    const EchoRun again = run_echo(42);
    const EchoRun other = run_echo(43);
    BOOST_TEST(first.hash == again.hash);
    BOOST_TEST(first.events == again.events);
    BOOST_TEST((first.elapsed == again.elapsed));
    BOOST_TEST(first.hash != other.hash);
}

BOOST_AUTO_TEST_CASE(many_seeds_each_echo_every_byte) {
    for (std::uint64_t seed = 100; seed < 120; ++seed) {
        BOOST_TEST_CONTEXT("seed " << seed) { BOOST_TEST(run_echo(seed, 4, 20'000).all_echoed); }
    }
}

BOOST_AUTO_TEST_CASE(a_connect_to_a_port_nobody_listens_on_is_refused_and_to_no_host_unreachable) {
    sim::World world(7);
    sim::Host& server = world.host("server");
    sim::Host& client = world.host("client");
    std::error_code errors[2];
    for (int i = 0; i < 2; ++i) {
        const auto to = i == 0 ? server.address(9) : reactor::Address::parse("10.0.9.9", 9);
        reactor::connect(client.scheduler(), to, [&, i](ConnectionPtr c, std::error_code e) {
            BOOST_TEST(!c);
            errors[i] = e;
        });
    }
    BOOST_TEST((world.run_for(1s) == reactor::RunStatus::idle));
    BOOST_TEST((errors[0] == std::error_code(ECONNREFUSED, std::generic_category())), errors[0].message());
    BOOST_TEST((errors[1] == std::error_code(EHOSTUNREACH, std::generic_category())), errors[1].message());
    BOOST_TEST(client.scheduler().empty());
}

BOOST_AUTO_TEST_CASE(a_server_that_aborts_resets_its_client) {
    sim::World world(8);
    world.trace().keep_lines(true);  // a replay can print what happened
    sim::Host& server = world.host("server");
    sim::Host& client = world.host("client");
    auto listener = reactor::Listener::listen(server.scheduler(), server.address(kEchoPort), [](const ConnectionPtr& c) {
        c->set_data_callback([](Connection& c, std::string_view) { c.abort(); });
    });
    CloseReason reason{CloseKind::local, {}};
    bool closed = false;
    std::vector<int> fds{listener->fd()};
    reactor::connect(client.scheduler(), "server", kEchoPort, [&](ConnectionPtr c, std::error_code) {
        BOOST_REQUIRE(c);
        fds.push_back(c->fd());
        BOOST_TEST(c->peer_address().to_string() == server.address(kEchoPort).to_string());
        BOOST_TEST(c->local_address().host() == client.ip());
        c->set_close_callback([&](Connection&, const CloseReason& r) {
            reason = r;
            closed = true;
        });
        c->write("hello");
    });
    BOOST_REQUIRE(world.run_until([&] { return closed; }, 10s));
    BOOST_TEST((reason.kind == CloseKind::reset), reason.to_string());
    const auto& lines = world.trace().lines();
    BOOST_TEST(lines.size() == world.trace().events());
    BOOST_TEST((std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
                    return l.find(" reset 10.0.0.1:7 -> 10.0.0.2:") != std::string::npos;
                }) == 1));
    // The simulated kernel's fds are not the process's: a call that reached
    // the C library with one would fail, never touch a real file.
    for (int fd : fds) {
        BOOST_TEST(fd >= 4096);
        BOOST_TEST((::fcntl(fd, F_GETFD) == -1 && errno == EBADF), "fd " << fd << " is open in the process");
    }
    listener->close();
    world.run_for(1s);
    BOOST_TEST(server.scheduler().empty());
    BOOST_TEST(client.scheduler().empty());
}

BOOST_AUTO_TEST_CASE(timers_run_on_the_worlds_virtual_time) {
    sim::World world(9);
    sim::Host& a = world.host("a");
    std::vector<reactor::Duration> fired;
    a.scheduler().call_later(10s, [&] { fired.push_back(world.elapsed()); });
    a.scheduler().call_later(3h, [&] { fired.push_back(world.elapsed()); });
    BOOST_TEST((world.run_for(1min) == reactor::RunStatus::timed_out));
    BOOST_TEST((world.elapsed() == reactor::Duration(1min)));
    BOOST_TEST((world.run_for(5h) == reactor::RunStatus::idle));
    BOOST_REQUIRE(fired.size() == 2u);
    BOOST_TEST((fired[0] == reactor::Duration(10s)));
    BOOST_TEST((fired[1] == reactor::Duration(3h)));
}

BOOST_AUTO_TEST_CASE(a_hosts_loop_run_directly_is_refused_with_a_clear_error) {
    sim::World world(10);
    sim::Host& a = world.host("a");
    a.scheduler().call_later(1s, [] {});
    try {
        a.scheduler().run();
        BOOST_FAIL("run() on a simulated host's loop should have thrown");
    } catch (const std::logic_error& e) {
        BOOST_TEST(std::string(e.what()).find("run by its World") != std::string::npos, e.what());
    }
    BOOST_TEST((world.run_for(2s) == reactor::RunStatus::idle));
    BOOST_TEST(a.scheduler().empty());
}

BOOST_AUTO_TEST_CASE(a_host_busy_forever_at_one_instant_stops_the_run_with_its_name) {
    sim::World world(12);
    sim::Host& a = world.host("spinner");
    std::function<void()> again = [&] { a.scheduler().call_soon(again); };
    a.scheduler().call_soon(again);
    try {
        world.run_for(1s);
        BOOST_FAIL("a loop that never lets time pass should stop the run");
    } catch (const std::runtime_error& e) {
        BOOST_TEST(std::string(e.what()).find("host spinner") != std::string::npos, e.what());
    }
    BOOST_TEST((world.elapsed() == reactor::Duration::zero()));
}

// The futures layer runs unchanged too: a stream server and a client's
// open_connection talk through their hosts' kernels.
BOOST_AUTO_TEST_CASE(a_futures_stream_server_and_its_client_talk_in_a_world) {
    sim::World world(11);
    sim::Host& server = world.host("server");
    sim::Host& client = world.host("client");
    auto streams = futures::start_server(server.scheduler(), server.address(kEchoPort), [](futures::Stream s) {
        return s.read_until("\n").then([s](std::string line) mutable {
            (void)s.write("echo: " + line);
            return s.drain();
        });
    });
    auto reply = futures::open_connection(client.scheduler(), server.address(kEchoPort))
                     .then([](futures::Stream s) mutable {
                         (void)s.write("ping\n");
                         return s.read_until("\n").then([s](std::string line) mutable {
                             s.close();
                             return line;
                         });
                     });
    BOOST_REQUIRE(world.run_until([&] { return reply.done(); }, 10s));
    BOOST_TEST(reply.result() == "echo: ping\n");
    streams.close();
    BOOST_TEST((world.run_for(1s) == reactor::RunStatus::idle));
    BOOST_TEST(streams.active() == 0u);
}
