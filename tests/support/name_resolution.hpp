// SPDX-License-Identifier: MIT
// Test support for cases that look names up. A package build chroot (sbuild,
// pbuilder) may have no /etc/hosts, and then not even "localhost" resolves;
// a minimal system (debootstrap --variant=minbase, the debian:12 image) has
// no netbase, so no /etc/services, and service names such as "http" do not
// resolve either. Cases that need one are skipped there, with the reason,
// instead of failing; everything else uses numeric hosts and ports.
// Both helpers keep the network rule: nothing here sends a query anywhere on
// a machine whose /etc/hosts names localhost.
#pragma once

#include <stdexcept>
#include <string>

#include <boost/test/unit_test.hpp>

#include <reactor/net/address.hpp>

namespace reactor_test {

// Whether this machine resolves "localhost" (normally from /etc/hosts), and
// to loopback addresses only, so a test may connect to what it gets. Asked
// once per process, through the library's own lookup.
inline bool localhost_resolves_to_loopback() {
    static const bool ok = [] {
        try {
            auto found = reactor::Address::resolve("localhost", 0);
            for (const auto& a : found)
                if (!a.host().starts_with("127.") && a.host() != "::1") return false;
            return !found.empty();
        } catch (const std::runtime_error&) {
            return false;
        }
    }();
    return ok;
}

// A precondition for cases that look up "localhost":
//   BOOST_AUTO_TEST_CASE(name, *reactor_test::needs_localhost())
inline boost::unit_test::precondition needs_localhost() {
    // Captured, not written inline: Boost.Function stores a captureless
    // lambda as nothing yet copies its whole buffer, which GCC 12 at -O3
    // reports as a use of uninitialized memory (a false positive that
    // REACTOR_WERROR would turn into a failed Release build).
    const char* why = "this machine does not resolve 'localhost' to loopback addresses (no /etc/hosts, "
                      "as in a package build chroot), so the lookup is not tested here";
    return boost::unit_test::precondition([why](boost::unit_test::test_unit_id) {
        boost::test_tools::assertion_result result(localhost_resolves_to_loopback());
        result.message() << why;
        return result;
    });
}

// Whether this machine knows the service name "http" as TCP port 80 (from
// /etc/services, package netbase). Asked once per process, through the
// library's own lookup of a numeric host: no query leaves the machine.
inline bool service_names_resolve() {
    static const bool ok = [] {
        try {
            auto found = reactor::Address::resolve("127.0.0.1", "http");
            return !found.empty() && found.front().port() == 80;
        } catch (const std::runtime_error&) {
            return false;
        }
    }();
    return ok;
}

// A precondition for cases that look up a service by name ("http"):
//   BOOST_AUTO_TEST_CASE(name, *reactor_test::needs_service_names())
inline boost::unit_test::precondition needs_service_names() {
    // Captured, not inline: see needs_localhost().
    const char* why = "this machine does not know the service 'http' (no /etc/services: package netbase is "
                      "not installed, as in a minimal Debian image), so service names are not tested here";
    return boost::unit_test::precondition([why](boost::unit_test::test_unit_id) {
        boost::test_tools::assertion_result result(service_names_resolve());
        result.message() << why;
        return result;
    });
}

// A name that never resolves and is never sent to a DNS server: its first
// label is 64 octets, one more than DNS allows, so the resolver refuses it
// before building a query. (A merely unknown name such as
// "no-such-host.invalid" would go out to the configured name server, which
// the tests must never talk to.)
inline std::string unresolvable_name() { return std::string(64, 'x') + ".invalid"; }

}  // namespace reactor_test
