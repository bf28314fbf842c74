// SPDX-License-Identifier: MIT
// Runs examples/13_resolve for real and checks what it prints. Network rule:
// numeric hosts, "localhost" (skipped where /etc/hosts does not name it), and
// failures that never reach a name server (--numeric, an unknown service).
#include <boost/test/unit_test.hpp>

#include <netdb.h>

#include <string>
#include <vector>

#include "support/name_resolution.hpp"
#include "support/process.hpp"

namespace {

using reactor_test::Run;
using reactor_test::run_example;
using Lines = std::vector<std::string>;

}  // namespace

BOOST_AUTO_TEST_CASE(numeric_hosts_are_printed_in_the_order_given) {
    Run r = run_example("resolve", {"127.0.0.1", "::1", "127.0.0.2"});
    BOOST_TEST(r.code == 0);
    BOOST_TEST(r.out == (Lines{"resolving 3 hosts concurrently", "127.0.0.1: 127.0.0.1", "::1: ::1", "127.0.0.2: 127.0.0.2"}),
               boost::test_tools::per_element());
    BOOST_TEST(r.err.empty(), r.err);
}

BOOST_AUTO_TEST_CASE(a_service_adds_its_port) {
    Run r = run_example("resolve", {"--service", "80", "127.0.0.1", "::1"});
    BOOST_TEST(r.code == 0);
    BOOST_TEST(r.out == (Lines{"resolving 2 hosts concurrently", "127.0.0.1: 127.0.0.1:80", "::1: [::1]:80"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(localhost_prints_its_loopback_addresses, *reactor_test::needs_localhost()) {
    Run r = run_example("resolve", {"--family", "ipv4", "localhost"});
    BOOST_TEST(r.code == 0);
    BOOST_REQUIRE(r.out.size() == 2u);
    BOOST_TEST(r.out[1].starts_with("localhost: 127."), r.out[1]);
    BOOST_TEST(r.out[1].find("::") == std::string::npos, r.out[1]);  // --family ipv4
}

// Each failure is printed with the host named; the others still print; exit 1.
BOOST_AUTO_TEST_CASE(failures_name_the_host_and_set_the_exit_status) {
    Run r = run_example("resolve", {"--numeric", "localhost", "127.0.0.1"});
    BOOST_TEST(r.code == 1);
    BOOST_TEST(r.out == (Lines{"resolving 2 hosts concurrently",
                               "localhost: error: resolve host 'localhost' service '0': " +
                                   std::string(::gai_strerror(EAI_NONAME)),
                               "127.0.0.1: 127.0.0.1"}),
               boost::test_tools::per_element());
    Run service = run_example("resolve", {"--service", "no-such-service", "127.0.0.1"});
    BOOST_TEST(service.code == 1);
    BOOST_REQUIRE(service.out.size() == 2u);
    BOOST_TEST(service.out[1] == "127.0.0.1: error: resolve host '127.0.0.1' service 'no-such-service': " +
                                     std::string(::gai_strerror(EAI_SERVICE)));
}

BOOST_AUTO_TEST_CASE(rounds_repeat_the_lookups) {
    Run r = run_example("resolve", {"--count", "3", "--interval", "0", "::1"});
    BOOST_TEST(r.code == 0);
    BOOST_TEST(r.out == (Lines{"resolving 1 host concurrently", "::1: ::1", "::1: ::1", "::1: ::1"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(help_and_bad_arguments) {
    Run help = run_example("resolve", {"--help"});
    BOOST_TEST(help.code == 0);
    BOOST_REQUIRE(!help.out.empty());
    BOOST_TEST(help.out[0].starts_with("Looks the hosts up concurrently"), help.out[0]);
    bool usage = false;
    for (const auto& line : help.out) usage = usage || line.starts_with("Usage: resolve");
    BOOST_TEST(usage);
    for (const Lines& args : {Lines{}, Lines{"--family", "ipx", "::1"}, Lines{"--count", "0", "::1"},
                              Lines{"--interval", "-1", "::1"}, Lines{"--bogus", "::1"}}) {
        Run bad = run_example("resolve", args);
        BOOST_TEST(bad.code == 2);
        BOOST_TEST(bad.err.starts_with("resolve: "), bad.err);
        BOOST_TEST(bad.out.empty());
    }
}

// Ctrl-C between rounds: one last line and exit 130.
BOOST_AUTO_TEST_CASE(ctrl_c_stops_it_with_one_line_and_exit_130) {
    Run r = reactor_test::interrupt_after_first_line("resolve", {"--count", "1000", "--interval", "10", "::1"});
    BOOST_TEST(r.code == 130);
    BOOST_REQUIRE(!r.out.empty());
    BOOST_TEST(r.out.back() == "resolve: interrupted");
    BOOST_TEST(r.err.empty(), r.err);
}
