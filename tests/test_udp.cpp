// SPDX-License-Identifier: MIT
// UdpSocket over real sockets on 127.0.0.1 and ::1, on the backend under test.
// Each behaviour that does not depend on the family is one data test case run
// once per family ("family = IPv6" in its failures); its IPv6 sample is
// skipped, saying so, where there is no IPv6 loopback.
// Every case ends with the scheduler empty (CHECK_EMPTY). Nothing sleeps: a
// case waits for the loop with reactor_test::run_until (bounded by a watchdog
// timer) or, when a packet must have reached the kernel before the next step,
// for the kernel with a bounded poll(2).
// GCC 12 at -O3 (the Release build) warns, wrongly, of an overlapping memcpy
// inside Boost.Test's naming of data test cases (GCC bug 105329).
#if !defined(__clang__)  // a GCC warning clang does not know
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <reactor/net/udp_socket.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/net_util.hpp"

using namespace std::chrono_literals;
using reactor::Address;
using reactor::UdpSocket;
using reactor_test::on;

namespace {

// The samples of the data test cases; Boost.Test prints them in failures.
enum class Family { ipv4, ipv6 };
std::ostream& operator<<(std::ostream& os, Family f) { return os << (f == Family::ipv4 ? "IPv4" : "IPv6"); }
const std::vector<Family> kFamilies{Family::ipv4, Family::ipv6};

int domain(Family f) { return f == Family::ipv6 ? AF_INET6 : AF_INET; }
Address loopback(Family f, std::uint16_t port = 0) {
    return f == Family::ipv6 ? Address::loopback_v6(port) : Address::loopback_v4(port);
}

// True if a plain IPv6 socket binds to `address`.
bool binds_v6(const Address& address) {
    int fd = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    bool ok = ::bind(fd, address.data(), address.size()) == 0;
    ::close(fd);
    return ok;
}

// Whether a sample can run here: the IPv6 one needs an IPv6 loopback. A
// skipped sample says so (a warning in the log) rather than passing silently.
bool runs_here(Family f) {
    if (f == Family::ipv4 || binds_v6(Address::loopback_v6(0))) return true;
    BOOST_WARN_MESSAGE(false, "skipped: no IPv6 loopback (::1) here");
    return false;
}

// An IPv6 socket bound to an IPv4-mapped address needs net.ipv6.bindv6only = 0.
boost::unit_test::precondition needs_dual_stack() {
    return boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
        boost::test_tools::assertion_result result(binds_v6(Address::parse("::ffff:127.0.0.1", 0)));
        result.message() << "IPv6 sockets here are IPv6-only (bindv6only)";
        return result;
    });
}

// A loopback port where nothing listens: bound by a throwaway socket, then
// closed. (A later bind to port 0 could draw the same number by chance; the
// kernel picks among tens of thousands.)
Address dead_port(Family f) {
    int fd = ::socket(domain(f), SOCK_DGRAM | SOCK_CLOEXEC, 0);
    BOOST_REQUIRE(fd >= 0);
    Address any_port = loopback(f);
    BOOST_REQUIRE(::bind(fd, any_port.data(), any_port.size()) == 0);
    Address bound = Address::local_of(fd);
    ::close(fd);
    return bound;
}

// Blocks until the kernel has something queued for `fd`, at most 10 s:
// `events` POLLIN for a datagram, 0 for an error (POLLERR is always
// reported). For the steps that need a packet, or the ICMP error it caused,
// to have arrived, without guessing a time.
bool wait_for_kernel(int fd, short events) {
    pollfd p{fd, events, 0};
    return ::poll(&p, 1, 10'000) == 1;
}

struct SeenError {
    std::error_code code;
    Address destination;
};
UdpSocket::ErrorCallback record_into(std::vector<SeenError>& out) {
    return [&out](UdpSocket&, std::error_code code, const Address& destination) {
        out.push_back(SeenError{code, destination});
    };
}
UdpSocket::DatagramCallback record_into(std::vector<std::string>& out) {
    return [&out](UdpSocket&, std::string_view data, const Address&) { out.emplace_back(data); };
}

}  // namespace

