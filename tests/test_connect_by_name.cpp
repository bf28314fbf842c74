// SPDX-License-Identifier: MIT
// Connecting and serving by host name without blocking the loop:
// reactor::connect(sched, host, port, cb) looks a name up on a ThreadPool and
// tries each address in turn; futures::start_server(sched, host, port, ...)
// returns a future for the same reason. The lookup's every end is covered:
// answered, failed, queued behind busy workers until the timeout, cancelled,
// refused by a full or shut-down pool, ended by Scheduler::close().
//
// Network rule: only "localhost" (from /etc/hosts; skipped where it does not
// resolve to loopback), numeric hosts, and names the resolver refuses without
// a query (support/name_resolution.hpp). Busy workers wait on a Gate the test
// opens: nothing depends on timing. CTest runs it once per selector backend.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <futures/futures.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/net/resolve_error.hpp>
#include <reactor/thread_pool.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/gate.hpp"
#include "support/name_resolution.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::Address;
using reactor::ConnectionPtr;
using reactor::resolve_errc;
using reactor::Scheduler;
using reactor::ThreadPool;
using reactor_test::backend_under_test;
using reactor_test::on;

// A one-worker pool whose worker is held by a job until release(): a lookup
// submitted meanwhile stays queued.
struct BusyPool {
    explicit BusyPool(Scheduler& s, std::size_t capacity = ThreadPool::kDefaultQueueCapacity)
        : sched(s), pool(1, capacity) {
        std::promise<void> started;
        blocker = pool.submit(
            sched,
            [&] {
                started.set_value();
                gate.wait();
            },
            [](reactor::JobResult<void>&&) {});
        started.get_future().wait();
    }
    ~BusyPool() { open(); }  // the pool's destructor joins the worker: never wait for a gate left shut
    void open() {
        if (!std::exchange(opened, true)) gate.open();
    }
    // Lets the worker go and runs the loop until the blocker's `done` is back.
    void release() {
        open();
        sched.run();
    }
    Scheduler& sched;
    reactor_test::Gate gate;
    bool opened = false;
    ThreadPool pool;
    reactor::Job blocker;
};

// What a connect callback saw.
struct Outcome {
    std::optional<std::error_code> error;
    ConnectionPtr conn;
    reactor::Connector::ConnectCallback callback() {
        return [this](ConnectionPtr c, std::error_code ec) {
            conn = std::move(c);
            error = ec;
        };
    }
};

reactor::Connector::Options on_pool(ThreadPool& pool, std::chrono::milliseconds timeout = 0ms) {
    reactor::Connector::Options o;
    o.resolver = &pool;
    o.timeout = timeout;
    return o;
}

// A TCP socket bound to `address` (not listening: connections to it are
// refused, and nobody else can take the port); -1 if it cannot be bound.
int bind_holder(const Address& address) {
    const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::bind(fd, address.data(), address.size()) == 0) return fd;
    if (fd >= 0) ::close(fd);
    return -1;
}

}  // namespace

// Every address "localhost" names but the last is held, bound and not
// listening, so each of them refuses; the listener is on the last one. The
// Connector must look the name up off the loop, be refused by the first ones
// and connect to the last.
BOOST_AUTO_TEST_CASE(connect_by_name_tries_each_address_in_turn, *reactor_test::needs_localhost()) {
    Scheduler sched(on(backend_under_test()));
    const std::vector<Address> names = Address::resolve("localhost", 0);
    reactor::ListenerPtr listener;
    std::vector<int> holders;
    for (int round = 0; round < 50 && !listener; ++round) {  // until no other process holds our port anywhere
        listener = reactor::Listener::listen(sched, Address::parse(names.back().host(), 0), [](const ConnectionPtr&) {});
        const std::uint16_t port = listener->address().port();
        for (std::size_t i = 0; i + 1 < names.size(); ++i) {
            const int fd = bind_holder(Address::parse(names[i].host(), port));
            if (fd < 0 && errno == EADDRINUSE) {
                listener->close();
                listener = nullptr;
                break;
            }
            holders.push_back(fd);  // -1: that family is off here, and connecting there fails anyway
        }
        if (!listener)
            for (int fd : std::exchange(holders, {}))
                if (fd >= 0) ::close(fd);
    }
    BOOST_REQUIRE(listener);

    Outcome out;
    auto connector = reactor::connect(sched, "localhost", listener->address().port(), out.callback());
    BOOST_TEST(connector->is_pending());
    BOOST_TEST(connector->host() == "localhost");
    BOOST_TEST(connector->address().family() == AF_UNSPEC);  // still looking the name up
    while (!out.error) sched.run_once();
    BOOST_TEST(!*out.error);
    BOOST_REQUIRE(out.conn);
    BOOST_TEST(connector->address().to_string() == listener->address().to_string());
    BOOST_TEST(out.conn->peer_address().to_string() == listener->address().to_string());
    out.conn->abort();
    out.conn = nullptr;
    listener->close();
    sched.run();
    for (int fd : holders)
        if (fd >= 0) ::close(fd);
    CHECK_EMPTY(sched);
}

