// SPDX-License-Identifier: MIT
// reactor::ServerLifetime on every backend, on a virtual clock (the drain and
// max-run timers are checked to the nanosecond without real waiting), with
// real clients on 127.0.0.1 and real signals: the drain, the abort after the
// drain time, a second stop, max_run_time, the listener's max_accepts, what
// the destructor leaves, and the bad inputs.
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/net/listener.hpp>
#include <reactor/net/server_lifetime.hpp>

#include "support/fds.hpp"
#include "support/net_util.hpp"
#include "support/virtual_time.hpp"

using namespace std::chrono_literals;
using reactor::ServerLifetime;
using Kind = reactor::ServerLifetime::Report::Kind;
using Cause = reactor::ServerLifetime::Report::Cause;
using reactor_test::backend_under_test;
using reactor_test::Fd;

namespace {

struct Seen {
    Kind kind;
    Cause cause;
    std::string why;
    std::size_t connections;
    reactor::Duration at;
};

// A server on a virtual-time loop whose connections end when their client
// does (EOF closes them), and a record of every report and when it came.
struct Server {
    reactor::testing::VirtualLoop loop{backend_under_test()};
    reactor::TimePoint start = loop.clock.now();
    std::vector<Seen> reports;
    bool ended = false;
    reactor::ListenerPtr listener;

    // Run on each accepted connection, after the EOF callback is set.
    std::function<void(const reactor::ConnectionPtr&)> also;

    explicit Server(reactor::Listener::Options options = {}) {
        listener = reactor::Listener::listen(
            loop.sched, reactor::Address::parse("127.0.0.1", 0),
            [this](const reactor::ConnectionPtr& c) {
                c->set_eof_callback([](reactor::Connection& conn) { conn.close(); });
                if (also) also(c);
            },
            options);
    }
    ServerLifetime::ReportCallback recorder() {
        return [this](const ServerLifetime::Report& r) {
            reports.push_back({r.kind, r.cause, std::string(r.why), r.connections, loop.clock.now() - start});
        };
    }
    std::uint16_t port() const { return listener->address().port(); }
    Fd connect() {
        Fd fd(reactor_test::connect_blocking(port()));
        BOOST_REQUIRE(fd.get() >= 0);
        return fd;
    }
    template <class Pred>
    void run_until(Pred done) {
        for (int i = 0; i < 100000 && !done(); ++i) loop.sched.run_once();
        BOOST_REQUIRE(done());
    }
    void accept(std::size_t n) {
        run_until([&] { return listener->accepted() >= n; });
    }
    reactor::Duration now() const { return loop.clock.now() - start; }
};

ServerLifetime::Options with_drain(reactor::Duration drain) {
    ServerLifetime::Options o;
    o.drain_time = drain;
    o.stop_signals = {};
    return o;
}

// The client's end sees the server's abort (a reset) or close (EOF).
bool reset_by_peer(int fd) {
    char byte;
    ssize_t n = ::recv(fd, &byte, 1, 0);
    return n < 0 && errno == ECONNRESET;
}

}  // namespace

BOOST_AUTO_TEST_CASE(drain_waits_for_connections_then_aborts_the_rest_at_the_drain_time) {
    Server s;
    ServerLifetime lifetime(s.loop.sched, s.listener, with_drain(5s), s.recorder());
    lifetime.on_ended([&] { s.ended = true; });
    Fd polite = s.connect(), stubborn = s.connect();
    s.accept(2);

    s.loop.sched.call_later(1s, [&] { lifetime.shut_down("test stop"); });
    s.run_until([&] { return lifetime.draining(); });
    BOOST_TEST(!s.listener->is_listening());
    BOOST_TEST(reactor_test::connect_blocking(s.port()) == -1);  // refused: nothing listens any more
    polite = Fd();  // this one finishes within the drain
    s.run_until([&] { return s.ended; });

    BOOST_REQUIRE_EQUAL(s.reports.size(), 3u);
    BOOST_TEST((s.reports[0].kind == Kind::draining));
    BOOST_TEST(s.reports[0].why == "test stop");
    BOOST_TEST(s.reports[0].connections == 2u);
    BOOST_TEST((s.reports[1].kind == Kind::aborting));
    BOOST_TEST((s.reports[1].cause == Cause::drain_time_over));
    BOOST_TEST(s.reports[1].connections == 1u);
    BOOST_TEST((s.reports[1].at == 6s));  // stopped at 1 s, drained for 5 s
    BOOST_TEST((s.reports[2].kind == Kind::ended));
    BOOST_TEST(lifetime.aborted() == 1u);
    BOOST_TEST(lifetime.ended());
    BOOST_TEST(reset_by_peer(stubborn.get()));
    // Nothing the lifetime armed keeps the loop going.
    s.loop.sched.run();
    BOOST_TEST((s.now() == 6s));
}

