// SPDX-License-Identifier: MIT
// docs/cores.md: one loop per core. A LoopGroup, posting across loops,
// futures::submit_to, a ForeignPtr going home, a GroupListener spreading connections, the order of
// shutdown, and a server's graceful end across loops. Loopback sockets only; threads meet through futures and posts.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <futures/future.hpp>
#include <futures/run.hpp>
#include <futures/submit_to.hpp>
#include <reactor/foreign_ptr.hpp>
#include <reactor/loop_group.hpp>
#include <reactor/net/address.hpp>
#include <reactor/net/group_listener.hpp>
#include <reactor/net/group_server_lifetime.hpp>
#include <reactor/scheduler.hpp>

using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(cores_loop_group) {
    std::atomic<int> on_loop_1{0};
    // [snippet:loop_group]
    reactor::LoopGroupOptions options;
    options.loops = 2;  // 0, the default: one per CPU this process may use
    reactor::LoopGroup group(options);
    group.start();  // one thread per loop, each in run_forever()
    // The one member of a loop that other threads may call:
    group.loop(1).call_soon_threadsafe([&] { on_loop_1 = 1; });
    group.stop();  // each loop runs what was posted, closes, and its thread is joined
    // [end-snippet:loop_group]
    BOOST_TEST(on_loop_1 == 1);
}

BOOST_AUTO_TEST_CASE(cores_submit_to) {
    reactor::LoopGroupOptions one;
    one.loops = 1;
    reactor::LoopGroup group(one);
    group.start();
    // [snippet:submit_to]
    reactor::Scheduler here;  // this thread's loop
    reactor::Scheduler& there = group.loop(0);
    // fn runs on `there`'s thread; the future belongs to `here`.
    futures::Future<int> f = futures::submit_to(here, there, [] { return 6 * 7; });
    futures::run_until(here, f);
    int answer = f.result();  // 42
    // [end-snippet:submit_to]
    BOOST_TEST(answer == 42);
    group.stop();
    // A target that has ended fails the future at once, with LoopClosedError.
    futures::Future<int> late = futures::submit_to(here, there, [] { return 1; });
    futures::run_until(here, late);
    BOOST_CHECK_THROW(late.result(), futures::LoopClosedError);
}

namespace {
// What the foreign_ptr snippet carries: it records where it dies.
struct Table {
    std::vector<int> rows{1, 2, 3};
    std::atomic<std::thread::id>* died_on = nullptr;
    std::latch* gone = nullptr;
    ~Table() {
        if (died_on != nullptr) died_on->store(std::this_thread::get_id());
        if (gone != nullptr) gone->count_down();
    }
};
}  // namespace

BOOST_AUTO_TEST_CASE(cores_foreign_ptr) {
    reactor::LoopGroupOptions two;
    two.loops = 2;
    reactor::LoopGroup group(two);
    group.start();
    std::atomic<std::thread::id> loop_1_thread{}, died_on{};
    std::latch gone(1);
    reactor::Scheduler here;
    // [snippet:foreign_ptr]
    // Made on loop 1, carried back to `here` inside a ForeignPtr:
    futures::Future<reactor::ForeignPtr<Table>> f = futures::submit_to(here, group.loop(1), [&] {
        loop_1_thread = std::this_thread::get_id();
        auto table = std::make_unique<Table>();
        table->died_on = &died_on;
        table->gone = &gone;
        return reactor::make_foreign(std::move(table));  // owner: the loop running this, loop 1
    });
    futures::run_until(here, f);
    reactor::ForeignPtr<Table> table = std::move(f.result());
    std::size_t rows = table->rows.size();  // read here (the rows do not change)
    table.reset();  // not loop 1's thread: the deletion is posted to loop 1, and runs there
    // [end-snippet:foreign_ptr]
    gone.wait();
    BOOST_TEST(rows == 3u);
    BOOST_TEST((died_on.load() == loop_1_thread.load()));
    BOOST_TEST((died_on.load() != std::this_thread::get_id()));
    group.stop();
}

BOOST_AUTO_TEST_CASE(cores_group_listener) {
    std::promise<std::size_t> served_by;
    reactor::LoopGroupOptions options;
    options.loops = 2;
    // [snippet:group_listener]
    reactor::LoopGroup group(options);
    // Before start(): the loops are not running yet.
    auto listener = reactor::GroupListener::listen(
        group, reactor::Address::parse("127.0.0.1:0"),
        [&](const reactor::ConnectionPtr& conn, std::size_t loop) {
            // On `loop`'s thread: the connection lives and dies there.
            conn->set_data_callback([](reactor::Connection& c, std::string_view data) { c.write(data); });
            served_by.set_value(loop);
        });  // Spreading::least_connections by default
    group.start();
    // [end-snippet:group_listener]
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const reactor::Address a = listener->address();
    BOOST_REQUIRE(::connect(fd, a.data(), a.size()) == 0);
    BOOST_TEST(served_by.get_future().get() == 0u);  // the first connection: loop 0, none has any
    BOOST_TEST(listener->live_connections() == (std::vector<std::size_t>{1, 0}), boost::test_tools::per_element());
    ::close(fd);
    // [snippet:shutdown]
    listener->close();  // 1. stop accepting (each listener closes on its loop)
    group.stop();       // 2. each loop: run what is ready, refuse posts, close() what is left
    listener.reset();   // 3. what pointed into the loops goes before the group
    // [end-snippet:shutdown]
}

BOOST_AUTO_TEST_CASE(cores_group_server_lifetime) {
    reactor::LoopGroupOptions options;
    options.loops = 2;
    reactor::LoopGroup group(options);
    auto listener = reactor::GroupListener::listen(group, reactor::Address::parse("127.0.0.1:0"),
                                                   [](const reactor::ConnectionPtr&, std::size_t) {});
    reactor::GroupServerLifetime::LoopCounts total;
    std::size_t loops_reported = 0;
    // [snippet:group_server_lifetime]
    reactor::GroupServerLifetime::Options how;
    how.drain_time = 5s;  // SIGINT, SIGTERM: stop accepting, 5 s to finish, then abort
    reactor::GroupServerLifetime lifetime(group, *listener, how, [&](const reactor::GroupServerLifetime::Report& r) {
        // On loop 0, which owns the signals: draining, aborting, then one ended.
        if (r.kind != reactor::GroupServerLifetime::Report::Kind::ended) return;
        total = r.total();               // r.loops[i]: loop i's accepted, open and aborted
        loops_reported = r.loops.size();
    });
    lifetime.on_ended([&] { group.request_stop(); });
    // [end-snippet:group_server_lifetime]
    lifetime.shut_down("the test");  // what a SIGINT does; queued for loop 0
    // [snippet:group_server_run]
    group.run();  // this thread runs loop 0, until on_ended stops the group
    // [end-snippet:group_server_run]
    BOOST_TEST(loops_reported == 2u);
    BOOST_TEST(total.accepted == 0u);
    BOOST_TEST(total.aborted == 0u);
    BOOST_TEST(lifetime.ended());
}
