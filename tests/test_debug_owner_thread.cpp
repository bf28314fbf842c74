// SPDX-License-Identifier: MIT
// Debug mode's check of the objects a loop owns (issue 24): a member of a
// Connection, a Listener, a Future or a Promise that acts, called from a
// thread other than the one running the object's loop, is refused
// (std::logic_error; a noexcept member just returns) and reported on that
// loop's exception handler, naming the caller's line when the member takes
// one, else the line that made the object. Without debug mode nothing is
// checked. Real threads; they meet through join and posts, never timing.
// The peer of the connection is a real AF_UNIX socketpair: a refused write
// leaves nothing in it. CTest runs the suite once per selector backend; CI
// also runs it under TSan.
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <functional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <futures/future.hpp>
#include <futures/promise.hpp>
#include <futures/then.hpp>
#include <reactor/net/address.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/fds.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::ErrorContext;
using reactor::Scheduler;

struct Loop {
    explicit Loop(bool debug) : sched([debug] {
        Scheduler::Options o = reactor_test::on(reactor_test::backend_under_test());
        o.debug = debug;
        return o;
    }()) {
        sched.set_exception_handler([this](const ErrorContext& ctx) { reports.push_back(ctx); });
    }
    Scheduler sched;
    std::vector<ErrorContext> reports;

    // Runs the loop on this thread while `calls` run one after the other on
    // another thread, which starts once the loop runs; the loop stops once
    // the other thread is done and what it posted (the reports) has run.
    // Each call's std::logic_error, if any, is kept (empty if none).
    std::vector<std::string> run_with_other_thread(std::vector<std::function<void()>> calls) {
        std::vector<std::string> caught(calls.size());
        std::thread worker;
        sched.call_soon([&] {
            worker = std::thread([&] {
                for (std::size_t i = 0; i < calls.size(); ++i) {
                    try {
                        calls[i]();
                    } catch (const std::logic_error& e) {
                        caught[i] = e.what();
                    }
                }
                sched.call_soon_threadsafe([this] { sched.stop(); });  // after the reports
            });
        });
        auto guard = sched.call_later(60s, [this] { sched.stop(); });
        sched.run_forever();
        worker.join();
        BOOST_REQUIRE(guard.is_pending());  // stopped by the worker, not by the guard
        guard.cancel();
        return caught;
    }
    // The same, with the loop thread blocked in a callback while the other
    // thread calls (so that, without debug mode, the calls do not race with
    // the loop), then running what was posted.
    std::vector<std::string> call_while_loop_waits(std::vector<std::function<void()>> calls) {
        std::vector<std::string> caught(calls.size());
        sched.call_soon([&] {
            std::thread worker([&] {
                for (std::size_t i = 0; i < calls.size(); ++i) {
                    try {
                        calls[i]();
                    } catch (const std::logic_error& e) {
                        caught[i] = e.what();
                    }
                }
            });
            worker.join();
            sched.call_soon_threadsafe([this] { sched.stop(); });  // after what the worker posted
        });
        auto guard = sched.call_later(60s, [this] { sched.stop(); });
        sched.run_forever();
        BOOST_REQUIRE(guard.is_pending());
        guard.cancel();
        return caught;
    }
};

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

std::string file_line(const char* file, unsigned line) { return fmt::format("{}:{}", file, line); }

// The report of `member` refused, naming `what` made at `made_line`, and
// coming from `origin_line` (both in this file).
void check_report(const ErrorContext& ctx, std::string_view member, std::string_view what, unsigned made_line,
                  unsigned origin_line) {
    BOOST_TEST_CONTEXT(ctx.message) {
        BOOST_TEST(contains(ctx.message, fmt::format("{} called from a thread other than the one running its loop "
                                                     "({} made at {}): refused",
                                                     member, what, file_line(__FILE__, made_line))));
        BOOST_TEST(ctx.origin_known);
        BOOST_TEST(std::string_view(ctx.origin.file_name()) == std::string_view(__FILE__));
        BOOST_TEST(ctx.origin.line() == origin_line);
        BOOST_TEST(!ctx.exception);
    }
}

