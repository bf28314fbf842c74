// SPDX-License-Identifier: MIT
// Name resolution off the loop thread: futures::resolve (getaddrinfo on a
// thread pool), the errors of the blocking Address::resolve (one
// std::system_error category naming the host), and open_connection by host
// name, trying each address in turn. Network rule: only "localhost" (from
// /etc/hosts; skipped where it does not resolve), numeric hosts, and failures
// that never reach a name server (a bad service, AI_NUMERICHOST, empty input).
// Ports are numeric, but in the one case about service names ("http", from
// /etc/services: skipped where netbase is not installed).
// CTest runs the suite once per selector backend.
#include <boost/test/unit_test.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <future>
#include <string>
#include <system_error>
#include <vector>

#include <futures/executor.hpp>
#include <futures/futures.hpp>
#include <futures/resolve.hpp>
#include <reactor/net/resolve_error.hpp>

#include "support/backends.hpp"
#include "support/name_resolution.hpp"

namespace {

using namespace std::chrono_literals;
using futures::Future;
using reactor::Address;
using reactor::resolve_errc;
using reactor::Scheduler;
using reactor_test::backend_under_test;
using reactor_test::on;
using Addresses = std::vector<Address>;

template <class T>
void run_until_done(Scheduler& s, const Future<T>& f) {
    BOOST_REQUIRE(futures::run_until(s, f, 60s));
}

// The system_error a failed future holds, checked for its code and for a
// message that names the host.
void check_fails_with(Scheduler& s, const Future<Addresses>& f, std::error_code code, const std::string& what) {
    run_until_done(s, f);
    BOOST_REQUIRE(f.failed());
    try {
        f.result();
    } catch (const std::system_error& e) {
        BOOST_TEST(e.code() == code);
        BOOST_TEST(std::string(e.what()).starts_with(what), e.what());
    }
}

std::vector<std::string> texts(const Addresses& addresses) {
    std::vector<std::string> out;
    for (const auto& a : addresses) out.push_back(a.to_string());
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(numeric_hosts_resolve_through_the_pool) {
    Scheduler s(on(backend_under_test()));
    auto v4 = futures::resolve(s, "127.0.0.1", "8080");
    auto v6 = futures::resolve(s, "::1", "80");  // a service, as a number
    BOOST_TEST(!v4.done());  // on the pool, never inline
    run_until_done(s, v4);
    run_until_done(s, v6);
    BOOST_TEST(texts(v4.result()) == std::vector<std::string>{"127.0.0.1:8080"}, boost::test_tools::per_element());
    BOOST_TEST(texts(v6.result()) == std::vector<std::string>{"[::1]:80"}, boost::test_tools::per_element());
    // With a port, a numeric host needs no pool: done at once.
    auto direct = futures::resolve(s, "::1", std::uint16_t(9));
    BOOST_TEST(direct.done());
    BOOST_TEST(texts(direct.result()) == std::vector<std::string>{"[::1]:9"}, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_service_name_gives_its_port, *reactor_test::needs_service_names()) {
    Scheduler s(on(backend_under_test()));
    auto f = futures::resolve(s, "::1", "http");  // from /etc/services
    run_until_done(s, f);
    BOOST_TEST(texts(f.result()) == std::vector<std::string>{"[::1]:80"}, boost::test_tools::per_element());
    BOOST_TEST(texts(Address::resolve("127.0.0.1", "http")) == std::vector<std::string>{"127.0.0.1:80"},
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(localhost_resolves_to_loopback_addresses, *reactor_test::needs_localhost()) {
    Scheduler s(on(backend_under_test()));
    auto f = futures::resolve(s, "localhost", std::uint16_t(7));
    run_until_done(s, f);
    const Addresses& found = f.result();
    BOOST_REQUIRE(!found.empty());
    for (const auto& a : found) {
        BOOST_TEST((a.host() == "127.0.0.1" || a.host() == "::1"), a.to_string());
        BOOST_TEST(a.port() == 7);
    }
    // Once each, and the same answer as the blocking call.
    BOOST_TEST(texts(found) == texts(Address::resolve("localhost", "7")), boost::test_tools::per_element());
    reactor::ResolveOptions v4_only;
    v4_only.family = AF_INET;
    auto v4 = futures::resolve(s, "localhost", "7", v4_only);
    run_until_done(s, v4);
    for (const auto& a : v4.result()) BOOST_TEST(a.family() == AF_INET);
}

BOOST_AUTO_TEST_CASE(an_unknown_service_fails_with_eai_service) {
    Scheduler s(on(backend_under_test()));
    auto f = futures::resolve(s, "127.0.0.1", "no-such-service");
    check_fails_with(s, f, resolve_errc::service, "resolve host '127.0.0.1' service 'no-such-service': ");
    // The blocking call throws the same error, and it is a std::runtime_error too.
    try {
        Address::resolve("127.0.0.1", "no-such-service");
        BOOST_FAIL("an unknown service resolved");
    } catch (const std::system_error& e) {
        BOOST_TEST((e.code() == resolve_errc::service));
        BOOST_TEST(std::string(e.code().category().name()) == "resolve");
        BOOST_TEST(e.code().message() == ::gai_strerror(EAI_SERVICE));
    }
}

BOOST_AUTO_TEST_CASE(numeric_host_only_refuses_a_name_without_a_lookup) {
    Scheduler s(on(backend_under_test()));
    reactor::ResolveOptions numeric;
    numeric.numeric_host = true;
    auto f = futures::resolve(s, "localhost", "80", numeric);
    check_fails_with(s, f, resolve_errc::no_name, "resolve host 'localhost' service '80': ");
    auto ok = futures::resolve(s, "127.0.0.2", "80", numeric);
    run_until_done(s, ok);
    BOOST_TEST(texts(ok.result()) == std::vector<std::string>{"127.0.0.2:80"}, boost::test_tools::per_element());
    // An address of the wrong family for the request.
    reactor::ResolveOptions v6_only = numeric;
    v6_only.family = AF_INET6;
    auto wrong = futures::resolve(s, "127.0.0.1", "80", v6_only);
    run_until_done(s, wrong);
    BOOST_TEST(wrong.failed());
    BOOST_CHECK_THROW(wrong.result(), std::system_error);
}

BOOST_AUTO_TEST_CASE(empty_host_or_service_fails_without_a_lookup) {
    Scheduler s(on(backend_under_test()));
    check_fails_with(s, futures::resolve(s, "", "80"), resolve_errc::no_name, "resolve host '': empty host name");
    check_fails_with(s, futures::resolve(s, "127.0.0.1", ""), resolve_errc::service,
                     "resolve host '127.0.0.1' service '': empty service");
    check_fails_with(s, futures::resolve(s, "", std::uint16_t(80)), resolve_errc::no_name,
                     "resolve host '': empty host name");
    BOOST_CHECK_THROW(Address::resolve("", 80), std::system_error);
}

// Cancelled while queued behind a busy worker: the lookup never runs.
BOOST_AUTO_TEST_CASE(a_cancelled_resolve_never_runs) {
    Scheduler s(on(backend_under_test()));
    reactor::ThreadPool pool(1);
    std::promise<void> gate, started;
    auto opened = gate.get_future().share();
    Future<void> blocker = futures::run_in_executor(s, pool, [&] {
        started.set_value();
        opened.wait();
    });
    started.get_future().wait();
    auto f = futures::resolve(s, pool, "127.0.0.1", "80");
    BOOST_TEST(pool.queued() == 1u);
    BOOST_TEST(f.cancel());
    BOOST_TEST(f.cancelled());
    BOOST_TEST(pool.queued() == 0u);
    gate.set_value();
    run_until_done(s, blocker);
    BOOST_TEST((s.run_for(60s) == reactor::RunStatus::idle));
    BOOST_CHECK_THROW(f.result(), futures::CancelledError);
}

// If localhost names ::1 first and the server listens on 127.0.0.1 only, the
// first attempt is refused and the next address connects.
BOOST_AUTO_TEST_CASE(open_connection_by_name_to_a_loopback_listener, *reactor_test::needs_localhost()) {
    Scheduler s(on(backend_under_test()));
    auto server = futures::start_server(s, Address::loopback_v4(0), [&s](futures::Stream st) {
        st.write("hello\n");
        st.close();
        return futures::make_ready_future(s);
    });
    auto conn = futures::open_connection(s, "localhost", server.address().port());
    BOOST_TEST(!conn.done());  // the name is looked up off the loop
    run_until_done(s, conn);
    futures::Stream stream = conn.result();
    BOOST_TEST((stream.peer_address() == server.address()));
    auto line = stream.read_until();
    run_until_done(s, line);
    BOOST_TEST(line.result() == "hello\n");
    stream.close();
    server.close();
    stream = {};
    conn = {};
    line = {};
    BOOST_TEST((s.run_for(60s) == reactor::RunStatus::idle));
}

// Bound but not listening: the kernel refuses connections to it, and nobody
// else can take the port meanwhile.
BOOST_AUTO_TEST_CASE(open_connection_to_a_port_where_nothing_listens_is_refused) {
    Scheduler s(on(backend_under_test()));
    const int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const Address any = Address::loopback_v4(0);
    BOOST_REQUIRE(::bind(holder, any.data(), any.size()) == 0);
    const std::uint16_t port = Address::local_of(holder).port();
    auto conn = futures::open_connection(s, "127.0.0.1", port);
    run_until_done(s, conn);
    try {
        conn.result();
        BOOST_FAIL("connected to a port where nothing listens");
    } catch (const std::system_error& e) {
        BOOST_TEST(e.code().value() == ECONNREFUSED);
        BOOST_TEST(std::string(e.what()).starts_with("connect to 127.0.0.1:" + std::to_string(port)), e.what());
    }
    ::close(holder);
}

// A lookup that fails fails open_connection with the resolver's error.
BOOST_AUTO_TEST_CASE(open_connection_to_an_empty_host_fails_with_the_resolve_error) {
    Scheduler s(on(backend_under_test()));
    auto conn = futures::open_connection(s, "", 80);
    run_until_done(s, conn);
    BOOST_REQUIRE(conn.failed());
    try {
        conn.result();
    } catch (const std::system_error& e) {
        BOOST_TEST((e.code() == resolve_errc::no_name));
    }
}

// Cancelling open_connection while the name is looked up cancels the lookup.
BOOST_AUTO_TEST_CASE(open_connection_cancelled_during_the_lookup, *reactor_test::needs_localhost()) {
    Scheduler s(on(backend_under_test()));
    auto conn = futures::open_connection(s, "localhost", 9);
    BOOST_TEST(conn.cancel());
    BOOST_TEST((s.run_for(60s) == reactor::RunStatus::idle));
    BOOST_TEST(conn.cancelled());
}
