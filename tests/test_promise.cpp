// SPDX-License-Identifier: MIT
// futures::Promise (futures/promise.hpp): the producer end of a future, and
// the library's futures made through it (Stream::read, drain, Process::wait;
// run_in_executor has its own producer end) naming the caller's line: a task
// waiting on one shows, in futures::all_tasks(), a line of THIS file, never
// one under futures/src or reactor/src. Real sockets on 127.0.0.1 and real
// children (/bin/cat), on every backend.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/thread_pool.hpp>

#include "support/backends.hpp"

using namespace std::chrono_literals;
using futures::BrokenPromise;
using futures::Future;
using futures::Promise;
using futures::Step;
using futures::Stream;

namespace promise_test {

reactor::Scheduler::Options backend() { return reactor_test::on(reactor_test::backend_under_test()); }

// The line it is called on: `const auto line = here(); auto f = s.read();`
// names the line of the read.
unsigned here(std::source_location where = std::source_location::current()) { return where.line(); }

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

bool ends_with(std::string_view text, std::string_view tail) {
    return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

// Runs the loop until `done()`, at most `timeout` (a safety net: the cases
// never depend on it firing).
template <class Pred>
bool run_until(reactor::Scheduler& sched, Pred done, std::chrono::milliseconds timeout = 20s) {
    bool expired = false;
    reactor::Handle watchdog = sched.call_later(timeout, [&] { expired = true; });
    while (!done() && !expired) sched.run_once();
    watchdog.cancel();
    return done();
}

// Collects what reaches the exception handler.
struct Reports {
    explicit Reports(reactor::Scheduler& sched) {
        sched.set_exception_handler([this](const reactor::ErrorContext& ctx) { lines.push_back(ctx.message); });
    }
    bool any_never_retrieved() const {
        for (const std::string& line : lines)
            if (contains(line, "never retrieved")) return true;
        return false;
    }
    std::vector<std::string> lines;
};

// A task that waits on one future, then ends with its result (rethrown).
template <class T>
class WaitOn {
public:
    explicit WaitOn(Future<T> awaited) : awaited_(std::move(awaited)) {}
    std::string_view state_name() const { return waited_ ? "woken" : "waiting"; }
    Step<void> resume() {
        if (!waited_) {
            waited_ = true;
            return awaited_;
        }
        (void)awaited_.result();
        return futures::finished;
    }

private:
    Future<T> awaited_;
    bool waited_ = false;
};

// The all_tasks() entry of the task waiting on a future made at `line`.
std::optional<futures::TaskInfo> task_waiting_on_line(reactor::Scheduler& sched, unsigned line) {
    for (const futures::TaskInfo& info : futures::all_tasks(sched))
        if (info.waiting_on.line() == line) return info;
    return std::nullopt;
}

// Checks that a task waits on a future created at `line` of this file.
void check_names_this_line(reactor::Scheduler& sched, unsigned line) {
    BOOST_REQUIRE(!futures::all_tasks(sched).empty());
    for (const futures::TaskInfo& info : futures::all_tasks(sched)) {
        const std::string_view file = info.waiting_on.file_name();
        BOOST_TEST(!contains(file, "futures/src"), file);
        BOOST_TEST(!contains(file, "reactor/src"), file);
        BOOST_TEST(!contains(info.to_string(), "futures/src"), info.to_string());
    }
    const auto info = task_waiting_on_line(sched, line);
    BOOST_REQUIRE(info.has_value());
    BOOST_TEST(ends_with(info->waiting_on.file_name(), "test_promise.cpp"), info->waiting_on.file_name());
    BOOST_TEST(info->waiting_on_kind == "Future");
    BOOST_TEST(contains(info->to_string(), "test_promise.cpp:" + std::to_string(line)), info->to_string());
}

// A stream server on 127.0.0.1 that keeps each accepted stream (and never
// reads from it), and a client stream connected to it.
struct Pair {
    explicit Pair(reactor::Scheduler& sched, futures::StreamOptions server_options = {},
                  futures::StreamOptions client_options = {}) {
        server = futures::start_server(
            sched, reactor::Address::parse("127.0.0.1", 0),
            [this](Stream s) {
                accepted.push_back(s);
                return s.wait_closed();
            },
            server_options);
        Future<Stream> connecting = futures::open_connection(sched, server.address(), client_options);
        BOOST_REQUIRE(run_until(sched, [&] { return connecting.done() && !accepted.empty(); }));
        client = connecting.result();
    }
    ~Pair() {
        server.close();
        if (client.valid()) client.abort();
        for (Stream& s : accepted) s.abort();
    }
    futures::StreamServer server;
    std::vector<Stream> accepted;
    Stream client;
};

}  // namespace promise_test

using namespace promise_test;

// ---------------------------------------------------------------- the Promise itself

BOOST_AUTO_TEST_CASE(set_value_completes_the_future_through_the_loop) {
    reactor::Scheduler sched(backend());
    const auto line = here(); Promise<int> p(sched);
    Future<int> f = p.get_future();
    BOOST_TEST(p.valid());
    BOOST_TEST(p.is_pending());
    BOOST_TEST(f.origin().line() == line);
    BOOST_TEST(p.where().line() == line);
    int got = 0;
    f.add_done_callback([&](Future<int>& done) { got = done.result(); });
    BOOST_TEST(p.set_value(42));
    BOOST_TEST((f.status() == futures::Status::done));
    BOOST_TEST(!p.is_pending());
    BOOST_TEST(got == 0);  // scheduled, never run inside set_value
    sched.run();
    BOOST_TEST(got == 42);

    Promise<void> v(sched);
    Future<void> fv = v.get_future();
    BOOST_TEST(v.set_value());
    BOOST_TEST(fv.done());
    BOOST_CHECK_NO_THROW(fv.result());
    sched.run();
}

BOOST_AUTO_TEST_CASE(set_exception_fails_the_future_and_a_cancelled_error_cancels_it) {
    reactor::Scheduler sched(backend());
    Promise<std::string> p(sched);
    Future<std::string> f = p.get_future();
    BOOST_TEST(p.set_exception(std::runtime_error("boom")));
    BOOST_TEST(f.failed());
    BOOST_CHECK_THROW(f.result(), std::runtime_error);

    Promise<int> c(sched);
    Future<int> fc = c.get_future();
    BOOST_TEST(c.set_exception(std::make_exception_ptr(futures::CancelledError("stop"))));
    BOOST_TEST(fc.cancelled());

    Promise<int> n(sched);
    BOOST_CHECK_THROW(n.set_exception(std::exception_ptr()), std::invalid_argument);
    BOOST_TEST(n.set_value(1));  // the refused call completed nothing
    sched.run();
}

BOOST_AUTO_TEST_CASE(a_dropped_promise_cancels_its_future_with_broken_promise_naming_the_line) {
    reactor::Scheduler sched(backend());
    Reports reports(sched);
    Future<int> f;
    unsigned line = 0;
    {
        line = here(); Promise<int> p(sched);
        f = p.get_future();
    }
    BOOST_TEST(f.cancelled());
    try {
        f.result();
        BOOST_FAIL("result() of a broken promise's future returned");
    } catch (const BrokenPromise& e) {
        const std::string what = e.what();
        BOOST_TEST(contains(what, "broken promise: the future created at "), what);
        BOOST_TEST(contains(what, "test_promise.cpp:" + std::to_string(line) + " will never complete"), what);
    }
    // A BrokenPromise is a CancelledError: generic cancellation handling sees it.
    BOOST_CHECK_THROW(f.result(), futures::CancelledError);

    // A task waiting on it ends cancelled; nothing is reported.
    std::optional<Promise<int>> q(std::in_place, sched);
    Future<void> task = futures::spawn(sched, WaitOn<int>(q->get_future()));
    BOOST_REQUIRE(run_until(sched, [&] {
        const auto tasks = futures::all_tasks(sched);
        return !tasks.empty() && tasks[0].started;
    }));
    q.reset();
    BOOST_REQUIRE(run_until(sched, [&] { return task.done(); }));
    BOOST_TEST(task.cancelled());
    BOOST_CHECK_THROW(task.result(), BrokenPromise);
    f = {};
    task = {};
    sched.run();
    BOOST_TEST(!reports.any_never_retrieved());
    BOOST_TEST(reports.lines.empty());
}

BOOST_AUTO_TEST_CASE(assigning_over_a_pending_promise_breaks_it) {
    reactor::Scheduler sched(backend());
    Promise<int> p(sched, std::source_location::current(), "answer");
    Future<int> first = p.get_future();
    p = Promise<int>(sched);
    BOOST_TEST(first.cancelled());
    BOOST_CHECK_THROW(first.result(), BrokenPromise);
    try {
        first.result();
    } catch (const BrokenPromise& e) {
        BOOST_TEST(contains(e.what(), "broken promise: the answer created at "), e.what());
    }
    Future<int> second = p.get_future();
    BOOST_TEST(p.set_value(2));
    BOOST_TEST(second.result() == 2);
    sched.run();
}

BOOST_AUTO_TEST_CASE(a_promise_moves_and_the_moved_from_one_is_empty) {
    reactor::Scheduler sched(backend());
    Promise<int> a(sched);
    Future<int> f = a.get_future();
    Promise<int> b(std::move(a));
    BOOST_TEST(!a.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
    BOOST_TEST(!a.is_pending());
    BOOST_CHECK_THROW((void)a.get_future(), futures::InvalidStateError);
    BOOST_CHECK_THROW(a.set_value(1), futures::InvalidStateError);
    a = Promise<int>();  // assigning an empty one over an empty one breaks nothing
    BOOST_TEST((f.status() == futures::Status::pending));
    BOOST_CHECK_THROW((void)b.get_future(), futures::InvalidStateError);  // the future went along, taken
    Promise<int> c;
    c = std::move(b);
    BOOST_TEST(!b.valid());  // NOLINT(bugprone-use-after-move)
    BOOST_TEST(c.set_value(5));
    BOOST_TEST(f.result() == 5);
    static_assert(!std::is_copy_constructible_v<Promise<int>>);
    static_assert(!std::is_copy_assignable_v<Promise<int>>);
    static_assert(std::is_nothrow_move_constructible_v<Promise<int>>);
    sched.run();
}

BOOST_AUTO_TEST_CASE(get_future_twice_and_completing_twice_throw) {
    reactor::Scheduler sched(backend());
    const auto line = here(); Promise<int> p(sched);
    Future<int> f = p.get_future();
    try {
        (void)p.get_future();
        BOOST_FAIL("a second get_future() returned");
    } catch (const futures::InvalidStateError& e) {
        BOOST_TEST(contains(e.what(), "already taken"), e.what());
        BOOST_TEST(contains(e.what(), "test_promise.cpp:" + std::to_string(line)), e.what());
    }
    BOOST_TEST(p.set_value(1));
    BOOST_CHECK_THROW(p.set_value(2), futures::InvalidStateError);
    BOOST_CHECK_THROW(p.set_exception(std::runtime_error("late")), futures::InvalidStateError);
    BOOST_CHECK_THROW(p.cancel(), futures::InvalidStateError);
    BOOST_TEST(f.result() == 1);
    // The future completes itself: only its promise may complete it.
    BOOST_CHECK_THROW(f.set_result(3), futures::InvalidStateError);
    sched.run();
}

BOOST_AUTO_TEST_CASE(a_future_cancelled_by_its_consumer_makes_set_value_return_false) {
    reactor::Scheduler sched(backend());
    Promise<std::string> p(sched);
    Future<std::string> f = p.get_future();
    BOOST_TEST(f.cancel());
    BOOST_TEST(!p.is_pending());
    BOOST_TEST(!p.set_value("nobody wants this"));
    BOOST_TEST(f.cancelled());

    Promise<int> q(sched);
    Future<int> g = q.get_future();
    BOOST_TEST(q.cancel());  // the producer gives up on purpose: a plain cancellation
    BOOST_TEST(g.cancelled());
    sched.run();
}

BOOST_AUTO_TEST_CASE(a_promise_future_is_not_listed_by_live) {
    reactor::Scheduler sched(backend());
    Promise<int> p(sched);
    Future<int> f = p.get_future();
    BOOST_TEST(sched.live().empty());  // its producer is what is alive, not the future
    BOOST_TEST(p.set_value(0));
    sched.run();
}

// ---------------------------------------------------------------- the library's futures name the user's line

BOOST_AUTO_TEST_CASE(a_task_waiting_on_a_stream_read_names_the_read_line) {
    reactor::Scheduler sched(backend());
    Reports reports(sched);
    Pair pair(sched);
    const auto line = here(); Future<std::string> read = pair.client.read();
    BOOST_TEST(read.origin().line() == line);
    Future<void> task = futures::spawn(sched, WaitOn<std::string>(read));
    BOOST_REQUIRE(run_until(sched, [&] { return task_waiting_on_line(sched, line).has_value(); }));
    check_names_this_line(sched, line);

    // read_exactly and read_until carry their lines too.
    pair.accepted[0].write("x");
    BOOST_REQUIRE(run_until(sched, [&] { return task.done(); }));
    BOOST_TEST((task.status() == futures::Status::done));
    const auto exactly_line = here(); auto exactly = pair.client.read_exactly(4);
    BOOST_TEST(exactly.origin().line() == exactly_line);
    BOOST_TEST(ends_with(exactly.origin().file_name(), "test_promise.cpp"));
    BOOST_TEST(exactly.cancel());
    const auto until_line = here(); auto until = pair.client.read_until("\n");
    BOOST_TEST(until.origin().line() == until_line);
    BOOST_TEST(until.cancel());
    const auto closed_line = here(); Future<void> closed = pair.client.wait_closed();
    BOOST_TEST(closed.origin().line() == closed_line);
    pair.client.close();
    BOOST_REQUIRE(run_until(sched, [&] { return closed.done(); }));
    BOOST_TEST((closed.status() == futures::Status::done));
    BOOST_TEST(!reports.any_never_retrieved());
}

// The last handle dropped with a read pending: the read keeps the stream,
// which closes gracefully (nobody can use it any more); the read ends with
// the end of the input, done rather than broken, and nothing is reported.
BOOST_AUTO_TEST_CASE(a_stream_dropped_with_a_read_pending_closes_and_ends_the_read) {
    reactor::Scheduler sched(backend());
    Reports reports(sched);
    Pair pair(sched);
    Future<std::string> read = pair.client.read();
    pair.client = Stream();  // our last handle
    BOOST_REQUIRE(run_until(sched, [&] { return read.done(); }));
    BOOST_TEST((read.status() == futures::Status::done));
    BOOST_TEST(read.result() == "");
    sched.run_once();
    BOOST_TEST(!reports.any_never_retrieved());
}

BOOST_AUTO_TEST_CASE(a_task_waiting_on_a_drain_names_the_drain_line) {
    reactor::Scheduler sched(backend());
    Reports reports(sched);
    futures::StreamOptions server_options;
    server_options.limit = 1024;  // the server stops reading at once: nothing drains
    futures::StreamOptions client_options;
    client_options.connection.high_water = 64 * 1024;
    client_options.connection.low_water = 16 * 1024;
    Pair pair(sched, server_options, client_options);
    // More than the kernel's socket buffers can take (a few MiB on loopback).
    const std::string chunk(1 << 20, 'x');
    for (int i = 0; i < 32; ++i) BOOST_REQUIRE(pair.client.write(chunk));
    const auto line = here(); Future<void> drain = pair.client.drain();
    BOOST_REQUIRE(!drain.done());
    BOOST_TEST(drain.origin().line() == line);
    Future<void> task = futures::spawn(sched, WaitOn<void>(drain));
    BOOST_REQUIRE(run_until(sched, [&] { return task_waiting_on_line(sched, line).has_value(); }));
    check_names_this_line(sched, line);
    task.cancel();
    BOOST_REQUIRE(run_until(sched, [&] { return task.done(); }));
    BOOST_TEST(task.cancelled());
    pair.client.abort();
    sched.run_once();
    BOOST_TEST(!reports.any_never_retrieved());
}

BOOST_AUTO_TEST_CASE(a_task_waiting_on_a_process_names_the_wait_line) {
    reactor::Scheduler sched(backend());
    Reports reports(sched);
    futures::ProcessOptions options;
    options.stdin_mode = futures::Stdio::pipe;  // cat runs until its stdin ends
    options.stdout_mode = futures::Stdio::null;
    futures::Process cat = futures::spawn_process(sched, {"/bin/cat"}, options);
    const auto line = here(); Future<int> exit = cat.wait();
    BOOST_TEST(exit.origin().line() == line);
    Future<void> task = futures::spawn(sched, WaitOn<int>(exit));
    BOOST_REQUIRE(run_until(sched, [&] { return task_waiting_on_line(sched, line).has_value(); }));
    check_names_this_line(sched, line);
    cat.stdin_pipe().close();  // EOF: cat exits 0
    BOOST_REQUIRE(run_until(sched, [&] { return task.done(); }));
    BOOST_TEST((task.status() == futures::Status::done));
    BOOST_TEST(exit.result() == 0);
    BOOST_TEST(!reports.any_never_retrieved());
}

BOOST_AUTO_TEST_CASE(close_breaks_a_pending_process_wait_naming_its_line_and_later_waits_too) {
    reactor::Scheduler sched(backend());
    Reports reports(sched);
    futures::ProcessOptions options;
    options.stdin_mode = futures::Stdio::pipe;  // close() aborts the pipe: cat sees EOF and exits
    options.stdout_mode = futures::Stdio::null;
    futures::Process cat = futures::spawn_process(sched, {"/bin/cat"}, options);
    const auto line = here(); Future<int> exit = cat.wait();
    (void)sched.close();
    BOOST_TEST(exit.cancelled());
    try {
        (void)exit.result();
        BOOST_FAIL("a wait() the loop's close() ended returned");
    } catch (const BrokenPromise& e) {
        BOOST_TEST(contains(e.what(), "the process wait created at "), e.what());
        BOOST_TEST(contains(e.what(), "test_promise.cpp:" + std::to_string(line)), e.what());
    }
    // The status can no longer be known: a later wait() is cancelled at once.
    const auto later_line = here(); Future<int> later = cat.wait();
    BOOST_TEST(later.cancelled());
    BOOST_CHECK_THROW((void)later.result(), BrokenPromise);
    BOOST_TEST(later.origin().line() == later_line);
    BOOST_TEST(!reports.any_never_retrieved());
    BOOST_TEST(sched.live().empty());
}

// The Scheduler destroyed first: the connection lets go of its callbacks,
// and the stream breaks its promises then, while the loop can still take
// their waiters (a read left pending would later be completed on a
// destroyed loop). The future and the stream outlive the loop here only to
// be looked at.
BOOST_AUTO_TEST_CASE(a_scheduler_destroyed_with_a_read_pending_breaks_it) {
    Future<std::string> read;
    Stream kept;
    unsigned line = 0;
    {
        reactor::Scheduler sched(backend());
        Pair pair(sched);
        line = here(); read = pair.client.read();
        kept = std::exchange(pair.client, Stream());
    }
    BOOST_TEST(read.cancelled());
    try {
        (void)read.result();
        BOOST_FAIL("a read its loop's destruction ended returned");
    } catch (const BrokenPromise& e) {
        BOOST_TEST(contains(e.what(), "test_promise.cpp:" + std::to_string(line)), e.what());
    }
}

// Closed, but its close callback (which completes the stream's futures)
// only queued when the loop is destroyed: the loop drops the callback unrun,
// and the stream's promises break (a server conversation waiting on its
// stream, the Pair's, is freed too: no leak under LeakSanitizer).
BOOST_AUTO_TEST_CASE(a_scheduler_destroyed_before_a_close_callback_ran_breaks_the_waits) {
    Future<void> closed;
    Stream kept;
    unsigned line = 0;
    {
        reactor::Scheduler sched(backend());
        Pair pair(sched);
        line = here(); closed = pair.client.wait_closed();
        kept = std::exchange(pair.client, Stream());
        kept.abort();  // closed now; the close callback is queued
        for (Stream& s : pair.accepted) s.abort();
    }
    BOOST_TEST(closed.cancelled());
    try {
        closed.result();
        BOOST_FAIL("a wait_closed() its loop's destruction ended returned");
    } catch (const BrokenPromise& e) {
        BOOST_TEST(contains(e.what(), "the wait for the stream to close created at "), e.what());
        BOOST_TEST(contains(e.what(), "test_promise.cpp:" + std::to_string(line)), e.what());
    }
}

BOOST_AUTO_TEST_CASE(a_scheduler_destroyed_with_a_process_wait_pending_breaks_it) {
    Future<int> exit;
    futures::Process cat;
    unsigned line = 0;
    {
        reactor::Scheduler sched(backend());
        futures::ProcessOptions options;
        options.stdin_mode = futures::Stdio::pipe;  // closed with the loop: cat sees EOF, a reaper thread reaps it
        options.stdout_mode = futures::Stdio::null;
        cat = futures::spawn_process(sched, {"/bin/cat"}, options);
        line = here(); exit = cat.wait();
    }
    BOOST_TEST(exit.cancelled());
    try {
        (void)exit.result();
        BOOST_FAIL("a wait() its loop's destruction ended returned");
    } catch (const BrokenPromise& e) {
        BOOST_TEST(contains(e.what(), "the process wait created at "), e.what());
        BOOST_TEST(contains(e.what(), "test_promise.cpp:" + std::to_string(line)), e.what());
    }
}

BOOST_AUTO_TEST_CASE(a_task_waiting_on_run_in_executor_names_the_call_line) {
    reactor::Scheduler sched(backend());
    Reports reports(sched);
    reactor::ThreadPool pool(1);
    std::promise<void> go;  // the job waits for it: it is still running while we look
    std::shared_future<void> gate = go.get_future().share();
    auto work = [gate] {
        gate.wait_for(20s);
        return 7;
    };
    const auto line = here(); Future<int> job = futures::run_in_executor(sched, pool, work);
    BOOST_TEST(job.origin().line() == line);
    Future<void> task = futures::spawn(sched, WaitOn<int>(job));
    BOOST_REQUIRE(run_until(sched, [&] { return task_waiting_on_line(sched, line).has_value(); }));
    check_names_this_line(sched, line);
    go.set_value();
    BOOST_REQUIRE(run_until(sched, [&] { return task.done(); }));
    BOOST_TEST((task.status() == futures::Status::done));
    BOOST_TEST(job.result() == 7);
    BOOST_TEST(!reports.any_never_retrieved());
}

BOOST_AUTO_TEST_CASE(open_connection_and_the_server_waits_name_the_caller_line) {
    reactor::Scheduler sched(backend());
    Reports reports(sched);
    Pair pair(sched);
    const reactor::Address address = pair.server.address();
    const auto connect_line = here(); auto connecting = futures::open_connection(sched, address);
    BOOST_TEST(connecting.origin().line() == connect_line);
    BOOST_TEST(ends_with(connecting.origin().file_name(), "test_promise.cpp"));
    const auto by_host_line = here(); auto by_host = futures::open_connection(sched, "127.0.0.1", address.port());
    BOOST_TEST(by_host.origin().line() == by_host_line);
    const auto closed_line = here(); Future<void> closed = pair.server.wait_closed();
    BOOST_TEST(closed.origin().line() == closed_line);
    Promise<void> stop(sched);
    const auto serve_line = here(); Future<void> served = pair.server.serve_until(stop.get_future(), 0ms);
    BOOST_TEST(served.origin().line() == serve_line);
    BOOST_REQUIRE(run_until(sched, [&] { return connecting.done() && by_host.done(); }));
    connecting.result().abort();
    by_host.result().abort();
    BOOST_TEST(stop.set_value());
    BOOST_REQUIRE(run_until(sched, [&] { return served.done() && closed.done(); }));
    BOOST_TEST((served.status() == futures::Status::done));
    BOOST_TEST((closed.status() == futures::Status::done));
    BOOST_TEST(!reports.any_never_retrieved());
}