// The same walk over a list given by hand: two ports that refuse (bound, not
// listening), then the listener. The callback sees only the connection.
BOOST_AUTO_TEST_CASE(a_list_of_addresses_is_tried_in_turn) {
    Scheduler sched(on(backend_under_test()));
    const int refused1 = bind_holder(Address::loopback_v4(0));
    const int refused2 = bind_holder(Address::loopback_v4(0));
    BOOST_REQUIRE(refused1 >= 0 && refused2 >= 0);
    auto listener = reactor::Listener::listen(sched, Address::loopback_v4(0), [](const ConnectionPtr&) {});
    const std::vector<Address> refusing{Address::local_of(refused1), Address::local_of(refused2)};
    std::vector<Address> all = refusing;
    all.push_back(listener->address());

    Outcome out;
    auto connector = reactor::connect(sched, all, out.callback());
    BOOST_TEST(connector->address().to_string() == all[0].to_string());  // the first attempt is under way
    while (!out.error) sched.run_once();
    BOOST_TEST(!*out.error);
    BOOST_REQUIRE(out.conn);
    BOOST_TEST(connector->address().to_string() == listener->address().to_string());
    BOOST_TEST(listener->accepted() <= 1u);
    out.conn->abort();
    out.conn = nullptr;

    // None answers: the last attempt's error, and the Connector names that address.
    Outcome none;
    connector = reactor::connect(sched, refusing, none.callback());
    while (!none.error) sched.run_once();
    BOOST_REQUIRE(none.error);
    BOOST_TEST(none.error->value() == ECONNREFUSED);
    BOOST_TEST(connector->address().to_string() == refusing.back().to_string());
    BOOST_CHECK_THROW(reactor::connect(sched, std::vector<Address>{}, none.callback()), std::invalid_argument);
    listener->close();
    sched.run();
    ::close(refused1);
    ::close(refused2);
    CHECK_EMPTY(sched);
}

// A numeric host is parsed, never looked up: connecting works with a
// resolver pool that is shut down.
BOOST_AUTO_TEST_CASE(a_numeric_host_needs_no_lookup) {
    Scheduler sched(on(backend_under_test()));
    ThreadPool closed(1);
    closed.shutdown();
    auto listener = reactor::Listener::listen(sched, Address::loopback_v4(0), [](const ConnectionPtr&) {});
    Outcome out;
    reactor::connect(sched, "127.0.0.1", listener->address().port(), out.callback(), on_pool(closed));
    while (!out.error) sched.run_once();
    BOOST_TEST(!*out.error);
    BOOST_REQUIRE(out.conn);
    out.conn->abort();
    out.conn = nullptr;
    listener->close();
    sched.run();
    CHECK_EMPTY(sched);
}

// Names the resolver refuses reach the callback in resolve_category(), with
// the host on the Connector to name it.
BOOST_AUTO_TEST_CASE(a_name_that_does_not_resolve_reaches_the_callback) {
    for (const std::string& host : {std::string(), reactor_test::unresolvable_name()}) {
        Scheduler sched(on(backend_under_test()));
        Outcome out;
        auto connector = reactor::connect(sched, host, 80, out.callback());
        BOOST_TEST(!out.error);  // never from inside connect()
        sched.run();
        BOOST_REQUIRE(out.error);
        BOOST_TEST((out.error->category() == reactor::resolve_category()));
        if (host.empty()) BOOST_TEST((*out.error == resolve_errc::no_name));
        BOOST_TEST(!out.conn);
        BOOST_TEST(connector->host() == host);
        BOOST_TEST(!connector->is_pending());
        CHECK_EMPTY(sched);
    }
}

