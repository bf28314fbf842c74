// SPDX-License-Identifier: MIT
// GroupServerLifetime: the graceful end of a server spread over a LoopGroup.
// Connections open on every loop; a stop (SIGINT, raised on the control
// loop's own thread, or shut_down) closes the listeners and drains; the
// connections that finish by themselves are not aborted; a second stop, the
// drain time or the run time aborts the rest, each loop its own; one `ended`
// report comes with each loop's counts, then on_ended stops the group (no
// deadlock: stop() returns). Nothing depends on timing: connections that
// must be aborted never end by themselves, those that must finish are
// closed by the test before the abort is asked for, and every wait is
// bounded.
//
// CTest runs the suite once per selector backend (REACTOR_TEST_BACKEND), and
// under ThreadSanitizer in .ci/run.
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/promise.hpp>
#include <futures/server_scope.hpp>
#include <futures/stream.hpp>
#include <reactor/loop_group.hpp>
#include <reactor/net/address.hpp>
#include <reactor/net/group_listener.hpp>
#include <reactor/net/group_server_lifetime.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"

namespace {

using reactor::Address;
using reactor::ConnectionPtr;
using reactor::GroupListener;
using reactor::GroupServerLifetime;
using reactor::LoopGroup;
using reactor::LoopGroupOptions;
using reactor::Spreading;
using reactor_test::backend_under_test;
using reactor_test::on;
using Kind = GroupServerLifetime::Report::Kind;
using Cause = GroupServerLifetime::Report::Cause;

LoopGroupOptions loops(std::size_t n) {
    LoopGroupOptions o;
    o.loops = n;
    o.loop_options = [](std::size_t) { return on(backend_under_test()); };
    return o;
}

// What the report callback saw (on the control loop's thread), for the
// test's thread to wait on.
struct Reports {
    struct Seen {
        Kind kind;
        Cause cause;
        std::string why;
        std::vector<GroupServerLifetime::LoopCounts> loops;
        std::thread::id thread;
    };
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<Seen> seen;

