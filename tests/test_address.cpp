// SPDX-License-Identifier: MIT
// reactor::Address: numeric parsing and formatting, and name lookup of
// localhost only; no network needed.
#include <boost/test/unit_test.hpp>
#include <stdexcept>

#include <reactor/net/address.hpp>
#include <reactor/net/detail/packed_address.hpp>

#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

#include "support/name_resolution.hpp"

using reactor::Address;

BOOST_AUTO_TEST_CASE(ipv4_and_ipv6_round_trip_through_text) {
    auto a = Address::parse("127.0.0.1", 8080);
    BOOST_TEST(a.family() == AF_INET);
    BOOST_TEST(a.port() == 8080);
    BOOST_TEST(a.host() == "127.0.0.1");
    BOOST_TEST(a.to_string() == "127.0.0.1:8080");
    BOOST_TEST((Address::parse("127.0.0.1:8080") == a));

    auto b = Address::parse("::1", 443);
    BOOST_TEST(b.family() == AF_INET6);
    BOOST_TEST(b.to_string() == "[::1]:443");
    BOOST_TEST((Address::parse("[::1]:443") == b));
    BOOST_TEST(Address::parse("[2001:db8::a:0:1]:0").host() == "2001:db8::a:0:1");
    BOOST_TEST(Address::parse("0.0.0.0", 0).to_string() == "0.0.0.0:0");
}

BOOST_AUTO_TEST_CASE(non_numeric_or_malformed_input_is_refused) {
    for (const char* bad : {"localhost", "256.0.0.1", "1.2.3", "", "fe80::1%lo", "::g", " 127.0.0.1"})
        BOOST_CHECK_THROW(Address::parse(bad, 1), std::invalid_argument);
    for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "::1:80", "[::1]", "[::1]:8x"})
        BOOST_CHECK_THROW(Address::parse(bad), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(unix_paths_and_abstract_names) {
    auto f = Address::unix_path("/tmp/x.sock");
    BOOST_TEST(f.is_unix());
    BOOST_TEST(f.host() == "/tmp/x.sock");
    BOOST_TEST(f.to_string() == "unix:/tmp/x.sock");
    BOOST_TEST(f.port() == 0);
    BOOST_TEST(Address::unix_path("@name").host() == "@name");
    BOOST_CHECK_THROW(Address::unix_path(""), std::invalid_argument);
    BOOST_CHECK_THROW(Address::unix_path(std::string(200, 'x')), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(resolve_numeric_hosts_without_a_lookup) {
    auto v = Address::resolve("10.1.2.3", 7);
    BOOST_TEST(v.size() == 1u);
    BOOST_TEST(v[0].to_string() == "10.1.2.3:7");
    BOOST_TEST(Address::resolve("::1", 8)[0].to_string() == "[::1]:8");
}

BOOST_AUTO_TEST_CASE(resolve_a_name_that_cannot_exist_throws) {
    BOOST_CHECK_THROW(Address::resolve(reactor_test::unresolvable_name(), 1), std::runtime_error);
}

// localhost comes from /etc/hosts: no DNS traffic needed, but no answer
// either where there is no /etc/hosts (build chroots).
BOOST_AUTO_TEST_CASE(resolve_localhost_to_loopback_addresses, *reactor_test::needs_localhost()) {
    auto l = Address::resolve("localhost", 9);
    BOOST_TEST(!l.empty());
    for (const auto& a : l) BOOST_TEST(a.port() == 9);
}

BOOST_AUTO_TEST_CASE(unspecified_address) {
    Address none;
    BOOST_TEST(none.family() == AF_UNSPEC);
    BOOST_TEST(none.to_string() == "unspecified");
    BOOST_TEST(Address::local_of(-1).family() == AF_UNSPEC);
}

BOOST_AUTO_TEST_CASE(with_port_keeps_the_address_and_changes_the_port) {
    auto v4 = reactor::Address::parse("127.0.0.1", 8080).with_port(9090);
    BOOST_TEST(v4.to_string() == "127.0.0.1:9090");
    auto v6 = reactor::Address::parse("::1", 80).with_port(443);
    BOOST_TEST(v6.to_string() == "[::1]:443");
    BOOST_TEST((reactor::Address::parse("::1", 1).with_port(0) == reactor::Address::parse("::1", 0)));
    BOOST_CHECK_THROW(reactor::Address::unix_path("/tmp/x.sock").with_port(1), std::invalid_argument);
    BOOST_CHECK_THROW(reactor::Address().with_port(1), std::invalid_argument);
}

// A connection keeps its peer packed (20 bytes, detail::PackedAddress): what
// it gives back is the address it was given, whichever form it took inside.
BOOST_AUTO_TEST_CASE(a_packed_address_gives_back_the_address_it_was_given) {
    sockaddr_in6 scoped{};  // a link-local peer: its scope and flow label go to the heap with it
    scoped.sin6_family = AF_INET6;
    scoped.sin6_port = htons(7);
    scoped.sin6_scope_id = 3;
    scoped.sin6_flowinfo = htonl(0x12345);
    scoped.sin6_addr.s6_addr[0] = 0xfe;
    scoped.sin6_addr.s6_addr[1] = 0x80;
    scoped.sin6_addr.s6_addr[15] = 1;
    sockaddr_un unnamed{};  // a Unix client that did not bind: its family alone
    unnamed.sun_family = AF_UNIX;
    const Address addresses[] = {
        Address(),
        Address::parse("127.0.0.1", 8080),
        Address::parse("::1", 443),
        Address::parse("[2001:db8::a:0:1]:65535"),
        Address::from_sockaddr(reinterpret_cast<const sockaddr*>(&scoped), sizeof scoped),
        Address::from_sockaddr(reinterpret_cast<const sockaddr*>(&unnamed), sizeof(sa_family_t)),
        Address::unix_path("/tmp/a.sock"),
        Address::unix_path(std::string(100, 'p')),
    };
    for (const Address& a : addresses) {
        reactor::detail::PackedAddress packed(a);
        const Address back = packed.get();
        BOOST_TEST(back.size() == a.size());
        BOOST_TEST(std::memcmp(back.data(), a.data(), a.size()) == 0, a.to_string());
        reactor::detail::PackedAddress reassigned(Address::parse("::1", 1));
        reassigned = a;  // from inline to any form, the heap's freed (AddressSanitizer)
        BOOST_TEST((reassigned.get() == a), a.to_string());
    }
    BOOST_TEST(sizeof(reactor::detail::PackedAddress) <= 20u);
}