BOOST_DATA_TEST_CASE(round_trip_datagrams_keep_their_boundaries, kFamilies, family) {
    if (!runs_here(family)) return;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto server = UdpSocket::bind(sched, loopback(family));
    auto client = UdpSocket::bind(sched, loopback(family));
    BOOST_TEST(server->local_address().port() != 0);

    // The server answers each datagram with its upper-cased copy.
    server->set_datagram_callback([](UdpSocket& s, std::string_view d, const Address& from) {
        std::string up(d);
        for (auto& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        s.send_to(up, from);
    });
    std::vector<std::string> got;
    std::vector<Address> senders;
    client->set_datagram_callback([&](UdpSocket&, std::string_view d, const Address& from) {
        got.emplace_back(d);
        senders.push_back(from);
    });
    const std::vector<std::string> sent{"one", "", "three", std::string(60000, 'x')};
    for (const auto& d : sent) BOOST_TEST(client->send_to(d, server->local_address()));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got.size() == sent.size(); }));
    // Loopback does not reorder; every datagram arrives whole.
    BOOST_TEST(got[0] == "ONE");
    BOOST_TEST(got[1] == "");
    BOOST_TEST(got[2] == "THREE");
    BOOST_TEST(got[3] == std::string(60000, 'X'));
    for (const auto& a : senders) BOOST_TEST((a == server->local_address()));
    BOOST_TEST(senders[0].to_string() == server->local_address().to_string());  // "[::1]:port" for IPv6
    server->close();
    client.reset();
    BOOST_TEST(!server->send_to("closed", loopback(family, 9)));
    sched.run();
    CHECK_EMPTY(sched);
}

// A datagram too large for the family: the send fails (EMSGSIZE) and the
// kernel also queues the error on the socket's error queue; it must reach the
// error callback once, on a later iteration, naming the destination. The
// sizes are ones that take that path: over IPv4 one that passes UDP's own
// 65,535-byte check but not IP's, over IPv6 any oversized one.
BOOST_DATA_TEST_CASE(kernel_refusal_is_reported_once, kFamilies, family) {
    if (!runs_here(family)) return;
    const std::size_t too_big = family == Family::ipv4 ? 65'520 : 70'000;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto sock = UdpSocket::bind(sched, loopback(family));
    std::vector<SeenError> errors;
    sock->set_error_callback(record_into(errors));
    std::vector<std::string> got;
    sock->set_datagram_callback(record_into(got));
    BOOST_TEST(!sock->send_to(std::string(too_big, 'x'), sock->local_address()));
    BOOST_TEST(errors.empty());
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !errors.empty(); }));
    BOOST_TEST(errors[0].code.value() == EMSGSIZE);
    BOOST_TEST((errors[0].destination == sock->local_address()));
    // A datagram to itself gets the socket read again (error queue included).
    BOOST_TEST(sock->send_to("marker", sock->local_address()));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !got.empty(); }));
    BOOST_TEST(got == std::vector<std::string>{"marker"});
    BOOST_TEST(errors.size() == 1u);
    sock->close();
    sched.run();
    CHECK_EMPTY(sched);
}

// (a) The peer's port is closed: its ICMP port-unreachable comes back as
// ECONNREFUSED, once per datagram, naming the peer.
BOOST_DATA_TEST_CASE(connected_socket_gets_econnrefused_naming_its_peer, kFamilies, family) {
    if (!runs_here(family)) return;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    const Address dead = dead_port(family);
    auto sock = UdpSocket::connect(sched, dead);
    BOOST_TEST(sock->is_connected());
    BOOST_TEST((sock->peer_address() == dead));
    // connect() narrowed the any-address to the loopback that routes there.
    BOOST_TEST(sock->local_address().host() == dead.host());
    std::vector<SeenError> errors;
    sock->set_error_callback(record_into(errors));
    BOOST_TEST(sock->send("anyone there?"));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !errors.empty(); }));
    BOOST_TEST(errors.size() == 1u);
    BOOST_TEST((errors[0].code == std::errc::connection_refused));
    BOOST_TEST((errors[0].destination == dead));
    sock->close();
    sched.run();
    CHECK_EMPTY(sched);
}