    GroupServerLifetime::ReportCallback callback() {
        return [this](const GroupServerLifetime::Report& r) {
            std::lock_guard lock(mutex);
            seen.push_back({r.kind, r.cause, std::string(r.why), r.loops, std::this_thread::get_id()});
            changed.notify_all();
        };
    }
    // Waits (at most 20 s) for a report of this kind; returns it.
    Seen wait_for(Kind kind) {
        std::unique_lock lock(mutex);
        Seen found{};
        const bool ok = changed.wait_for(lock, std::chrono::seconds(20), [&] {
            for (const Seen& s : seen)
                if (s.kind == kind) return found = s, true;
            return false;
        });
        BOOST_REQUIRE_MESSAGE(ok, "no report of kind " << static_cast<int>(kind));
        return found;
    }
    std::vector<Kind> kinds() {
        std::lock_guard lock(mutex);
        std::vector<Kind> out;
        for (const Seen& s : seen) out.push_back(s.kind);
        return out;
    }
};

// Every connection echoes what it gets, on its own loop.
GroupListener::AcceptCallback echoing() {
    return [](const ConnectionPtr& conn, std::size_t) {
        conn->set_data_callback([](reactor::Connection& c, std::string_view data) { c.write(data); });
    };
}

// A client whose connection the server has made (it echoed a byte).
int connect_served(std::uint16_t port) {
    const int fd = reactor_test::connect_blocking(port);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(reactor_test::send_all(fd, "x"));
    BOOST_REQUIRE_EQUAL(reactor_test::recv_exactly(fd, 1), "x");
    return fd;
}

// The server ended this client's connection: EOF or a reset, not the receive
// timeout (10 s, connect_blocking's).
bool ended_by_server(int fd) {
    char c;
    for (;;) {
        const ssize_t n = ::recv(fd, &c, 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) return true;
        return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
    }
}

template <class Pred>
bool wait_until(Pred done) {
    for (int i = 0; i < 20'000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return done();
}

std::size_t total(const std::vector<std::size_t>& v) {
    std::size_t n = 0;
    for (std::size_t x : v) n += x;
    return n;
}

// A stop signal, raised on the control loop's own thread: delivered there
// at once (and so also under ThreadSanitizer, which defers a signal sent to
// a thread blocked in its selector).
void raise_on(LoopGroup& group, int signo) {
    group.loop(0).call_soon_threadsafe([signo] { ::raise(signo); });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(group_server_lifetime)

BOOST_AUTO_TEST_CASE(sigint_drains_every_loop_and_a_second_sigint_aborts_the_rest) {
    LoopGroup group(loops(2));
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"), echoing());
    Reports reports;
    GroupServerLifetime::Options options;
    options.drain_time = std::chrono::hours(1);  // never reached: the second SIGINT aborts
    GroupServerLifetime lifetime(group, *listener, options, reports.callback());
    lifetime.on_ended([&group] { group.request_stop(); });
    group.start();

    std::vector<int> clients;
    for (int i = 0; i < 4; ++i) clients.push_back(connect_served(listener->address().port()));
    BOOST_TEST(listener->live_connections() == (std::vector<std::size_t>{2, 2}));

    raise_on(group, SIGINT);
    const Reports::Seen draining = reports.wait_for(Kind::draining);
    BOOST_TEST(draining.why == "SIGINT");
    BOOST_REQUIRE_EQUAL(draining.loops.size(), 2u);
    BOOST_TEST(draining.loops[0].open == 2u);
    BOOST_TEST(draining.loops[1].open == 2u);
    BOOST_TEST(lifetime.draining());
    // Connections go on while draining: an echo still comes back.
    BOOST_REQUIRE(reactor_test::send_all(clients[1], "y"));
    BOOST_TEST(reactor_test::recv_exactly(clients[1], 1) == "y");
    // One finishes by itself: it is not aborted.
    ::close(clients[0]);
    BOOST_REQUIRE(wait_until([&] { return total(listener->live_connections()) == 3; }));
    BOOST_TEST(!lifetime.ended());

    raise_on(group, SIGINT);
    const Reports::Seen ended = reports.wait_for(Kind::ended);
    for (std::size_t i = 1; i < clients.size(); ++i) BOOST_TEST(ended_by_server(clients[i]));
    group.stop();  // on_ended asked for it: returns

    BOOST_TEST((reports.kinds() == std::vector<Kind>{Kind::draining, Kind::aborting, Kind::ended}));
    const Reports::Seen aborting = reports.wait_for(Kind::aborting);
    BOOST_TEST((aborting.cause == Cause::stopped_again));
    BOOST_TEST(aborting.why == "SIGINT");
    BOOST_REQUIRE_EQUAL(ended.loops.size(), 2u);
    BOOST_TEST(ended.loops[0].accepted == 2u);
    BOOST_TEST(ended.loops[1].accepted == 2u);
    BOOST_TEST(ended.loops[0].aborted + ended.loops[1].aborted == 3u);
    BOOST_TEST(ended.loops[0].open + ended.loops[1].open == 0u);
    BOOST_TEST(lifetime.aborted() == 3u);
    BOOST_TEST(lifetime.ended());
    BOOST_TEST((ended.thread == aborting.thread));  // every report on the control loop's thread
    BOOST_TEST((ended.thread == draining.thread));
    // Nothing listens any more.
    BOOST_TEST(reactor_test::connect_blocking(listener->address().port()) == -1);
    for (std::size_t i = 1; i < clients.size(); ++i) ::close(clients[i]);
}

BOOST_AUTO_TEST_CASE(the_drain_time_over_aborts_what_is_open_on_each_loop) {
    LoopGroup group(loops(2));
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"), echoing());
    Reports reports;
    GroupServerLifetime::Options options;
    options.drain_time = std::chrono::milliseconds(20);  // the clients never end by themselves
    options.stop_signals = {};
    GroupServerLifetime lifetime(group, *listener, options, reports.callback());
    lifetime.on_ended([&group] { group.request_stop(); });
    group.start();
    std::vector<int> clients;
    for (int i = 0; i < 2; ++i) clients.push_back(connect_served(listener->address().port()));

    lifetime.shut_down("the test");  // from a thread that is no loop's
    const Reports::Seen ended = reports.wait_for(Kind::ended);
    group.stop();
    BOOST_TEST((reports.kinds() == std::vector<Kind>{Kind::draining, Kind::aborting, Kind::ended}));
    BOOST_TEST(reports.wait_for(Kind::draining).why == "the test");
    BOOST_TEST((reports.wait_for(Kind::aborting).cause == Cause::drain_time_over));
    BOOST_TEST(ended.loops[0].aborted == 1u);
    BOOST_TEST(ended.loops[1].aborted == 1u);
    for (int fd : clients) {
        BOOST_TEST(ended_by_server(fd));
        ::close(fd);
    }
}

BOOST_AUTO_TEST_CASE(connections_that_finish_while_draining_end_it_without_an_abort) {
    LoopGroup group(loops(3));
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"), echoing());
    Reports reports;
    GroupServerLifetime::Options options;
    options.drain_time = std::chrono::hours(1);
    options.stop_signals = {SIGTERM};
    GroupServerLifetime lifetime(group, *listener, options, reports.callback());
    lifetime.on_ended([&group] { group.request_stop(); });
    group.start();
    std::vector<int> clients;
    for (int i = 0; i < 3; ++i) clients.push_back(connect_served(listener->address().port()));

    raise_on(group, SIGTERM);
    BOOST_TEST(reports.wait_for(Kind::draining).why == "SIGTERM");
    for (int fd : clients) ::close(fd);
    const Reports::Seen ended = reports.wait_for(Kind::ended);
    group.stop();
    BOOST_TEST((reports.kinds() == std::vector<Kind>{Kind::draining, Kind::ended}));
    for (const auto& l : ended.loops) {
        BOOST_TEST(l.accepted == 1u);
        BOOST_TEST(l.aborted == 0u);
    }
    BOOST_TEST(lifetime.aborted() == 0u);
}

BOOST_AUTO_TEST_CASE(a_listener_that_closes_by_itself_ends_the_server_once_its_connections_are_gone) {
    LoopGroup group(loops(2));
    GroupListener::Options lo;
    lo.listener.max_accepts = 2;  // --exit-after 2
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"), echoing(), lo);
    Reports reports;
    GroupServerLifetime::Options options;
    options.stop_signals = {};
    GroupServerLifetime lifetime(group, *listener, options, reports.callback());
    lifetime.on_ended([&group] { group.request_stop(); });
    group.start();
    const int a = connect_served(listener->address().port());
    const int b = connect_served(listener->address().port());
    ::close(a);
    ::close(b);
    const Reports::Seen ended = reports.wait_for(Kind::ended);
    group.stop();
    BOOST_TEST((reports.kinds() == std::vector<Kind>{Kind::ended}));
    BOOST_TEST(ended.loops[0].accepted + ended.loops[1].accepted == 2u);
    BOOST_TEST(ended.loops[0].aborted + ended.loops[1].aborted == 0u);
}

BOOST_AUTO_TEST_CASE(reuse_port_listeners_drain_and_abort_each_on_its_loop) {
    LoopGroup group(loops(2));
    GroupListener::Options lo;
    lo.spreading = Spreading::reuse_port;
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"), echoing(), lo);
    Reports reports;
    GroupServerLifetime::Options options;
    options.drain_time = std::chrono::hours(1);
    options.stop_signals = {};
    GroupServerLifetime lifetime(group, *listener, options, reports.callback());
    lifetime.on_ended([&group] { group.request_stop(); });
    group.start();
    std::vector<int> clients;
    for (int i = 0; i < 4; ++i) clients.push_back(connect_served(listener->address().port()));

    lifetime.shut_down("first");
    reports.wait_for(Kind::draining);
    lifetime.shut_down("second");
    const Reports::Seen ended = reports.wait_for(Kind::ended);
    group.stop();
    BOOST_TEST((reports.kinds() == std::vector<Kind>{Kind::draining, Kind::aborting, Kind::ended}));
    BOOST_TEST(ended.loops[0].accepted + ended.loops[1].accepted == 4u);
    BOOST_TEST(ended.loops[0].aborted + ended.loops[1].aborted == 4u);
    for (int fd : clients) {
        BOOST_TEST(ended_by_server(fd));
        ::close(fd);
    }
}

BOOST_AUTO_TEST_CASE(max_run_time_aborts_everything) {
    LoopGroup group(loops(2));
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"), echoing());
    Reports reports;
    GroupServerLifetime::Options options;
    options.stop_signals = {};
    options.max_run_time = std::chrono::milliseconds(50);  // the connections never end by themselves
    GroupServerLifetime lifetime(group, *listener, options, reports.callback());
    lifetime.on_ended([&group] { group.request_stop(); });
    group.start();
    // A connection may come after the run time is over (a slow machine): the
    // listener is closed then, and the client sees it refused or ended.
    const int fd = reactor_test::connect_blocking(listener->address().port());
    const Reports::Seen ended = reports.wait_for(Kind::ended);
    group.stop();
    BOOST_TEST(ended.loops[0].aborted + ended.loops[1].aborted ==
               ended.loops[0].accepted + ended.loops[1].accepted);
    if (fd >= 0) {
        BOOST_TEST(ended_by_server(fd));
        ::close(fd);
    }
}

// Issue 47: a conversation's queued finally ran after the server's end, or
// never (the group stopped first): the end came once the connections were
// gone. Now each loop's conversations run in its futures::ServerScope, which
// holds the loop's gate until they and what they queued have settled. The
// conversations close their streams at once and then wait for the test: the
// end must not come meanwhile (a bounded wait that the old end passed).
BOOST_AUTO_TEST_CASE(a_conversations_queued_finally_runs_before_the_end_on_a_group_of_two) {
    LoopGroup group(loops(2));
    std::vector<futures::ServerScope> scopes;
    std::array<std::optional<futures::Promise<void>>, 2> release;  // each on its loop
    std::atomic<int> finallies{0};
    std::atomic<int> finallies_at_end{-1};
    std::atomic<int> failures_reported{0};
    GroupListener::Options lo;
    lo.spreading = Spreading::round_robin;  // one conversation on each loop
    auto listener = GroupListener::listen(
        group, Address::parse("127.0.0.1:0"),
        [&](const ConnectionPtr& c, std::size_t loop) {
            futures::Stream stream = futures::Stream::from(c);
            release[loop].emplace(group.loop(loop));
            futures::Future<void> conversation = release[loop]->get_future().finally([&] { ++finallies; });
            if (loop == 1)  // and one that fails: reported once, as it ends
                conversation = conversation.then([] { throw std::runtime_error("conversation 1 failed"); });
            stream.close();  // the connection goes now; the conversation goes on
            scopes[loop].follow(stream, conversation);
        },
        lo);
    for (std::size_t i = 0; i < group.size(); ++i) {
        scopes.emplace_back(listener->connections_on(i).gate());
        group.loop(i).set_exception_handler([&](const reactor::ErrorContext& ctx) {
            if (ctx.message.find("a conversation failed") != std::string::npos) ++failures_reported;
        });
    }
    Reports reports;
    GroupServerLifetime::Options options;
    options.drain_time = std::chrono::hours(1);
    options.stop_signals = {};
    GroupServerLifetime lifetime(group, *listener, options, reports.callback());
    lifetime.on_ended([&] {
        finallies_at_end = finallies.load();
        group.request_stop();
    });
    group.start();
    std::vector<int> clients;
    for (int i = 0; i < 2; ++i) {
        clients.push_back(reactor_test::connect_blocking(listener->address().port()));
        BOOST_REQUIRE(clients.back() >= 0);
        BOOST_TEST(ended_by_server(clients.back()));  // the stream closed at once
    }
    BOOST_REQUIRE(wait_until([&] { return total(listener->live_connections()) == 0; }));
    BOOST_TEST(listener->handed() == (std::vector<std::uint64_t>{1, 1}));

    lifetime.shut_down("the test");
    reports.wait_for(Kind::draining);
    // Listeners closed, connections gone: the old end came here.
    for (int i = 0; i < 300 && !lifetime.ended(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    BOOST_TEST(!lifetime.ended());
    BOOST_TEST(finallies.load() == 0);
    for (std::size_t i = 0; i < group.size(); ++i)
        group.loop(i).call_soon_threadsafe([&release, i] { release[i]->set_value(); });
    reports.wait_for(Kind::ended);
    group.stop();
    BOOST_TEST(finallies_at_end.load() == 2);
    BOOST_TEST(failures_reported.load() == 1);
    BOOST_TEST((reports.kinds() == std::vector<Kind>{Kind::draining, Kind::ended}));
    for (int fd : clients) ::close(fd);
}

BOOST_AUTO_TEST_CASE(made_after_start_or_with_a_control_loop_out_of_the_group_is_refused) {
    LoopGroup group(loops(2));
    auto listener = GroupListener::listen(group, Address::parse("127.0.0.1:0"), echoing());
    GroupServerLifetime::Options options;
    options.stop_signals = {};
    options.control_loop = 2;
    BOOST_CHECK_THROW(GroupServerLifetime(group, *listener, options), std::out_of_range);
    group.start();
    options.control_loop = 0;
    BOOST_CHECK_THROW(GroupServerLifetime(group, *listener, options), std::logic_error);
    listener->close();
    group.stop();
}

BOOST_AUTO_TEST_SUITE_END()