BOOST_AUTO_TEST_CASE(a_drain_that_finishes_early_ends_without_waiting_or_aborting) {
    Server s;
    ServerLifetime lifetime(s.loop.sched, s.listener, with_drain(30s), s.recorder());
    Fd client = s.connect();
    s.accept(1);
    lifetime.shut_down("stop");
    client = Fd();
    s.loop.sched.run();  // returns once the last connection is gone
    BOOST_TEST(lifetime.ended());
    BOOST_TEST(lifetime.aborted() == 0u);
    BOOST_TEST((s.now() < 30s));
    BOOST_REQUIRE_EQUAL(s.reports.size(), 2u);
    BOOST_TEST((s.reports[1].kind == Kind::ended));
}

BOOST_AUTO_TEST_CASE(a_server_without_connections_ends_at_once) {
    Server s;
    ServerLifetime lifetime(s.loop.sched, s.listener, with_drain(30s), s.recorder());
    lifetime.shut_down("stop");
    s.loop.sched.run();
    BOOST_TEST(lifetime.ended());
    BOOST_TEST((s.now() == 0s));
    BOOST_REQUIRE_EQUAL(s.reports.size(), 2u);
    BOOST_TEST(s.reports[0].connections == 0u);
}

BOOST_AUTO_TEST_CASE(a_second_stop_while_draining_aborts_at_once) {
    Server s;
    ServerLifetime lifetime(s.loop.sched, s.listener, with_drain(30s), s.recorder());
    Fd a = s.connect(), b = s.connect();
    s.accept(2);
    lifetime.shut_down("first");
    s.loop.sched.call_later(2s, [&] { lifetime.shut_down("second"); });
    s.loop.sched.run();
    BOOST_REQUIRE_EQUAL(s.reports.size(), 3u);
    BOOST_TEST((s.reports[1].kind == Kind::aborting));
    BOOST_TEST((s.reports[1].cause == Cause::stopped_again));
    BOOST_TEST(s.reports[1].why == "second");
    BOOST_TEST(s.reports[1].connections == 2u);
    BOOST_TEST((s.reports[1].at == 2s));
    BOOST_TEST(lifetime.aborted() == 2u);
    BOOST_TEST((s.now() == 2s));
    BOOST_TEST(reset_by_peer(a.get()));
    BOOST_TEST(reset_by_peer(b.get()));
}

BOOST_AUTO_TEST_CASE(sigterm_starts_the_drain_and_a_second_one_aborts) {
    Server s;
    ServerLifetime::Options o;
    o.drain_time = 30s;  // the default signals
    ServerLifetime lifetime(s.loop.sched, s.listener, o, s.recorder());
    BOOST_TEST(s.loop.sched.signal_handler_count() == 2u);
    Fd client = s.connect();
    s.accept(1);
    ::kill(::getpid(), SIGTERM);
    s.run_until([&] { return lifetime.draining(); });
    BOOST_TEST(s.reports[0].why == "SIGTERM");
    ::kill(::getpid(), SIGINT);
    s.loop.sched.run();
    BOOST_REQUIRE_EQUAL(s.reports.size(), 3u);
    BOOST_TEST((s.reports[1].cause == Cause::stopped_again));
    BOOST_TEST(s.reports[1].why == "SIGINT");
    BOOST_TEST(lifetime.aborted() == 1u);
    BOOST_TEST((s.now() < 30s));
}

BOOST_AUTO_TEST_CASE(max_run_time_aborts_everything) {
    Server s;
    ServerLifetime::Options o = with_drain(5s);
    o.max_run_time = 60s;
    ServerLifetime lifetime(s.loop.sched, s.listener, o, s.recorder());
    Fd client = s.connect();
    s.accept(1);
    s.loop.sched.run();
    BOOST_TEST((s.now() == 60s));
    BOOST_REQUIRE_EQUAL(s.reports.size(), 2u);
    BOOST_TEST((s.reports[0].kind == Kind::aborting));
    BOOST_TEST((s.reports[0].cause == Cause::max_run_time));
    BOOST_TEST(lifetime.aborted() == 1u);
    BOOST_TEST(!s.listener->is_listening());
}

BOOST_AUTO_TEST_CASE(listener_max_accepts_closes_it_after_that_many) {
    reactor::Listener::Options options;
    options.max_accepts = 2;
    Server s(options);
    Fd a = s.connect(), b = s.connect();
    s.accept(2);
    BOOST_TEST(!s.listener->is_listening());
    BOOST_TEST(s.listener->connections().size() == 2u);  // they go on
    BOOST_TEST(reactor_test::connect_blocking(s.port()) == -1);
}

