// SPDX-License-Identifier: MIT
// ConnectionSet and the graceful shutdown of a Listener, on every backend,
// with real clients on 127.0.0.1: close the listener, close or abort what it
// accepted, and learn when the last connection has closed. Ordering comes
// from callbacks, never from sleeps.
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/net/connection_set.hpp>
#include <reactor/net/listener.hpp>

#include "support/backends.hpp"
#include "support/fds.hpp"
#include "support/net_util.hpp"
#include "support/tcp_echo.hpp"

using reactor::Connection;
using reactor::ConnectionPtr;
using reactor_test::any_loopback;
using reactor_test::on;

namespace {

// A listener whose accepted connections log their close and keep no other
// callback: a client's EOF closes its connection.
struct LoggingServer {
    reactor::Scheduler sched{on(reactor_test::backend_under_test())};
    std::vector<std::string> events;
    reactor::ListenerPtr listener;

    LoggingServer() {
        listener = reactor::Listener::listen(sched, any_loopback(), [this](const ConnectionPtr& c) {
            c->set_close_callback([this](Connection&, const reactor::CloseReason& why) {
                events.push_back("closed " + why.to_string());
            });
        });
    }
    std::uint16_t port() const { return listener->address().port(); }
    // Connects `n` blocking clients and runs the loop until all are accepted.
    std::vector<int> connect_clients(int n) {
        std::vector<int> fds;
        for (int i = 0; i < n; ++i) fds.push_back(reactor_test::connect_blocking(port()));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return listener->connections().size() == fds.size(); }));
        return fds;
    }
};

// One loop iteration that does not block (something is ready).
void spin_once(reactor::Scheduler& sched) {
    sched.call_soon([] {});
    sched.run_once();
}

}  // namespace

BOOST_AUTO_TEST_CASE(wait_closed_runs_after_the_listener_and_the_last_connection_closed) {
    LoggingServer s;
    std::vector<int> clients = s.connect_clients(2);
    bool all_closed = false;
    s.listener->wait_closed([&] {
        all_closed = true;
        s.events.push_back("all closed");
    });
    s.listener->close();
    BOOST_TEST(s.listener->connections().size() == 2u);  // closing the listener leaves them open

    ::close(clients[0]);
    BOOST_REQUIRE(reactor_test::run_until(s.sched, [&] { return s.events.size() == 1u; }));
    spin_once(s.sched);
    BOOST_TEST(!all_closed);  // one connection is still open
    BOOST_TEST(s.listener->connections().size() == 1u);

    ::close(clients[1]);
    BOOST_REQUIRE(reactor_test::run_until(s.sched, [&] { return all_closed; }));
    BOOST_TEST(s.events == (std::vector<std::string>{"closed eof", "closed eof", "all closed"}));
    s.listener.reset();
    s.sched.run();
    BOOST_TEST(s.sched.empty());
}

BOOST_AUTO_TEST_CASE(wait_closed_waits_for_the_listener_itself_to_close) {
    LoggingServer s;
    bool all_closed = false;
    s.listener->wait_closed([&] { all_closed = true; });
    spin_once(s.sched);
    BOOST_TEST(!all_closed);  // no connection, but still listening
    s.listener->close();
    BOOST_TEST(!all_closed);  // never synchronously
    BOOST_REQUIRE(reactor_test::run_until(s.sched, [&] { return all_closed; }));

    bool again = false;  // closed and empty already: runs on the next iteration
    s.listener->wait_closed([&] { again = true; });
    BOOST_TEST(!again);
    spin_once(s.sched);
    BOOST_TEST(again);
}

BOOST_AUTO_TEST_CASE(close_all_flushes_output_then_closes_every_connection) {
    LoggingServer s;
    std::vector<int> clients = s.connect_clients(3);
    auto members = s.listener->connections().size();
    BOOST_REQUIRE(members == 3u);
    // Every open connection gets a farewell, then a graceful close.
    bool all_closed = false;
    s.listener->wait_closed([&] { all_closed = true; });
    s.listener->close();
    s.listener->connections().close_all();
    BOOST_REQUIRE(reactor_test::run_until(s.sched, [&] { return all_closed; }));
    for (int fd : clients) {
        BOOST_TEST(reactor_test::recv_all(fd) == "");  // EOF, not a reset
        ::close(fd);
    }
    BOOST_TEST(s.events == (std::vector<std::string>(3, "closed local")));
    BOOST_TEST(s.listener->connections().empty());
}

BOOST_AUTO_TEST_CASE(abort_all_resets_every_connection_and_discards_its_output) {
    LoggingServer s;
    std::vector<int> clients = s.connect_clients(2);
    bool all_closed = false;
    s.listener->wait_closed([&] { all_closed = true; });
    s.listener->close();
    s.listener->connections().abort_all();
    BOOST_TEST(s.listener->connections().empty());  // aborting closes now
    BOOST_REQUIRE(reactor_test::run_until(s.sched, [&] { return all_closed; }));
    for (int fd : clients) {
        char c;
        errno = 0;
        BOOST_TEST(::recv(fd, &c, 1, 0) == -1);
        BOOST_TEST(errno == ECONNRESET);
        ::close(fd);
    }
    BOOST_TEST(s.events == (std::vector<std::string>(2, "closed local")));
}