// What the peer of a socketpair holds now ("" if nothing).
std::string peer_holds(int fd) {
    char buf[256];
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0) BOOST_TEST((errno == EAGAIN || errno == EWOULDBLOCK));
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

struct Pair {
    int ours = -1;
    reactor_test::Fd peer;
    Pair() {
        int fds[2];
        BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
        ours = fds[0];  // adopted by the Connection
        peer = reactor_test::Fd(fds[1]);
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(debug_owner_thread)

// While the loop runs on this thread, another thread calls every acting
// member of a connection: each is refused (write writes nothing), reported
// once on the loop's handler with the member's name and the line that made
// the connection. The connection still works from its own thread after.
BOOST_AUTO_TEST_CASE(a_connection_touched_from_another_thread_is_refused_and_reported) {
    Loop loop(true);
    Pair pair;
    // clang-format off
    const unsigned made_line = std::source_location::current().line(); auto conn = reactor::Connection::adopt(loop.sched, pair.ours);
    // clang-format on
    bool data_called = false;
    conn->set_data_callback([&](reactor::Connection&, std::string_view) { data_called = true; });
    using C = reactor::Connection;
    const std::vector<std::pair<const char*, std::function<void()>>> members{
        {"Connection::write", [&] { conn->write("refused"); }},
        {"Connection::write_eof", [&] { conn->write_eof(); }},
        {"Connection::close", [&] { conn->close(); }},
        {"Connection::close", [&] { conn->close(reactor::CloseKind::idle_timeout); }},
        {"Connection::abort", [&] { conn->abort(); }},
        {"Connection::pause_reading", [&] { conn->pause_reading(); }},
        {"Connection::resume_reading", [&] { conn->resume_reading(); }},
        {"Connection::set_data_callback", [&] { conn->set_data_callback({}); }},
        {"Connection::set_close_callback", [&] { conn->set_close_callback({}); }},
        {"Connection::set_eof_callback", [&] { conn->set_eof_callback([](C&) {}); }},
        {"Connection::set_drain_callback", [&] { conn->set_drain_callback([](C&) {}); }},
        {"Connection::set_high_water_callback", [&] { conn->set_high_water_callback([](C&) {}); }},
        {"Connection::set_protocol", [&] { conn->set_protocol(nullptr); }},
        {"Connection::set_low_water_callback", [&] { conn->set_low_water_callback([](C&) {}); }},
        {"Connection::set_water_marks", [&] { conn->set_water_marks(10, 5); }},
        {"Connection::set_read_timeout", [&] { conn->set_read_timeout(1h); }},
        {"Connection::set_write_timeout", [&] { conn->set_write_timeout(1h); }},
        {"Connection::set_idle_timeout", [&] { conn->set_idle_timeout(1h); }},
        {"Connection::set_no_delay", [&] { conn->set_no_delay(true); }},  // noexcept: reported, not thrown
    };
    std::vector<std::function<void()>> calls;
    for (const auto& m : members) calls.push_back(m.second);
    const std::vector<std::string> caught = loop.run_with_other_thread(calls);

    BOOST_REQUIRE(loop.reports.size() == members.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
        BOOST_TEST_CONTEXT(members[i].first) {
            check_report(loop.reports[i], members[i].first, "connection", made_line, made_line);
            if (i + 1 < members.size()) {
                BOOST_TEST(contains(caught[i], fmt::format("reactor: {} called from a thread other", members[i].first)));
                BOOST_TEST(contains(caught[i], file_line(__FILE__, made_line)));
            } else {
                BOOST_TEST(caught[i].empty());  // set_no_delay is noexcept
            }
        }
    }
    BOOST_TEST(loop.sched.stats().wrong_thread_calls == members.size());
    // Nothing was done: open, reading, the same marks, nothing sent.
    BOOST_TEST(conn->is_open());
    BOOST_TEST(conn->is_reading());
    BOOST_TEST(conn->high_water() == 64u * 1024u);
    BOOST_TEST(peer_holds(pair.peer.get()).empty());
    // From its own thread it works as ever.
    BOOST_TEST(conn->write("fine"));
    BOOST_TEST(peer_holds(pair.peer.get()) == "fine");
    BOOST_TEST(!data_called);
    conn->abort();
    loop.sched.close();
}

BOOST_AUTO_TEST_CASE(a_listener_touched_from_another_thread_is_refused_and_reported) {
    Loop loop(true);
    // clang-format off
    const unsigned made_line = std::source_location::current().line(); auto listener = reactor::Listener::listen(loop.sched, reactor::Address::parse("127.0.0.1:0"), [](const reactor::ConnectionPtr&) {});
    // clang-format on
    const std::vector<std::pair<const char*, std::function<void()>>> members{
        {"Listener::close", [&] { listener->close(); }},
        {"Listener::wait_closed", [&] { listener->wait_closed([] {}); }},
        {"Listener::set_error_callback",
         [&] { listener->set_error_callback([](reactor::Listener&, std::error_code, std::string_view) {}); }},
    };
    std::vector<std::function<void()>> calls;
    for (const auto& m : members) calls.push_back(m.second);
    const std::vector<std::string> caught = loop.run_with_other_thread(calls);
    BOOST_REQUIRE(loop.reports.size() == members.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
        BOOST_TEST_CONTEXT(members[i].first) {
            check_report(loop.reports[i], members[i].first, "listener", made_line, made_line);
            BOOST_TEST(contains(caught[i], members[i].first));
        }
    }
    BOOST_TEST(listener->is_listening());  // close() was refused
    listener->close();
    BOOST_TEST(!listener->is_listening());
    loop.sched.close();
}

// Future and Promise: a member that takes the caller's line
// (add_done_callback, then, catch_error, finally) is reported from it; the
// others (set_result, set_exception, cancel; the Promise's) name the line
// that made the future or promise. Nothing completes.
BOOST_AUTO_TEST_CASE(futures_and_promises_touched_from_another_thread_are_refused_and_reported) {
    Loop loop(true);
    // clang-format off
    const unsigned future_line = std::source_location::current().line(); futures::Future<int> f(loop.sched);
    const unsigned promise_line = std::source_location::current().line(); futures::Promise<int> p(loop.sched);
    // clang-format on
    unsigned callback_line = 0, then_line = 0, catch_line = 0, finally_line = 0;
    struct Expected {
        const char* member;
        const char* what;
        unsigned made;
        const unsigned* origin;  // read once the calls are made
    };
    const std::vector<Expected> expected{
        {"Future::set_result", "future", future_line, &future_line},
        {"Future::set_exception", "future", future_line, &future_line},
        {"Future::cancel", "future", future_line, &future_line},
        {"Future::add_done_callback", "future", future_line, &callback_line},
        {"Future::then", "future", future_line, &then_line},
        {"Future::catch_error", "future", future_line, &catch_line},
        {"Future::finally", "future", future_line, &finally_line},
        {"Promise::set_value", "promise", promise_line, &promise_line},
        {"Promise::set_exception", "promise", promise_line, &promise_line},
        {"Promise::cancel", "promise", promise_line, &promise_line},
    };
    const std::vector<std::function<void()>> calls{
        [&] { f.set_result(1); },
        [&] { f.set_exception(std::runtime_error("no")); },
        [&] { f.cancel(); },
        // clang-format off
        [&] { callback_line = std::source_location::current().line(); f.add_done_callback([] {}); },
        [&] { then_line = std::source_location::current().line(); (void)f.then([](int v) { return v; }); },
        [&] { catch_line = std::source_location::current().line(); (void)f.catch_error([](std::exception_ptr) { return 0; }); },
        [&] { finally_line = std::source_location::current().line(); (void)f.finally([] {}); },
        // clang-format on
        [&] { p.set_value(2); },
        [&] { p.set_exception(std::runtime_error("no")); },
        [&] { p.cancel(); },
    };
    const std::vector<std::string> caught = loop.run_with_other_thread(calls);
    BOOST_REQUIRE(loop.reports.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        BOOST_TEST_CONTEXT(expected[i].member) {
            check_report(loop.reports[i], expected[i].member, expected[i].what, expected[i].made, *expected[i].origin);
            BOOST_TEST(contains(caught[i], expected[i].member));
        }
    }
    // Nothing changed: both pending, the promise's future still to take.
    BOOST_TEST(!f.done());
    BOOST_TEST(p.is_pending());
    futures::Future<int> from_p = p.get_future();
    BOOST_TEST(p.set_value(3));
    f.set_result(4);
    loop.sched.run();
    BOOST_TEST(from_p.result() == 3);
    BOOST_TEST(f.result() == 4);
}

// Without debug mode nothing is checked: the calls act (the loop thread waits
// meanwhile, so they do not race with it) and nothing is reported.
BOOST_AUTO_TEST_CASE(without_debug_mode_nothing_is_checked) {
    Loop loop(false);
    Pair pair;
    auto conn = reactor::Connection::adopt(loop.sched, pair.ours);
    futures::Future<int> f(loop.sched);
    futures::Promise<int> p(loop.sched);
    futures::Future<int> from_p = p.get_future();
    bool written = false, set = false;  // Boost.Test is for this thread: the worker only records
    const std::vector<std::string> caught = loop.call_while_loop_waits({
        [&] { written = conn->write("sent"); },
        [&] { f.set_result(5); },
        [&] { set = p.set_value(6); },
    });
    BOOST_TEST(written);
    BOOST_TEST(set);
    for (const auto& c : caught) BOOST_TEST(c.empty());
    BOOST_TEST(loop.reports.empty());
    BOOST_TEST(loop.sched.stats().wrong_thread_calls == 0u);
    BOOST_TEST(peer_holds(pair.peer.get()) == "sent");
    BOOST_TEST(f.result() == 5);
    BOOST_TEST(from_p.result() == 6);
    conn->abort();
    loop.sched.close();
}

// The same calls in debug mode, the loop thread waiting in a callback (a run
// is under way, so the loop's thread is known): refused.
BOOST_AUTO_TEST_CASE(in_debug_mode_a_loop_busy_in_a_callback_still_refuses) {
    Loop loop(true);
    Pair pair;
    auto conn = reactor::Connection::adopt(loop.sched, pair.ours);
    futures::Future<int> f(loop.sched);
    const std::vector<std::string> caught = loop.call_while_loop_waits({
        [&] { conn->write("refused"); },
        [&] { f.set_result(5); },
    });
    BOOST_REQUIRE(loop.reports.size() == 2u);
    BOOST_TEST(contains(caught[0], "Connection::write"));
    BOOST_TEST(contains(caught[1], "Future::set_result"));
    BOOST_TEST(peer_holds(pair.peer.get()).empty());
    BOOST_TEST(!f.done());
    f.cancel();
    conn->abort();
    loop.sched.close();
}

// Between runs nobody runs the loop: no thread is wrong (the objects may be
// handed to another thread with the program's own synchronisation).
BOOST_AUTO_TEST_CASE(between_runs_any_thread_may_use_them) {
    Loop loop(true);
    Pair pair;
    auto conn = reactor::Connection::adopt(loop.sched, pair.ours);
    bool written = false;
    std::thread([&] { written = conn->write("between"); }).join();
    BOOST_TEST(written);
    BOOST_TEST(peer_holds(pair.peer.get()) == "between");
    BOOST_TEST(loop.sched.stats().wrong_thread_calls == 0u);  // nothing reported (nor posted)
    conn->abort();
    loop.sched.close();
}

BOOST_AUTO_TEST_SUITE_END()
