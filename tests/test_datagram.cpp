// SPDX-License-Identifier: MIT
// futures::DatagramSocket over real UDP sockets on 127.0.0.1 and ::1, on the
// backend under test: receive as a future of (datagram, sender), FIFO among
// receives, cancelled receives taking nothing, buffering and its limit, the
// kernel's reports as failed receives, sends as futures done once the kernel
// took them (awaited one by one: back-pressure), refusals, misuse, close().
// Each family-independent case runs once per family; the IPv6 sample is
// skipped, saying so, where there is no IPv6 loopback. Every wait on the
// loop is bounded (futures::run_until with a limit).
// GCC 12 at -O3 warns, wrongly, inside Boost.Test's naming of data test cases (GCC bug 105329).
#if !defined(__clang__)  // a GCC warning clang does not know
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <futures/datagram.hpp>
#include <futures/futures.hpp>

#include "support/backends.hpp"
#include "support/futures_util.hpp"

using namespace std::chrono_literals;
using futures::Datagram;
using futures::DatagramSocket;
using futures::Future;
using futures::Step;
using reactor_test::error_of;
using reactor_test::mentions;
using reactor_test::what;
using reactor::Address;
using reactor_test::on;

namespace {

enum class Family { ipv4, ipv6 };
std::ostream& operator<<(std::ostream& os, Family f) { return os << (f == Family::ipv4 ? "IPv4" : "IPv6"); }
const std::vector<Family> kFamilies{Family::ipv4, Family::ipv6};

Address loopback(Family f, std::uint16_t port = 0) {
    return f == Family::ipv6 ? Address::loopback_v6(port) : Address::loopback_v4(port);
}

bool runs_here(Family f) {
    if (f == Family::ipv4) return true;
    int fd = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    Address a = Address::loopback_v6(0);
    bool ok = fd >= 0 && ::bind(fd, a.data(), a.size()) == 0;
    if (fd >= 0) ::close(fd);
    BOOST_WARN_MESSAGE(ok, "skipped: no IPv6 loopback (::1) here");
    return ok;
}

// A loopback port where nothing listens (bound by a throwaway socket, then closed).
Address dead_port(Family f) {
    int fd = ::socket(f == Family::ipv6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    BOOST_REQUIRE(fd >= 0);
    Address any = loopback(f);
    BOOST_REQUIRE(::bind(fd, any.data(), any.size()) == 0);
    Address bound = Address::local_of(fd);
    ::close(fd);
    return bound;
}

std::error_code code_of(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::system_error& ex) {
        return ex.code();
    } catch (...) {
        return {};
    }
}


// Sends `count` datagrams of `size` bytes, each only once the previous one's
// future is done: the sender never runs ahead of the kernel.
class Pacer {
public:
    Pacer(DatagramSocket& s, Address to, int count, std::size_t size) : s_(&s), to_(to), count_(count), size_(size) {}
    Step<int> resume() {
        if (sent_ > 0) send_.result();  // rethrows a refusal
        if (sent_ == count_) return sent_;
        ++sent_;
        return send_ = s_->send_to(std::string(size_, static_cast<char>('a' + sent_ % 26)), to_);
    }

private:
    DatagramSocket* s_;
    Address to_;
    int count_;
    std::size_t size_;
    int sent_ = 0;
    Future<void> send_;
};

}  // namespace