BOOST_AUTO_TEST_CASE(wait_closed_still_runs_when_the_listener_is_destroyed_first) {
    LoggingServer s;
    std::vector<int> clients = s.connect_clients(1);
    bool all_closed = false;
    s.listener->wait_closed([&] { all_closed = true; });
    s.listener.reset();  // destroying closes it; the connection lives on
    spin_once(s.sched);
    BOOST_TEST(!all_closed);
    ::close(clients[0]);
    BOOST_REQUIRE(reactor_test::run_until(s.sched, [&] { return all_closed; }));
    s.sched.run();
    BOOST_TEST(s.sched.empty());
}

BOOST_AUTO_TEST_CASE(a_connection_added_to_another_set_leaves_the_first) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto mine = reactor::ConnectionSet::create(sched);
    auto listener = reactor::Listener::listen(sched, any_loopback(), [&](const ConnectionPtr& c) { mine->add(c); });
    int fd = reactor_test::connect_blocking(listener->address().port());
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return mine->size() == 1u; }));
    BOOST_TEST(listener->connections().empty());
    mine->add(nullptr);  // ignored
    BOOST_TEST(mine->size() == 1u);

    bool mine_empty = false;
    bool listener_done = false;
    mine->when_empty([&] { mine_empty = true; });
    listener->wait_closed([&] { listener_done = true; });
    listener->close();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return listener_done; }));  // it has no member left
    BOOST_TEST(!mine_empty);
    ::close(fd);
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return mine_empty; }));
    BOOST_TEST(mine->empty());
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

// The set counts its members and finds them among the loop's open
// connections: whichever leave (added in the middle, last or first), the
// count follows and what is left is still reached (abort_all). A connection
// of another loop is refused, and the set is as it was.
BOOST_AUTO_TEST_CASE(members_leave_from_any_slot_and_the_rest_are_still_reached) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto set = reactor::ConnectionSet::create(sched);
    std::vector<reactor_test::SocketPair> pairs(6);
    std::vector<ConnectionPtr> conns;
    for (auto& p : pairs) {
        conns.push_back(Connection::adopt(sched, ::dup(p.a.get())));
        set->add(conns.back());
    }
    BOOST_TEST(set->size() == 6u);
    conns[2]->close();  // the middle
    conns[5]->close();  // the last added
    conns[0]->abort();  // the first
    sched.run_once();
    BOOST_TEST(set->size() == 3u);

    reactor::Scheduler other(on(reactor_test::backend_under_test()));
    reactor_test::SocketPair foreign_pair;
    ConnectionPtr foreign = Connection::adopt(other, ::dup(foreign_pair.a.get()));
    BOOST_CHECK_THROW(set->add(foreign), std::invalid_argument);
    BOOST_TEST(set->size() == 3u);
    foreign->close();
    other.run();

    set->abort_all();
    for (const ConnectionPtr& c : conns) BOOST_TEST(c->state() == Connection::State::closed);
    bool empty = false;
    set->when_empty([&] { empty = true; });
    sched.run();
    BOOST_TEST(empty);
    BOOST_TEST(set->empty());
}

// The set's gate (reactor::ServerGate): close() runs the hooks at once, in
// order; `done` waits for the last hold and runs on a later iteration, never
// inside close() or a release; a hold taken while closing counts; after the
// end no hold is given.
BOOST_AUTO_TEST_CASE(the_gate_ends_on_a_later_iteration_after_its_last_hold) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    auto set = reactor::ConnectionSet::create(sched);
    reactor::ServerGate& gate = set->gate();
    std::vector<std::string> events;
    reactor::ServerGate::Hold first = gate.hold();
    reactor::ServerGate::Hold late;
    gate.on_close([&] { events.push_back("hook 1"); });
    gate.on_close([&] {
        events.push_back("hook 2");
        late = gate.hold();  // work a close hook starts still counts
    });
    gate.close([&] { events.push_back("done"); });
    BOOST_TEST((events == std::vector<std::string>{"hook 1", "hook 2"}));
    BOOST_TEST(gate.closing());
    BOOST_TEST(gate.held() == 2u);
    first.release();
    sched.run_once();
    BOOST_TEST(events.size() == 2u);  // `late` still holds it
    late.release();
    BOOST_TEST(events.size() == 2u);  // not inside the release
    BOOST_TEST(!gate.ended());
    sched.run_once();
    BOOST_TEST((events == std::vector<std::string>{"hook 1", "hook 2", "done"}));
    BOOST_TEST(gate.ended());
    BOOST_CHECK_THROW(static_cast<void>(gate.hold()), std::logic_error);
    bool late_hook = false;
    gate.on_close([&] { late_hook = true; });  // closed already: on a later iteration
    BOOST_TEST(!late_hook);
    sched.run();
    BOOST_TEST(late_hook);
    BOOST_TEST(sched.empty());
}
