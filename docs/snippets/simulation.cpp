// SPDX-License-Identifier: MIT
// docs/testing.md, "A simulated world": a server and a client host in one
// sim::World, the library's own Listener and connect() between them.
#include <chrono>
#include <cstdint>
#include <string_view>
#include <system_error>

#include <boost/test/unit_test.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
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