// Issue 47: work a callback handler starts (here: in its close callback,
// for 3 s) holds the server open through its gate; the end, and on_ended,
// come when it is done, not when the last connection is gone.
BOOST_AUTO_TEST_CASE(work_held_at_the_gate_delays_the_end_past_the_last_close) {
    Server s;
    ServerLifetime lifetime(s.loop.sched, s.listener, with_drain(30s), s.recorder());
    reactor::Duration closed_at{}, work_done_at{}, ended_at{};
    bool closed = false;
    s.also = [&](const reactor::ConnectionPtr& c) {
        c->set_close_callback([&](reactor::Connection&, const reactor::CloseReason&) {
            closed = true;
            closed_at = s.now();
            auto hold = std::make_shared<reactor::ServerGate::Hold>(lifetime.gate().hold());
            s.loop.sched.call_later(3s, [&, hold] {
                work_done_at = s.now();
                hold->release();
            });
        });
    };
    lifetime.on_ended([&] { ended_at = s.now(); });
    Fd client = s.connect();
    s.accept(1);
    s.loop.sched.call_later(1s, [&] { lifetime.shut_down("stop"); });
    s.run_until([&] { return lifetime.draining(); });
    client = Fd();
    s.run_until([&] { return closed; });
    BOOST_TEST(s.listener->connections().size() == 0u);
    BOOST_TEST(lifetime.gate().held() == 1u);
    BOOST_TEST(!lifetime.ended());
    s.loop.sched.run();  // returns once the held work is done and the end has come
    BOOST_TEST(lifetime.ended());
    BOOST_TEST((work_done_at == closed_at + 3s));
    BOOST_TEST((ended_at == work_done_at));  // the same instant, after it
    BOOST_TEST(lifetime.aborted() == 0u);
    BOOST_REQUIRE_EQUAL(s.reports.size(), 2u);
    BOOST_TEST((s.reports[0].kind == Kind::draining));
    BOOST_TEST((s.reports[1].kind == Kind::ended));
    BOOST_TEST(lifetime.gate().ended());
    BOOST_CHECK_THROW(static_cast<void>(lifetime.gate().hold()), std::logic_error);
}

// The drain time still aborts what is open when it runs out, at the same
// instant and with the same report as before; held work is not aborted: the
// end waits for it.
BOOST_AUTO_TEST_CASE(the_drain_time_aborts_connections_but_waits_for_held_work) {
    Server s;
    ServerLifetime lifetime(s.loop.sched, s.listener, with_drain(5s), s.recorder());
    reactor::Duration work_done_at{}, ended_at{};
    auto hold = std::make_shared<reactor::ServerGate::Hold>(lifetime.gate().hold());
    s.loop.sched.call_later(10s, [&, hold] {
        work_done_at = s.now();
        hold->release();
    });
    lifetime.on_ended([&] { ended_at = s.now(); });
    Fd stubborn = s.connect();
    s.accept(1);
    s.loop.sched.call_later(1s, [&] { lifetime.shut_down("stop"); });
    s.loop.sched.run();
    BOOST_REQUIRE_EQUAL(s.reports.size(), 3u);
    BOOST_TEST((s.reports[1].kind == Kind::aborting));
    BOOST_TEST((s.reports[1].cause == Cause::drain_time_over));
    BOOST_TEST((s.reports[1].at == 6s));  // stopped at 1 s, drained for 5 s: unchanged
    BOOST_TEST(s.reports[1].connections == 1u);
    BOOST_TEST(reset_by_peer(stubborn.get()));
    BOOST_TEST((s.reports[2].kind == Kind::ended));
    BOOST_TEST((s.reports[2].at == 10s));  // when the held work let go
    BOOST_TEST((ended_at == work_done_at));
    BOOST_TEST(lifetime.aborted() == 1u);
}

BOOST_AUTO_TEST_CASE(destroying_it_removes_its_handlers_and_timers_and_leaves_the_server_alone) {
    Server s;
    Fd client = s.connect();
    s.accept(1);
    {
        ServerLifetime::Options o;
        o.max_run_time = 10s;
        ServerLifetime lifetime(s.loop.sched, s.listener, o);
        BOOST_TEST(s.loop.sched.signal_handler_count() == 2u);
    }
    BOOST_TEST(s.loop.sched.signal_handler_count() == 0u);
    BOOST_TEST(s.listener->is_listening());
    BOOST_TEST(s.listener->connections().size() == 1u);
    client = Fd();
    s.run_until([&] { return s.listener->connections().size() == 0; });
    BOOST_TEST((s.now() < 10s));  // the max-run timer went with it
}

BOOST_AUTO_TEST_CASE(bad_inputs_throw_and_leave_nothing) {
    Server s;
    BOOST_CHECK_THROW(static_cast<void>(ServerLifetime(s.loop.sched, nullptr)), std::invalid_argument);
    ServerLifetime::Options bad_signal;
    bad_signal.stop_signals = {SIGTERM, SIGKILL};
    BOOST_CHECK_THROW(static_cast<void>(ServerLifetime(s.loop.sched, s.listener, bad_signal)), std::invalid_argument);
    BOOST_TEST(s.loop.sched.signal_handler_count() == 0u);
    ServerLifetime::Options negative;
    negative.drain_time = -1s;
    BOOST_CHECK_THROW(static_cast<void>(ServerLifetime(s.loop.sched, s.listener, negative)), std::invalid_argument);
    BOOST_TEST(s.loop.sched.signal_handler_count() == 0u);
    BOOST_TEST(s.listener->is_listening());
}
