// SPDX-License-Identifier: MIT
// futures::open_connection over TLS with a connect_timeout, on every backend
// and a virtual clock: the bound covers the handshake too, and its error says
// the handshake was under way. The server is a loopback listening socket
// nobody accepts from: the kernel completes the TCP handshake, and the
// ClientHello is never answered.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

#include <futures/tls/stream.hpp>
#include <reactor/tls/context.hpp>

#include "support/net_util.hpp"
#include "support/tls_fixtures.hpp"
#include "support/virtual_time.hpp"

using namespace std::chrono_literals;
using futures::ConnectTimeoutError;

BOOST_AUTO_TEST_CASE(a_handshake_that_never_answers_fails_at_the_timeout_naming_the_handshake) {
    reactor_test::SilentListener silent;  // the kernel completes the TCP handshake; nobody answers
    const std::uint16_t port = silent.port;

    reactor::testing::VirtualLoop loop(reactor_test::backend_under_test());
    futures::StreamOptions options;
    options.connect_timeout = 1500ms;
    const auto start = loop.clock.now();
    auto f = futures::open_connection(loop.sched, reactor::Address::loopback_v4(port), reactor_test::client_context(),
                                      "localhost", options);
    for (int i = 0; i < 100000 && !f.done(); ++i) loop.sched.run_once();
    BOOST_REQUIRE(f.failed());
    // Well before the handshake's own 60 s timeout.
    BOOST_TEST((loop.clock.now() - start == 1500ms));
    try {
        f.result();
        BOOST_FAIL("must time out");
    } catch (const ConnectTimeoutError& e) {
        BOOST_TEST((e.step == ConnectTimeoutError::Step::tls_handshake));
        const std::string p = std::to_string(port);
        BOOST_TEST(std::string(e.what()) == "open_connection to 127.0.0.1:" + p +
                                                ": timed out after 1500 ms in the TLS handshake with 127.0.0.1:" + p);
    }
    loop.sched.run();  // the aborted handshake leaves nothing behind
    BOOST_TEST(loop.sched.empty());
}