// (b) The same for a socket that is not connected, and which sends to two
// destinations of which only one is dead: the error names the dead one.
void unconnected_socket_is_refused(const Address& local, const Address& dead, const Address& live_local) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto sock = UdpSocket::bind(sched, local);
    auto live = UdpSocket::bind(sched, live_local);
    std::vector<SeenError> errors;
    sock->set_error_callback(record_into(errors));
    std::vector<std::string> got;
    live->set_datagram_callback(record_into(got));
    BOOST_TEST(sock->send_to("anyone there?", dead));
    BOOST_TEST(sock->send_to("hello", live->local_address()));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !errors.empty() && !got.empty(); }));
    BOOST_TEST(errors.size() == 1u);
    BOOST_TEST((errors[0].code == std::errc::connection_refused));
    BOOST_CHECK_MESSAGE(errors[0].destination == dead, errors[0].destination.to_string() << " != " << dead.to_string());
    BOOST_TEST(got == std::vector<std::string>{"hello"});
    sock.reset();
    live.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_DATA_TEST_CASE(unconnected_socket_gets_econnrefused_naming_the_destination, kFamilies, family) {
    if (!runs_here(family)) return;
    unconnected_socket_is_refused(loopback(family), dead_port(family), loopback(family));
}
// An IPv6 socket's IPv4 traffic (IPv4-mapped addresses) gets its ICMP errors
// through IP_RECVERR, not IPV6_RECVERR: both must be on.
BOOST_AUTO_TEST_CASE(dual_stack_socket_gets_econnrefused_for_its_ipv4_traffic, *needs_dual_stack()) {
    const Address mapped_loopback = Address::parse("::ffff:127.0.0.1", 0);
    const Address mapped_dead = Address::parse("::ffff:127.0.0.1", dead_port(Family::ipv4).port());
    unconnected_socket_is_refused(mapped_loopback, mapped_dead, mapped_loopback);
}

// A pending ICMP error fails the socket's next send, whatever its destination
// (the kernel hands the error to whichever call comes first). That datagram
// must still be sent, and the error reported once, for the dead destination.
BOOST_DATA_TEST_CASE(refusal_does_not_cost_the_next_datagram, kFamilies, family) {
    if (!runs_here(family)) return;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    const Address dead = dead_port(family);
    auto sock = UdpSocket::bind(sched, loopback(family));
    auto live = UdpSocket::bind(sched, loopback(family));
    std::vector<SeenError> errors;
    sock->set_error_callback(record_into(errors));
    std::vector<std::string> got;
    live->set_datagram_callback(record_into(got));
    BOOST_TEST(sock->send_to("nobody", dead));
    BOOST_REQUIRE(wait_for_kernel(sock->fd(), 0));  // the port-unreachable is now pending on sock
    BOOST_TEST(sock->send_to("somebody", live->local_address()));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !got.empty() && !errors.empty(); }));
    BOOST_TEST(got == std::vector<std::string>{"somebody"});
    BOOST_TEST((errors[0].code == std::errc::connection_refused));
    BOOST_TEST((errors[0].destination == dead));
    // One more exchange, so that a duplicate report would have arrived.
    BOOST_TEST(sock->send_to("again", live->local_address()));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got.size() == 2; }));
    BOOST_TEST(errors.size() == 1u);
    sock.reset();
    live.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

// Regression: an error-queue entry whose pending error was already taken
// (here by the user, through SO_ERROR) keeps the socket readable on every
// backend while recvfrom has nothing to say; unless the receive path reads
// the queue anyway, the loop spins and the error is never reported.
BOOST_AUTO_TEST_CASE(error_queue_is_read_when_recvfrom_reports_nothing) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    const Address dead = dead_port(Family::ipv4);
    auto sock = UdpSocket::bind(sched, loopback(Family::ipv4));
    std::vector<SeenError> errors;
    sock->set_error_callback(record_into(errors));
    BOOST_TEST(sock->send_to("nobody", dead));
    BOOST_REQUIRE(wait_for_kernel(sock->fd(), 0));
    int pending = 0;
    socklen_t len = sizeof pending;
    BOOST_REQUIRE(::getsockopt(sock->fd(), SOL_SOCKET, SO_ERROR, &pending, &len) == 0);
    BOOST_TEST(pending == ECONNREFUSED);
    BOOST_TEST(wait_for_kernel(sock->fd(), 0));  // still POLLERR: the queue entry
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !errors.empty(); }, 5s));
    BOOST_TEST(errors.size() == 1u);
    BOOST_TEST((errors[0].code == std::errc::connection_refused));
    BOOST_TEST((errors[0].destination == dead));
    sock->close();
    sched.run();
    CHECK_EMPTY(sched);
}

