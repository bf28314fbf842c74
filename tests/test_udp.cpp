// UdpSocket over real sockets on 127.0.0.1 (and ::1 when present), on every backend.
#define BOOST_TEST_MODULE udp
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include <reactor/udp_socket.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"

using namespace std::chrono_literals;
using reactor::Address;
using reactor::UdpSocket;
using reactor_test::on;

BOOST_AUTO_TEST_CASE(round_trip_datagrams_keep_their_boundaries) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    auto server = UdpSocket::bind(sched, Address::loopback_v4(0));
    auto client = UdpSocket::bind(sched, Address::loopback_v4(0));
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
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return got.size() == sent.size(); }));
    // Loopback does not reorder; every datagram arrives whole.
    BOOST_TEST(got[0] == "ONE");
    BOOST_TEST(got[1] == "");
    BOOST_TEST(got[2] == "THREE");
    BOOST_TEST(got[3] == std::string(60000, 'X'));
    for (const auto& a : senders) BOOST_TEST((a == server->local_address()));
    server->close();
    client.reset();
    BOOST_TEST(!server->send_to("closed", Address::loopback_v4(9)));
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(kernel_refusal_goes_to_the_error_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    auto sock = UdpSocket::bind(sched, Address::loopback_v4(0));
    std::vector<std::error_code> errors;
    sock->set_error_callback([&](UdpSocket&, std::error_code ec) { errors.push_back(ec); });
    // Larger than any UDP datagram can be: EMSGSIZE, reported on a later iteration.
    BOOST_TEST(!sock->send_to(std::string(70000, 'x'), Address::loopback_v4(9)));
    BOOST_TEST(errors.empty());
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return !errors.empty(); }));
    BOOST_TEST(errors[0].value() == EMSGSIZE);
    sock->close();
    sched.run();
    BOOST_TEST(sched.empty());
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
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return sender->queued_bytes() == 0; }));
    // The receiver may lose datagrams (that is UDP); it must not get more.
    nettest::run_until(sched, [&] { return received == accepted; }, 500ms);
    BOOST_TEST(received <= accepted);
    BOOST_TEST(received > 0u);
    sender.reset();
    receiver.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(ipv6_round_trip) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    reactor::UdpSocketPtr a, b;
    try {
        a = UdpSocket::bind(sched, Address::loopback_v6(0));
        b = UdpSocket::bind(sched, Address::loopback_v6(0));
    } catch (const std::system_error& e) {
        BOOST_TEST_MESSAGE("no IPv6 loopback here (" << e.what() << "); skipped");
        return;
    }
    std::string got;
    b->set_datagram_callback([&](UdpSocket&, std::string_view d, const Address& from) {
        got = std::string(d) + " from " + from.to_string();
    });
    a->send_to("v6", b->local_address());
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return !got.empty(); }));
    BOOST_TEST(got == "v6 from " + a->local_address().to_string());
    a->close();
    b->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(close_from_inside_the_datagram_callback_and_drop_the_last_reference) {
    reactor::Scheduler sched;
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
    BOOST_REQUIRE(nettest::run_until(sched, [&] { return calls > 0; }));
    peer.reset();
    sched.run();
    BOOST_TEST(calls == 1);
    BOOST_TEST(sched.empty());
}
