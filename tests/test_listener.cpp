// SPDX-License-Identifier: MIT
// Listener on 127.0.0.1 and ::1, on every selector backend: accepting
// under EMFILE, a connection the backend cannot watch, IPv6 loopback.
// Ordering comes from callbacks, never from sleeps.
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <string>
#include <system_error>
#include <vector>
#include <reactor/net/connector.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/listener.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/tcp_echo.hpp"

using namespace std::chrono_literals;
using reactor::Connection;
using reactor::ConnectionPtr;
using reactor_test::any_loopback;
using reactor_test::on;

BOOST_AUTO_TEST_CASE(connection_whose_fd_the_backend_cannot_watch_is_refused_cleanly) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // select cannot watch fd >= FD_SETSIZE: such a connection is accepted,
    // closed, and reported. Other backends simply serve it.
    rlimit saved{};
    ::getrlimit(RLIMIT_NOFILE, &saved);
    if (saved.rlim_max < FD_SETSIZE + 64) {
        BOOST_TEST_MESSAGE("RLIMIT_NOFILE too low to reach FD_SETSIZE; skipped");
        return;
    }
    rlimit wide = saved;
    wide.rlim_cur = FD_SETSIZE + 64;
    BOOST_REQUIRE(::setrlimit(RLIMIT_NOFILE, &wide) == 0);

    reactor::Scheduler sched(on(backend));
    std::vector<std::string> reports;
    std::string served;
    auto listener = reactor::Listener::listen(sched, any_loopback(), [&](const ConnectionPtr& c) {
        c->set_data_callback([&](Connection& c, std::string_view d) {
            served += d;
            c.close();
        });
    });
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    int fd = reactor_test::connect_blocking(listener->address().port());
    reactor_test::send_all(fd, "ping");
    // Fill every fd below FD_SETSIZE, so the accepted socket lands above it.
    std::vector<int> fillers;
    for (;;) {
        int f = ::dup(0);
        if (f < 0) break;
        fillers.push_back(f);
        if (f >= FD_SETSIZE - 1) break;
    }
    bool done = reactor_test::run_until(sched, [&] { return !reports.empty() || !served.empty(); }, 5s);
    for (int f : fillers) ::close(f);
    BOOST_REQUIRE(done);
    if (backend == reactor::Backend::select) {
        BOOST_REQUIRE(reports.size() == 1u);
        BOOST_TEST(reports[0].find("FD_SETSIZE") != std::string::npos, reports[0]);
        BOOST_TEST(listener->refused() == 1u);
        BOOST_TEST(reactor_test::recv_all(fd) == "");  // closed on us
    } else {
        BOOST_TEST(served == "ping");
        BOOST_TEST(listener->accepted() == 1u);
    }
    ::close(fd);
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
    ::setrlimit(RLIMIT_NOFILE, &saved);
}

BOOST_AUTO_TEST_CASE(ipv6_loopback_round_trip) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    reactor::ListenerPtr listener;
    reactor::Address accepted_peer, client_local;
    try {
        listener = reactor::Listener::listen(sched, reactor::Address::loopback_v6(0), [&](const ConnectionPtr& c) {
            accepted_peer = c->peer_address();  // kept packed in the connection: port and address
            c->set_data_callback([](Connection& c, std::string_view d) { c.write(d); });
        });
    } catch (const std::system_error& e) {
        BOOST_TEST_MESSAGE("no IPv6 loopback here (" << e.what() << "); skipped");
        return;
    }
    BOOST_TEST(listener->address().to_string().starts_with("[::1]:"));
    std::string got;
    reactor::connect(sched, listener->address(), [&](ConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        BOOST_TEST(c->peer_address() == listener->address());
        client_local = c->local_address();
        c->set_data_callback([&](Connection& c, std::string_view d) {
            got += d;
            if (got.size() == 4) c.close();
        });
        c->write("six!");
    });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got == "six!"; }));
    BOOST_TEST(accepted_peer.family() == AF_INET6);
    BOOST_TEST(accepted_peer == client_local);
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