// (c) A connected socket talks with its peer through send() and send_to(peer)
// and hears nobody else: neither a datagram a stranger sent before connect()
// (still in the kernel's receive queue then) nor one sent after (which the
// kernel refuses: the stranger hears port-unreachable).
BOOST_DATA_TEST_CASE(connected_socket_hears_only_its_peer, kFamilies, family) {
    if (!runs_here(family)) return;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto server = UdpSocket::bind(sched, loopback(family));
    auto stranger = UdpSocket::bind(sched, loopback(family));
    auto client = UdpSocket::bind(sched, loopback(family));
    BOOST_TEST(stranger->send_to("early", client->local_address()));
    BOOST_REQUIRE(wait_for_kernel(client->fd(), POLLIN));
    client->connect(server->local_address());
    BOOST_TEST((client->peer_address() == server->local_address()));

    server->set_datagram_callback([](UdpSocket& s, std::string_view d, const Address& from) {
        s.send_to("re: " + std::string(d), from);
    });
    std::vector<std::string> got;
    std::vector<Address> senders;
    client->set_datagram_callback([&](UdpSocket&, std::string_view d, const Address& from) {
        got.emplace_back(d);
        senders.push_back(from);
    });
    std::vector<SeenError> stranger_errors;
    stranger->set_error_callback(record_into(stranger_errors));

    BOOST_TEST(stranger->send_to("late", client->local_address()));
    BOOST_TEST(client->send("ping"));
    BOOST_TEST(client->send_to("pong", server->local_address()));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got.size() == 2 && !stranger_errors.empty(); }));
    BOOST_TEST(got == (std::vector<std::string>{"re: ping", "re: pong"}));
    for (const auto& a : senders) BOOST_TEST((a == server->local_address()));
    BOOST_TEST(stranger_errors.size() == 1u);
    BOOST_TEST((stranger_errors[0].code == std::errc::connection_refused));
    BOOST_TEST((stranger_errors[0].destination == client->local_address()));
    server.reset();
    stranger.reset();
    client.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

// (d) Caller bugs throw at once and send nothing; the socket stays usable.
BOOST_DATA_TEST_CASE(misuse_throws_and_sends_nothing, kFamilies, family) {
    if (!runs_here(family)) return;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    const Family other_family = family == Family::ipv4 ? Family::ipv6 : Family::ipv4;
    auto peer = UdpSocket::bind(sched, loopback(family));
    auto bystander = UdpSocket::bind(sched, loopback(family));
    auto sock = UdpSocket::bind(sched, loopback(family));
    std::vector<std::string> peer_got, bystander_got;
    peer->set_datagram_callback(record_into(peer_got));
    bystander->set_datagram_callback(record_into(bystander_got));
    std::vector<SeenError> errors;
    sock->set_error_callback(record_into(errors));

    BOOST_CHECK_THROW(sock->send("where to?"), std::logic_error);
    BOOST_CHECK_THROW(sock->connect(loopback(other_family, peer->local_address().port())), std::invalid_argument);
    BOOST_CHECK_THROW(sock->connect(Address::unix_path("@reactor-test-udp")), std::invalid_argument);
    BOOST_CHECK_THROW(sock->connect(Address{}), std::invalid_argument);
    BOOST_CHECK_THROW((void)UdpSocket::connect(sched, Address::unix_path("@reactor-test-udp")), std::invalid_argument);
    BOOST_TEST(!sock->is_connected());

    sock->connect(peer->local_address());
    BOOST_CHECK_THROW(sock->connect(bystander->local_address()), std::logic_error);
    BOOST_CHECK_THROW(sock->send_to("misdirected", bystander->local_address()), std::invalid_argument);
    BOOST_TEST((sock->peer_address() == peer->local_address()));
    BOOST_TEST(sock->queued_bytes() == 0u);

    // Still usable. The marker, sent after the misdirected datagram would
    // have been, reaches the bystander alone: loopback delivers in order.
    BOOST_TEST(sock->send("fine"));
    BOOST_TEST(peer->send_to("marker", bystander->local_address()));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !peer_got.empty() && !bystander_got.empty(); }));
    BOOST_TEST(peer_got == std::vector<std::string>{"fine"});
    BOOST_TEST(bystander_got == std::vector<std::string>{"marker"});
    BOOST_TEST(errors.empty());

    // Closed: sends are dropped (false), connect is a bug.
    sock->close();
    BOOST_TEST(!sock->send("closed"));
    BOOST_CHECK_THROW(sock->connect(peer->local_address()), std::logic_error);
    peer.reset();
    bystander.reset();
    sock.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

