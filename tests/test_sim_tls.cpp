// SPDX-License-Identifier: MIT
// TLS inside a simulated world replays from its seed once OpenSSL draws its
// randomness from the world (sim::TlsRandomness): the library's own
// tls::listen and tls::connect over simulated TCP, an echo, the same trace
// hash twice. The certificates are made once, outside the worlds (their
// validity is real time). Virtual time only.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include <reactor/tls/certificate_maker.hpp>
#include <reactor/tls/listen.hpp>
#include <reactor/testing/sim/tls_randomness.hpp>
#include <reactor/testing/sim/world.hpp>

using namespace std::chrono_literals;
namespace sim = reactor::testing::sim;
namespace tls = reactor::tls;

namespace {

constexpr std::uint16_t kPort = 443;

struct Certificates {
    tls::CertificateAuthority ca;
    tls::IssuedCertificate server = ca.issue_server({"server"});
};

const Certificates& certificates() {
    static const Certificates made;
    return made;
}

// One TLS echo in a fresh world of `seed`: its trace hash. Tickets off: a
// ticket carries its real issue time (tls_randomness.hpp).
std::uint64_t tls_echo_hash(std::uint64_t seed) {
    const Certificates& certs = certificates();
    tls::ServerOptions server_options;
    server_options.identity = tls::Identity::from_pem(certs.server.certificate_pem, certs.server.key_pem);
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
    (void)certificates();  // made before: outside any world
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
