// SPDX-License-Identifier: MIT
// The end of a loop, seen from a program: Scheduler::live() lists every
// object alive on it once, each by the line of THIS file that made it (never
// a line inside the library); close() reports them, ends them all in order
// and leaves nothing behind; destroying the Scheduler instead ends them
// silently (run under AddressSanitizer: no leak, no use after free). Real
// sockets on 127.0.0.1, a real child process, a real thread-pool job. On
// every backend.
#include <signal.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <source_location>
#include <string>
#include <thread>
#include <vector>

#include <futures/futures.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/thread_pool.hpp>

#include "support/backends.hpp"
#include "support/gate.hpp"

using namespace std::chrono_literals;
using reactor::LiveItem;

namespace reactor {
inline std::ostream& operator<<(std::ostream& out, LiveItem::Kind kind) { return out << to_string(kind); }
}  // namespace reactor

namespace {

reactor::Scheduler::Options on_backend() { return reactor_test::on(reactor_test::backend_under_test()); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

bool names_this_file(const LiveItem& item) {
    return item.where_known && contains(item.where.file_name(), "test_loop_end.cpp");
}

// Reads what a stream sends, in a task, until the stream ends.
struct ReadAll {
    futures::Stream stream;
    futures::Future<std::string> read;
    futures::Step<void> resume() {
        if (read.valid() && read.result().empty()) return futures::finished;
        return read = stream.read(1024);
    }
};

// Everything the test puts on a loop, each made on a line it records.
struct Objects {
    std::map<LiveItem::Kind, std::vector<unsigned>> lines;  // the lines that made each kind
    reactor::ListenerPtr listener;
    std::vector<reactor::ConnectionPtr> accepted;
    std::vector<reactor::ConnectionPtr> connected;
    std::optional<futures::StreamServer> server;
    std::optional<futures::Stream> client_of_server;
    reactor::Job job;
    std::optional<futures::Process> child;
    std::optional<futures::Queue<int>> queue;
    futures::Future<int> parked;
    reactor::WorkHold hold;
    int close_callbacks = 0;

    void made(LiveItem::Kind kind, unsigned line) { lines[kind].push_back(line); }
};

// Puts on `sched`: a listener with two accepted connections (and the two
// client ends, connected by connect()), a streams server whose handler task
// is reading, a thread-pool job held at a gate, a running child, a parked
// Queue::get and a work hold. Runs the loop until all are in place.
void populate(reactor::Scheduler& sched, Objects& o, reactor::ThreadPool& pool, reactor_test::Gate& gate) {
    using K = LiveItem::Kind;
    auto count_close = [&o](reactor::Connection&, const reactor::CloseReason&) { ++o.close_callbacks; };

    unsigned line = std::source_location::current().line();
    o.listener = reactor::Listener::listen(sched, reactor::Address::parse("127.0.0.1", 0),
                                           [&o, count_close](const reactor::ConnectionPtr& c) {
                                               c->set_close_callback(count_close);
                                               o.accepted.push_back(c);
                                           });
    o.made(K::listener, line + 1);
    o.made(K::connection, line + 1);  // the two accepted ones are named by listen()
    o.made(K::connection, line + 1);

    for (int i = 0; i < 2; ++i) {
        line = std::source_location::current().line();
        reactor::connect(sched, o.listener->address(), [&o, count_close](reactor::ConnectionPtr c, std::error_code e) {
            BOOST_REQUIRE(!e);
            c->set_close_callback(count_close);
            o.connected.push_back(std::move(c));
        });
        o.made(K::connection, line + 1);
    }

    line = std::source_location::current().line();
    auto server = futures::start_server(sched, "127.0.0.1", 0, [&sched](futures::Stream s) {
        return futures::spawn(sched, ReadAll{std::move(s), {}});
    });
    o.made(K::listener, line + 1);
    o.made(K::connection, line + 1);
    o.made(K::task, line + 2);  // the handler's task: the user's spawn() in the handler
    BOOST_REQUIRE(server.done());
    o.server.emplace(server.result());

    line = std::source_location::current().line();
    auto client = futures::open_connection(sched, o.server->address());
    o.made(K::connection, line + 1);

    line = std::source_location::current().line();
    o.job = pool.submit(sched, [&gate] { gate.wait(); }, [](reactor::JobResult<void>&&) {});
    o.made(K::job, line + 1);

    line = std::source_location::current().line();
    o.child.emplace(futures::spawn_process(sched, {"sleep", "30"}));
    o.made(K::process, line + 1);

    o.queue.emplace(sched);
    line = std::source_location::current().line();
    o.parked = o.queue->get();
    o.made(K::future, line + 1);

    line = std::source_location::current().line();
    o.hold = sched.hold_work();
    o.made(K::hold, line + 1);

    // Until the connections are up and the server's handler is reading.
    futures::run_until(sched, client);
    o.client_of_server.emplace(client.result());
    for (int i = 0; i < 100 && (o.accepted.size() < 2 || o.connected.size() < 2 || futures::all_tasks(sched).empty() ||
                                !futures::all_tasks(sched).front().started);
         ++i)
        sched.run_for(10ms);
    BOOST_REQUIRE(o.accepted.size() == 2u);
    BOOST_REQUIRE(o.connected.size() == 2u);
    BOOST_REQUIRE(futures::all_tasks(sched).size() == 1u);
}

// The items of live() that are the objects above (timers and ready
// callbacks of the library's own, if any, aside), each checked.
void check_live(const std::vector<LiveItem>& items, const Objects& o) {
    std::map<LiveItem::Kind, std::vector<unsigned>> seen;
    for (const LiveItem& item : items) {
        BOOST_TEST_CONTEXT(item.to_string()) {
            BOOST_TEST(!contains(item.to_string(), "reactor/src"));
            BOOST_TEST(!contains(item.to_string(), "futures/src"));
            BOOST_TEST(names_this_file(item));
            if (item.kind == LiveItem::Kind::reader || item.kind == LiveItem::Kind::writer)
                BOOST_ERROR("an fd waiter listed apart from the object that owns it");
            seen[item.kind].push_back(item.where.line());
        }
    }
    for (auto& [kind, lines] : seen) std::sort(lines.begin(), lines.end());
    auto expected = o.lines;
    for (auto& [kind, lines] : expected) std::sort(lines.begin(), lines.end());
    BOOST_TEST_CONTEXT("listener, connection, process, hold, task, future, job") {
        for (LiveItem::Kind kind : {LiveItem::Kind::listener, LiveItem::Kind::connection, LiveItem::Kind::process,
                                    LiveItem::Kind::hold, LiveItem::Kind::task, LiveItem::Kind::future,
                                    LiveItem::Kind::job}) {
            BOOST_TEST_CONTEXT(kind) { BOOST_TEST(seen[kind] == expected[kind], boost::test_tools::per_element()); }
        }
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(live_lists_each_object_once_by_the_users_line_and_close_ends_them) {
    reactor_test::Gate gate;
    reactor::ThreadPool pool(1);
    Objects o;
    {
        reactor::Scheduler sched(on_backend());
        std::vector<std::string> reports;
        sched.set_exception_handler([&reports](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
        populate(sched, o, pool, gate);

        const std::vector<LiveItem> items = sched.live();
        check_live(items, o);

        const std::vector<LiveItem> closed = sched.close();
        BOOST_TEST(closed.size() == items.size());
        // One line per item, then the summary: nothing else (no "never retrieved").
        BOOST_TEST_REQUIRE(reports.size() == items.size() + 1);
        for (std::size_t i = 0; i < items.size(); ++i) BOOST_TEST(contains(reports[i], "still alive at close"));
        BOOST_TEST(contains(reports.back(), "item(s) were still alive"));
        BOOST_TEST(o.close_callbacks == 4);  // the four connections made by hand heard close()
        BOOST_TEST(sched.live().empty());
        BOOST_TEST(sched.empty());
        BOOST_TEST(!o.hold.holds());
        BOOST_TEST(!o.job.is_pending());
        BOOST_TEST(o.parked.cancelled());
        o.hold.release();  // harmless on a hold close() released
        gate.open();
    }
    ::kill(o.child->pid(), SIGKILL);  // not killed by close(): its reaper thread reaps it now
}

BOOST_AUTO_TEST_CASE(destroying_the_loop_first_ends_everything_silently) {
    reactor_test::Gate gate;
    reactor::ThreadPool pool(1);
    Objects o;
    {
        reactor::Scheduler sched(on_backend());
        std::vector<std::string> reports;
        sched.set_exception_handler([&reports](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
        populate(sched, o, pool, gate);
        check_live(sched.live(), o);
        reports.clear();
        // Objects declared before the Scheduler outlive it: the futures,
        // streams, processes and the hold below are touched after it is gone.
    }
    BOOST_TEST(!o.hold.holds());
    o.hold.release();
    BOOST_TEST(!o.job.is_pending());
    BOOST_TEST(o.parked.cancelled());
    BOOST_TEST(o.close_callbacks == 0);  // destroyed unrun
    for (auto& c : o.accepted) BOOST_TEST(!c->is_open());
    for (auto& c : o.connected) {
        BOOST_TEST(!c->is_open());
        // A closed connection times nothing: the setters do not read the
        // destroyed loop's clock (AddressSanitizer would see it).
        c->set_read_timeout(std::chrono::seconds(1));
        c->set_write_timeout(std::chrono::seconds(1));
        c->set_idle_timeout(std::chrono::seconds(1));
        BOOST_TEST(!c->write("x"));
    }
    gate.open();
    ::kill(o.child->pid(), SIGKILL);  // not killed by the destruction: its reaper thread reaps it now
}

BOOST_AUTO_TEST_CASE(a_work_hold_keeps_run_going_until_released) {
    reactor::Scheduler sched(on_backend());
    BOOST_TEST(sched.empty());
    const unsigned line = std::source_location::current().line();
    reactor::WorkHold hold = sched.hold_work();
    BOOST_TEST(hold.holds());
    BOOST_TEST(!sched.empty());
    const auto items = sched.live();
    BOOST_TEST_REQUIRE(items.size() == 1u);
    BOOST_TEST(items[0].kind == LiveItem::Kind::hold);
    BOOST_TEST(items[0].where.line() == line + 1);

    // Moved, it keeps its place and still holds; the moved-from one does not.
    reactor::WorkHold moved = std::move(hold);
    BOOST_TEST(!hold.holds());
    BOOST_TEST(moved.holds());
    BOOST_TEST(sched.live().size() == 1u);

    // run() waits for it: a timer releases it, and run() returns after.
    bool released = false;
    sched.call_later(5ms, [&] {
        moved.release();
        released = true;
    });
    BOOST_TEST((sched.run_for(10s) == reactor::RunStatus::idle));
    BOOST_TEST(released);
    BOOST_TEST(sched.empty());
    BOOST_TEST(sched.live().empty());
}

BOOST_AUTO_TEST_CASE(a_work_hold_keeps_run_going_for_another_thread) {
    reactor::Scheduler sched(on_backend());
    reactor::WorkHold hold = sched.hold_work();
    bool done = false;
    std::thread worker([&] { sched.call_soon_threadsafe([&] { done = true, hold.release(); }); });
    sched.run();  // returns only once the post released the hold
    worker.join();
    BOOST_TEST(done);
    BOOST_TEST(!hold.holds());
}