// Two refusals read from the error queue in one batch: the first callback
// closes the socket and drops the last reference; the second must not be
// delivered, neither to the callback nor to the exception handler.
BOOST_AUTO_TEST_CASE(close_from_inside_the_error_callback_and_drop_the_last_reference) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    int handled = 0;
    sched.set_exception_handler([&](const reactor::ErrorContext&) { ++handled; });
    const Address dead = dead_port(Family::ipv4);
    auto sock = UdpSocket::bind(sched, loopback(Family::ipv4));
    const int fd = sock->fd();
    int calls = 0;
    sock->set_error_callback([&](UdpSocket& s, std::error_code, const Address&) {
        ++calls;
        s.close();
        sock.reset();  // our only reference, while this callback runs
    });
    // Taking the first refusal's pending error (SO_ERROR) lets the second
    // send through, so both refusals wait on the error queue together.
    BOOST_TEST(sock->send_to("1", dead));
    BOOST_REQUIRE(wait_for_kernel(fd, 0));
    int pending = 0;
    socklen_t len = sizeof pending;
    BOOST_REQUIRE(::getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &len) == 0);
    BOOST_TEST(sock->send_to("2", dead));
    BOOST_REQUIRE(wait_for_kernel(fd, 0));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return calls > 0; }));
    sched.run();
    BOOST_TEST(calls == 1);
    BOOST_TEST(handled == 0);
    BOOST_TEST(!sock);
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(burst_larger_than_the_socket_buffer_is_queued_or_counted) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // 4,000 x 1 KiB sent in one go: what the kernel does not take at once is
    // queued and sent when writable (or dropped and counted past the limit);
    // nothing is lost silently on the sending side.
    reactor::Scheduler sched(on(backend));
    auto sender = UdpSocket::bind(sched, Address::loopback_v4(0));
    auto receiver = UdpSocket::bind(sched, Address::loopback_v4(0));
    std::size_t received = 0;
    receiver->set_datagram_callback([&](UdpSocket&, std::string_view d, const Address&) {
        BOOST_TEST(d.size() == 1024u);
        ++received;
    });
    std::size_t accepted = 0;
    for (int i = 0; i < 4000; ++i) accepted += sender->send_to(std::string(1024, 'd'), receiver->local_address());
    BOOST_TEST(accepted + sender->dropped() == 4000u);
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return sender->queued_bytes() == 0; }));
    // The receiver may lose datagrams (that is UDP); it must not get more.
    reactor_test::run_until(sched, [&] { return received == accepted; }, 500ms);
    BOOST_TEST(received <= accepted);
    BOOST_TEST(received > 0u);
    sender.reset();
    receiver.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(close_from_inside_the_datagram_callback_and_drop_the_last_reference) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto sock = UdpSocket::bind(sched, Address::loopback_v4(0));
    auto peer = UdpSocket::bind(sched, Address::loopback_v4(0));
    int calls = 0;
    sock->set_datagram_callback([&](UdpSocket& s, std::string_view, const Address&) {
        ++calls;
        s.close();
        sock.reset();  // our only reference, while this callback runs
    });
    peer->send_to("1", sock->local_address());
    peer->send_to("2", sock->local_address());
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return calls > 0; }));
    peer.reset();
    sched.run();
    BOOST_TEST(calls == 1);
    CHECK_EMPTY(sched);
}