// The timeout covers the lookup: one still queued behind a busy worker is
// taken out of the queue, never to run.
BOOST_AUTO_TEST_CASE(the_timeout_covers_a_lookup_still_queued, *reactor_test::needs_localhost()) {
    Scheduler sched(on(backend_under_test()));
    BusyPool busy(sched);
    Outcome out;
    auto connector = reactor::connect(sched, "localhost", 9, out.callback(), on_pool(busy.pool, 20ms));
    BOOST_TEST(busy.pool.queued() == 1u);
    while (!out.error) sched.run_once();
    BOOST_TEST(out.error->value() == ETIMEDOUT);
    BOOST_TEST(&out.error->category() == &std::generic_category());
    BOOST_TEST(busy.pool.queued() == 0u);
    BOOST_TEST(!connector->is_pending());
    busy.release();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(cancel_during_the_lookup, *reactor_test::needs_localhost()) {
    Scheduler sched(on(backend_under_test()));
    BusyPool busy(sched);
    Outcome out;
    auto connector = reactor::connect(sched, "localhost", 9, out.callback(), on_pool(busy.pool));
    BOOST_TEST(connector->cancel());
    BOOST_TEST(!connector->cancel());
    BOOST_TEST(busy.pool.queued() == 0u);
    busy.release();  // returns: nothing else keeps the loop busy
    BOOST_TEST(!out.error);
    CHECK_EMPTY(sched);
}

// A full queue refuses the lookup (waiting for room would block the loop):
// resolve_errc::again, getaddrinfo's own "try again later". A shut-down pool:
// ECANCELED. Either way, on a later iteration.
BOOST_AUTO_TEST_CASE(a_full_or_shut_down_resolver_pool_reaches_the_callback) {
    Scheduler sched(on(backend_under_test()));
    {
        BusyPool busy(sched, 1);
        reactor::Job filler = busy.pool.submit(sched, [] {}, [](reactor::JobResult<void>&&) {});
        Outcome out;
        reactor::connect(sched, "localhost", 9, out.callback(), on_pool(busy.pool));
        BOOST_TEST(!out.error);
        sched.run_once();
        BOOST_REQUIRE(out.error);
        BOOST_TEST((*out.error == resolve_errc::again));
        busy.release();
    }
    ThreadPool closed(1);
    closed.shutdown();
    Outcome out;
    reactor::connect(sched, "localhost", 9, out.callback(), on_pool(closed));
    sched.run();
    BOOST_REQUIRE(out.error);
    BOOST_TEST((*out.error == std::errc::operation_canceled));
    CHECK_EMPTY(sched);
}

// close() lists the lookup as a thread-pool job and ends it: the callback
// never runs, the job leaves the queue, and the Connector is freed.
BOOST_AUTO_TEST_CASE(close_ends_a_lookup_in_progress, *reactor_test::needs_localhost()) {
    Scheduler sched(on(backend_under_test()));
    sched.set_exception_handler([](const reactor::ErrorContext&) {});  // close() reports the job
    BusyPool busy(sched);
    Outcome out;
    std::weak_ptr<reactor::Connector> connector =
        reactor::connect(sched, "localhost", 9, out.callback(), on_pool(busy.pool));
    int jobs = 0;
    for (const reactor::LiveItem& item : sched.close()) jobs += item.kind == reactor::LiveItem::Kind::job;
    BOOST_TEST(jobs == 2);  // the blocker and the lookup
    BOOST_TEST(busy.pool.queued() == 0u);
    BOOST_TEST(connector.expired());
    BOOST_TEST(!out.error);
    busy.open();
    busy.pool.shutdown();  // joins the worker: the blocker's result is dropped, not posted
    CHECK_EMPTY(sched);
}

// ---- futures::start_server by host ----

BOOST_AUTO_TEST_CASE(start_server_by_name_listens_once_the_name_is_looked_up, *reactor_test::needs_localhost()) {
    Scheduler sched(on(backend_under_test()));
    futures::Future<futures::StreamServer> started = futures::start_server(sched, "localhost", 0, [&](futures::Stream s) {
        s.write("hello\n");
        s.close();
        return futures::make_ready_future(sched);
    });
    BOOST_TEST(!started.done());  // the name is looked up off the loop
    futures::StreamServer server = futures::run_until_complete(sched, started);
    const std::string host = server.address().host();
    BOOST_TEST((host == "127.0.0.1" || host == "::1"), host);
    futures::Stream client = futures::run_until_complete(sched, futures::open_connection(sched, server.address()));
    BOOST_TEST(futures::run_until_complete(sched, client.read_until()) == "hello\n");
    client.close();
    server.close();
    client = {};
    started = {};
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(start_server_failures_fail_the_future) {
    Scheduler sched(on(backend_under_test()));
    auto handler = [&](futures::Stream) { return futures::make_ready_future(sched); };
    // A name that does not resolve: the resolver's error, naming the host.
    auto unresolved = futures::start_server(sched, reactor_test::unresolvable_name(), 0, handler);
    BOOST_CHECK_EXCEPTION((void)futures::run_until_complete(sched, unresolved), std::system_error, [](const std::system_error& e) {
        return e.code().category() == reactor::resolve_category() &&
               std::string(e.what()).find(".invalid") != std::string::npos;
    });
    // A port in use: the bind's error, in the future, at once for a numeric host.
    const int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const Address any = Address::loopback_v4(0);
    BOOST_REQUIRE(::bind(holder, any.data(), any.size()) == 0);
    BOOST_REQUIRE(::listen(holder, 1) == 0);
    auto in_use = futures::start_server(sched, "127.0.0.1", Address::local_of(holder).port(), handler);
    BOOST_REQUIRE(in_use.failed());
    BOOST_CHECK_EXCEPTION((void)in_use.result(), std::system_error,
                          [](const std::system_error& e) { return e.code().value() == EADDRINUSE; });
    ::close(holder);
    // No handler: a programming error, thrown at once.
    BOOST_CHECK_THROW((void)futures::start_server(sched, "127.0.0.1", 0, futures::StreamServer::Handler()),
                      std::invalid_argument);
    unresolved = {};
    in_use = {};
    CHECK_EMPTY(sched);
}
