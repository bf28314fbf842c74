// SPDX-License-Identifier: MIT
// Debug mode's wrong-thread check: a loop-thread-only member called from
// another thread while the loop runs is refused (std::logic_error, nothing
// changed) and reported through the exception handler on the loop thread;
// between runs the Scheduler may change threads. Real std::threads and a
// real clock (the loop blocks until the other thread's posts wake it).
// CTest runs the suite once per selector backend; CI also runs it under TSan.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <functional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/fds.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::ErrorContext;
using reactor::Scheduler;

// A debug-mode loop on the backend under test, its reports collected.
struct DebugLoop {
    DebugLoop() : sched([] {
        Scheduler::Options o = reactor_test::on(reactor_test::backend_under_test());
        o.debug = true;
        return o;
    }()) {
        sched.set_exception_handler([this](const ErrorContext& ctx) { reports.push_back(ctx); });
    }
    Scheduler sched;
    std::vector<ErrorContext> reports;
};

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(wrong_thread)

// The loop runs on this thread; another thread calls loop-thread-only
// members. Each call is refused before it changes anything, the caller gets
// std::logic_error, and one report per call reaches the handler on the loop
// thread. The loop blocks (its only timer is an hour away) until the
// worker's posts wake it.
BOOST_AUTO_TEST_CASE(calls_from_another_thread_are_refused_and_reported) {
    DebugLoop loop;
    reactor_test::Pipe pipe;
    bool reader_ran = false, refused_ran = false;
    loop.sched.add_reader(pipe.r.get(), [&] { reader_ran = true; });
    reactor::Handle timer = loop.sched.call_later(1h, [] {});
    std::vector<std::string> caught;  // written by the worker only, read after join
    unsigned call_soon_line = 0;
    std::thread worker;
    auto refused = [&] { refused_ran = true; };
    loop.sched.call_soon([&] {
        worker = std::thread([&] {
            std::vector<std::function<void()>> calls{
                [&] {
                    // clang-format off
                    call_soon_line = std::source_location::current().line(); loop.sched.call_soon(refused);
                    // clang-format on
                },
                [&] { loop.sched.call_later(1ms, refused); },
                [&] { loop.sched.call_every(1ms, refused, reactor::Periodic::fixed_delay); },
                [&] { loop.sched.add_reader(pipe.r.get(), refused); },
                [&] { loop.sched.write_wait(pipe.w.get(), refused); },
                [&] { loop.sched.remove_reader(pipe.r.get()); },
                [&] { timer.cancel(); },
                [&] { loop.sched.stop(); },
                [&] { loop.sched.run_once(); },
                [&] { loop.sched.run_for(1s); },
                [&] { loop.sched.set_exception_handler({}); },
            };
            for (auto& call : calls) {
                try {
                    call();
                    caught.push_back("not refused");
                } catch (const std::logic_error& e) {
                    caught.push_back(e.what());
                }
            }
            loop.sched.forget_fd(pipe.r.get());  // noexcept: refused without a throw
            loop.sched.call_soon_threadsafe([&] { loop.sched.stop(); });
        });
    });
    loop.sched.run_forever();
    worker.join();

    BOOST_REQUIRE_EQUAL(caught.size(), 11u);
    for (const std::string& what : caught) {
        BOOST_TEST(contains(what, "called from a thread other than the one running the loop: refused"), what);
    }
    BOOST_TEST(contains(caught[0], "reactor: call_soon called from"));
    BOOST_REQUIRE_EQUAL(loop.reports.size(), 12u);
    BOOST_TEST(loop.reports[0].origin_known);
    BOOST_TEST(loop.reports[0].origin.line() == call_soon_line);
    BOOST_TEST(contains(loop.reports.back().message, "forget_fd called from a thread other than"));
    BOOST_TEST(loop.sched.stats().wrong_thread_calls == 12u);

    // Nothing changed: the reader and the timer are still there, nothing refused ran.
    BOOST_TEST(!refused_ran);
    BOOST_TEST(timer.is_pending());
    BOOST_TEST(loop.sched.timer_count() == 1u);
    BOOST_TEST(loop.sched.waiter_count() == 1u);
    pipe.put();
    loop.sched.run_once();
    BOOST_TEST(reader_ran);
    BOOST_TEST(timer.cancel());
    BOOST_TEST(loop.sched.remove_reader(pipe.r.get()));
}

// Only a run under way has a loop thread: between runs, a Scheduler may be
// handed to another thread (here with join as the synchronisation).
BOOST_AUTO_TEST_CASE(between_runs_another_thread_may_use_it) {
    DebugLoop loop;
    int ran = 0;
    loop.sched.call_soon([&] { ++ran; });
    loop.sched.run();
    std::thread([&] {
        loop.sched.call_soon([&] { ++ran; });
        loop.sched.run();
    }).join();
    loop.sched.call_soon([&] { ++ran; });
    loop.sched.run();
    BOOST_TEST(ran == 3);
    BOOST_TEST(loop.reports.empty());
}

BOOST_AUTO_TEST_SUITE_END()