// Runs the accept loop of `sched` out of fds until `listener` has failed
// `failures` accepts, then gives the fds back. True if it got there in time.
bool fail_accepts(reactor::Scheduler& sched, const reactor::Listener& listener, std::uint64_t failures) {
    rlimit saved{};
    ::getrlimit(RLIMIT_NOFILE, &saved);
    int lowest_free = ::dup(0);
    ::close(lowest_free);
    rlimit tight = saved;
    tight.rlim_cur = static_cast<rlim_t>(lowest_free);
    if (::setrlimit(RLIMIT_NOFILE, &tight) != 0) return false;
    // The watchdog of run_until is a timer, not an fd, so this is safe.
    bool reached = reactor_test::run_until(sched, [&] { return listener.accept_failures() >= failures; }, 10s);
    ::setrlimit(RLIMIT_NOFILE, &saved);
    return reached;
}

// The last two cases in the suite on purpose: under the sanitizers (REACTOR_SANITIZE) the
// first member call through each polymorphic type checks its dynamic type,
// and UBSan's check needs free fds (it probes memory with a pipe), which
// this case takes away. The cases above warm those checks up; run alone
// under UBSan (--run_test) it reports a false "invalid vptr".
BOOST_AUTO_TEST_CASE(emfile_pauses_accepting_reports_and_recovers) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    reactor::Listener::Options lopt;
    lopt.accept_pause = 20ms;
    std::vector<std::error_code> errors;
    std::string got;
    auto listener = reactor::Listener::listen(sched, any_loopback(), [&](const ConnectionPtr& c) {
        c->set_data_callback([&](Connection& c, std::string_view d) {
            got += d;
            c.close();
        });
    }, lopt);
    listener->set_error_callback([&](reactor::Listener&, std::error_code ec, std::string_view) { errors.push_back(ec); });
    int fd = reactor_test::connect_blocking(listener->address().port());  // waits in the backlog
    BOOST_REQUIRE(fd >= 0);
    reactor_test::send_all(fd, "late");

    // No fd can be allocated any more: accept fails with EMFILE.
    BOOST_REQUIRE(fail_accepts(sched, *listener, 1));
    BOOST_TEST(errors.size() == 1u, "one report per pause, no busy loop");
    BOOST_TEST(errors[0].value() == EMFILE);
    BOOST_TEST(listener->accepted() == 0u);
    // After the pause the waiting client is accepted and served.
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got == "late"; }));
    BOOST_TEST(reactor_test::recv_all(fd) == "");  // closed by the server
    ::close(fd);
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(repeated_accept_failures_reach_the_exception_handler_rate_limited) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    std::vector<std::string> reports;
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    reactor::Listener::Options lopt;
    lopt.accept_pause = 1ms;
    lopt.report_interval = std::chrono::hours(1);
    std::string got;
    auto listener = reactor::Listener::listen(sched, any_loopback(), [&](const ConnectionPtr& c) {
        c->set_data_callback([&](Connection& c, std::string_view d) {
            got += d;
            c.close();
        });
    }, lopt);
    int fd = reactor_test::connect_blocking(listener->address().port());  // waits in the backlog
    BOOST_REQUIRE(fd >= 0);
    reactor_test::send_all(fd, "late");

    BOOST_REQUIRE(fail_accepts(sched, *listener, 6));
    BOOST_REQUIRE(reports.size() == 1u);  // the first failure only, not one per pause
    BOOST_TEST(reports[0].find("accept failed") != std::string::npos);
    BOOST_TEST(reports[0].find(std::strerror(EMFILE)) != std::string::npos);

    // Accepting works again: one more report counts the failures left out.
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got == "late"; }));
    BOOST_REQUIRE(reports.size() == 2u);
    const std::string left_out = std::to_string(listener->accept_failures() - 1) + " more times";
    BOOST_TEST(reports[1].find("accepting again") != std::string::npos, reports[1]);
    BOOST_TEST(reports[1].find(left_out) != std::string::npos, reports[1]);
    ::close(fd);
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}