BOOST_DATA_TEST_CASE(receive_gives_each_datagram_and_its_sender, kFamilies, family) {
    if (!runs_here(family)) return;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto a = DatagramSocket::bind(sched, loopback(family));
    auto b = DatagramSocket::bind(sched, loopback(family));
    Future<Datagram> first = a->receive(), second = a->receive();
    BOOST_TEST(a->waiting_receives() == 2u);
    Future<void> sent = b->send_to("hello", a->local_address());
    BOOST_TEST(sent.done());  // the kernel took it at once
    (void)b->send_to(std::string("\0two", 4), a->local_address());
    BOOST_REQUIRE(futures::run_until(sched, second, 10s));
    BOOST_TEST(first.result().data == "hello");
    BOOST_TEST((first.result().from == b->local_address()));
    BOOST_TEST(second.result().data == std::string("\0two", 4));  // boundaries and bytes kept
    // And back, to the sender the datagram named.
    Future<Datagram> reply = b->receive();
    (void)a->send_to("re", first.result().from);
    BOOST_REQUIRE(futures::run_until(sched, reply, 10s));
    BOOST_TEST(reply.result().data == "re");
    a.reset();
    b.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_DATA_TEST_CASE(a_cancelled_or_dropped_receive_takes_no_datagram, kFamilies, family) {
    if (!runs_here(family)) return;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto a = DatagramSocket::bind(sched, loopback(family));
    auto b = DatagramSocket::bind(sched, loopback(family));
    Future<Datagram> cancelled = a->receive();
    (void)a->receive();  // dropped
    Future<Datagram> kept = a->receive();
    BOOST_TEST(cancelled.cancel());
    BOOST_TEST(a->waiting_receives() == 1u);
    (void)b->send_to("only", a->local_address());
    BOOST_REQUIRE(futures::run_until(sched, kept, 10s));
    BOOST_TEST(kept.result().data == "only");
    BOOST_TEST(cancelled.cancelled());
    a.reset();
    b.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(datagrams_nobody_asked_for_are_kept_up_to_the_limit) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    DatagramSocket::Options options;
    options.max_buffered = 2;
    auto a = DatagramSocket::bind(sched, Address::loopback_v4(0), options);
    auto b = DatagramSocket::bind(sched, Address::loopback_v4(0));
    for (const char* d : {"1", "2", "3"}) BOOST_TEST(b->send_to(d, a->local_address()).done());
    // Loopback delivers within the send; the loop reads all three, keeps two.
    auto counted = [&] { return a->buffered() + a->dropped() == 3; };
    for (int i = 0; i < 1000 && !counted(); ++i) sched.run_once();
    BOOST_REQUIRE(counted());
    BOOST_TEST(a->dropped() == 1u);
    BOOST_TEST(a->receive().result().data == "1");  // done at once, in arrival order
    BOOST_TEST(a->receive().result().data == "2");
    a.reset();
    b.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_DATA_TEST_CASE(a_refused_datagram_fails_the_next_receive_naming_its_destination, kFamilies, family) {
    if (!runs_here(family)) return;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    Address nobody = dead_port(family);
    auto c = DatagramSocket::connect(sched, nobody);
    Future<Datagram> r = c->receive();
    BOOST_TEST(c->send("anyone?").done());
    BOOST_REQUIRE(futures::run_until(sched, r, 10s));
    BOOST_REQUIRE(r.failed());
    BOOST_TEST(code_of(r.exception()) == std::error_code(ECONNREFUSED, std::generic_category()));
    BOOST_TEST(what(r.exception()).find(nobody.to_string()) != std::string::npos);
    c.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_DATA_TEST_CASE(a_datagram_the_kernel_refuses_fails_its_own_send, kFamilies, family) {
    if (!runs_here(family)) return;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto a = DatagramSocket::bind(sched, loopback(family));
    auto b = DatagramSocket::bind(sched, loopback(family));
    Future<void> huge = b->send_to(std::string(70'000, 'x'), a->local_address());  // beyond any UDP payload
    BOOST_REQUIRE(huge.failed());
    BOOST_TEST(code_of(huge.exception()) == std::error_code(EMSGSIZE, std::generic_category()));
    BOOST_TEST(what(huge.exception()).find("send to " + a->local_address().to_string()) != std::string::npos);
    Future<Datagram> r = a->receive();
    BOOST_TEST(b->send_to("small", a->local_address()).done());  // the refusal cost nothing else
    BOOST_REQUIRE(futures::run_until(sched, r, 10s));
    BOOST_TEST(r.result().data == "small");
    a.reset();
    b.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_DATA_TEST_CASE(awaited_sends_pace_the_sender_and_every_datagram_completes, kFamilies, family) {
    if (!runs_here(family)) return;
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto a = DatagramSocket::bind(sched, loopback(family));
    auto b = DatagramSocket::bind(sched, loopback(family));
    Future<int> pacer = futures::spawn(sched, Pacer(*b, a->local_address(), 2000, 1024));
    BOOST_REQUIRE(futures::run_until(sched, pacer, 20s));
    BOOST_TEST(pacer.result() == 2000);
    BOOST_TEST(b->pending_sends() == 0u);
    // The receiver may lose datagrams (UDP); it never gets more than were sent.
    BOOST_TEST(a->buffered() + a->dropped() <= 2000u);
    a.reset();
    b.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_burst_of_sends_completes_in_order) {
    // Not awaited: what the kernel does not take at once waits in order for
    // writability; every future completes, in the order of the sends.
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    DatagramSocket::Options options;
    options.max_pending_sends = 5000;
    auto a = DatagramSocket::bind(sched, Address::loopback_v4(0));
    auto b = DatagramSocket::bind(sched, Address::loopback_v4(0), options);
    std::vector<int> order;
    std::vector<Future<void>> sends;
    for (int i = 0; i < 4000; ++i) {
        sends.push_back(b->send_to(std::string(1024, 'd'), a->local_address()));
        sends.back().add_done_callback([&order, i] { order.push_back(i); });
    }
    BOOST_REQUIRE(futures::run_until(sched, futures::when_all(sends), 20s));
    BOOST_REQUIRE(order.size() == 4000u);
    bool in_order = true;
    for (int i = 0; i < 4000; ++i) in_order = in_order && order[static_cast<std::size_t>(i)] == i;
    BOOST_TEST(in_order);
    a.reset();
    b.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(misuse_is_refused_clearly) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto a = DatagramSocket::bind(sched, Address::loopback_v4(0));
    BOOST_CHECK_EXCEPTION((void)a->send("x"), std::logic_error, [](const std::logic_error& e) {
        return std::string(e.what()).find("not connected: use send_to()") != std::string::npos;
    });
    auto c = DatagramSocket::connect(sched, a->local_address());
    BOOST_CHECK_EXCEPTION((void)c->send_to("x", Address::loopback_v4(9)), std::invalid_argument,
                          [](const std::invalid_argument& e) {
                              return std::string(e.what()).find("is connected to") != std::string::npos;
                          });
    // Another address family: the kernel refuses it, and the send's future says so.
    Future<void> wrong_family = a->send_to("x", Address::loopback_v6(9));
    BOOST_REQUIRE(wrong_family.failed());
    BOOST_TEST(code_of(wrong_family.exception()) == std::error_code(EAFNOSUPPORT, std::generic_category()));
    const std::string message = what(wrong_family.exception());
    BOOST_TEST(message.find("send to [::1]:9") != std::string::npos, message);
    DatagramSocket::Options none;
    none.max_buffered = 0;
    BOOST_CHECK_THROW(DatagramSocket::bind(sched, Address::loopback_v4(0), none), std::invalid_argument);
    BOOST_CHECK_THROW(DatagramSocket::bind(sched, Address::unix_path("/tmp/not-ip")), std::invalid_argument);
    a.reset();
    c.reset();
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(close_fails_waiting_receives_and_later_calls) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto a = DatagramSocket::bind(sched, Address::loopback_v4(0));
    Future<Datagram> waiting = a->receive();
    a->close();
    a->close();  // idempotent
    BOOST_TEST(!a->is_open());
    BOOST_REQUIRE(waiting.failed());
    BOOST_TEST(code_of(waiting.exception()) == std::error_code(EBADF, std::generic_category()));
    BOOST_TEST(what(waiting.exception()).find("receive: the DatagramSocket on 127.0.0.1:") != std::string::npos);
    BOOST_TEST(code_of(error_of(a->receive())) == std::error_code(EBADF, std::generic_category()));
    Future<void> late = a->send_to("x", Address::loopback_v4(9));
    BOOST_TEST(code_of(error_of(late)) == std::error_code(EBADF, std::generic_category()));
    a.reset();
    sched.run();
    CHECK_EMPTY(sched);
}
