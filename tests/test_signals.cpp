// SPDX-License-Identifier: MIT
// Signal handlers on the loop (Scheduler::add_signal_handler): real signals,
// sent with raise() or pthread_kill() to this process, delivered as ordinary
// callbacks of the run phase. CTest runs the suite once per selector backend.
//
// Every case leaves each signal's disposition as it found it (checked with
// sigaction, never by letting a signal kill the process) and the loop empty.
// Deliveries are awaited with a bounded loop (reactor_test::run_until), so a lost
// signal fails the case instead of hanging it; nothing asserts on time.
#include <boost/test/unit_test.hpp>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/net_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::ErrorContext;
using reactor::RunStatus;
using reactor::Scheduler;
using reactor_test::backend_under_test;
using reactor_test::on;
using reactor::testing::VirtualLoop;

// The flags a program sets. The C library adds one of its own (SA_RESTORER,
// for its return trampoline) to whatever it installs, so a SIG_DFL put back
// through sigaction() reads differently from the one the process started with.
constexpr int kUserFlags = SA_NOCLDSTOP | SA_NOCLDWAIT | SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER | SA_RESETHAND;

// The current disposition of `signo` (its handler, SIG_DFL or SIG_IGN).
struct Disposition {
    void (*handler)(int);
    int flags;
    friend bool operator==(const Disposition&, const Disposition&) = default;
};
Disposition to_disposition(const struct sigaction& sa) { return Disposition{sa.sa_handler, sa.sa_flags & kUserFlags}; }
Disposition disposition(int signo) {
    struct sigaction sa {};
    BOOST_REQUIRE(::sigaction(signo, nullptr, &sa) == 0);
    return to_disposition(sa);
}
std::ostream& boost_test_print_type(std::ostream& os, const Disposition& d) {
    if (d.handler == SIG_DFL) return os << "SIG_DFL";
    if (d.handler == SIG_IGN) return os << "SIG_IGN";
    return os << "handler " << reinterpret_cast<void*>(d.handler) << " flags " << d.flags;
}

// Sets a disposition for the case and puts the original back at its end.
class ScopedDisposition {
public:
    ScopedDisposition(int signo, void (*handler)(int)) : signo_(signo) {
        struct sigaction sa {};
        sa.sa_handler = handler;
        sigemptyset(&sa.sa_mask);
        BOOST_REQUIRE(::sigaction(signo, &sa, &saved_) == 0);
    }
    ~ScopedDisposition() { ::sigaction(signo_, &saved_, nullptr); }
    ScopedDisposition(const ScopedDisposition&) = delete;
    ScopedDisposition& operator=(const ScopedDisposition&) = delete;

private:
    int signo_;
    struct sigaction saved_ {};
};

std::atomic<int> g_foreign_calls{0};
void foreign_handler(int) { ++g_foreign_calls; }

// Runs the loop until `done()`, for at most a generous real-time bound.
template <class Pred>
bool deliver(Scheduler& s, Pred done) {
    return reactor_test::run_until(s, done, 10s);
}

}  // namespace

BOOST_AUTO_TEST_CASE(suite_runs_on_the_backend_under_test) {
    Scheduler s(on(backend_under_test()));
    BOOST_TEST(s.selector().name() == reactor::to_string(backend_under_test()));
}

// What `kill -TERM <pid>` does to a server.
BOOST_AUTO_TEST_CASE(a_signal_runs_its_handler_on_the_loop_not_in_signal_context) {
    Scheduler s(on(backend_under_test()));
    const Disposition before = disposition(SIGTERM);
    int runs = 0;
    std::thread::id ran_on;
    s.add_signal_handler(SIGTERM, [&] {
        ++runs;
        ran_on = std::this_thread::get_id();
    });
    BOOST_TEST(s.signal_handler_count() == 1u);
    BOOST_TEST((disposition(SIGTERM).flags & SA_RESTART) != 0);  // other threads' calls are not cut short
    BOOST_REQUIRE(::kill(::getpid(), SIGTERM) == 0);
    BOOST_TEST(runs == 0);  // never inside kill(), whichever thread took the signal
    BOOST_TEST(deliver(s, [&] { return runs == 1; }));
    BOOST_TEST((ran_on == std::this_thread::get_id()));
    BOOST_TEST(s.remove_signal_handler(SIGTERM));
    BOOST_TEST(disposition(SIGTERM) == before);
    CHECK_EMPTY(s);
}

// The signal lands on a thread that is not the loop's, while the loop waits
// in its selector (or is about to): the eventfd wakes it on every backend.
BOOST_AUTO_TEST_CASE(a_signal_on_another_thread_wakes_the_waiting_loop) {
    Scheduler s(on(backend_under_test()));
    int runs = 0;
    s.add_signal_handler(SIGUSR2, [&] {
        ++runs;
        s.stop();
    });
    bool watchdog_fired = false;
    auto watchdog = s.call_later(10s, [&] {
        watchdog_fired = true;
        s.stop();
    });
    std::thread sender([] { ::pthread_kill(::pthread_self(), SIGUSR2); });
    s.run_forever();  // only the handler's stop() (or the watchdog) ends it
    sender.join();
    watchdog.cancel();
    BOOST_TEST(!watchdog_fired);
    BOOST_TEST(runs == 1);
    BOOST_TEST(s.remove_signal_handler(SIGUSR2));
    CHECK_EMPTY(s);
}

// Arrivals before the loop runs coalesce into one run, and run() delivers
// them though the handler alone is not work.
BOOST_AUTO_TEST_CASE(repeated_signals_before_the_loop_runs_coalesce_but_arrive) {
    Scheduler s(on(backend_under_test()));
    int runs = 0;
    s.add_signal_handler(SIGUSR1, [&] { ++runs; });
    for (int i = 0; i < 3; ++i) BOOST_REQUIRE(::raise(SIGUSR1) == 0);
    s.run();
    BOOST_TEST(runs == 1);
    BOOST_REQUIRE(::raise(SIGUSR1) == 0);
    s.run();
    BOOST_TEST(runs == 2);
    s.run();  // nothing new arrived: nothing runs
    BOOST_TEST(runs == 2);
    BOOST_TEST(s.remove_signal_handler(SIGUSR1));
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(several_signals_run_their_own_handlers_in_signal_number_order) {
    Scheduler s(on(backend_under_test()));
    std::vector<int> bag;
    for (int signo : {SIGUSR2, SIGHUP, SIGUSR1}) s.add_signal_handler(signo, [&bag, signo] { bag.push_back(signo); });
    BOOST_TEST(s.signal_handler_count() == 3u);
    for (int signo : {SIGUSR2, SIGUSR1, SIGHUP}) BOOST_REQUIRE(::raise(signo) == 0);
    s.run();
    BOOST_TEST(bag == (std::vector<int>{SIGHUP, SIGUSR1, SIGUSR2}), boost::test_tools::per_element());
    bag.clear();
    BOOST_REQUIRE(::raise(SIGUSR2) == 0);
    s.run();
    BOOST_TEST(bag == std::vector<int>{SIGUSR2}, boost::test_tools::per_element());
    for (int signo : {SIGUSR2, SIGHUP, SIGUSR1}) BOOST_TEST(s.remove_signal_handler(signo));
    BOOST_TEST(s.signal_handler_count() == 0u);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(registering_again_replaces_the_handler) {
    Scheduler s(on(backend_under_test()));
    auto first_capture = std::make_shared<int>(0);
    std::weak_ptr<int> first_alive = first_capture;
    std::vector<std::string> bag;
    s.add_signal_handler(SIGUSR1, [&bag, c = std::move(first_capture)] { bag.push_back("first"); });
    const Disposition installed = disposition(SIGUSR1);
    s.add_signal_handler(SIGUSR1, [&] { bag.push_back("second"); });
    BOOST_TEST(first_alive.expired());  // the replaced callback is released at once
    BOOST_TEST(s.signal_handler_count() == 1u);
    BOOST_TEST(disposition(SIGUSR1) == installed);
    BOOST_REQUIRE(::raise(SIGUSR1) == 0);
    s.run();
    BOOST_TEST(bag == std::vector<std::string>{"second"}, boost::test_tools::per_element());
    BOOST_TEST(s.remove_signal_handler(SIGUSR1));
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(removing_the_handler_restores_the_previous_disposition) {
    Scheduler s(on(backend_under_test()));
    // Default before: default after.
    BOOST_REQUIRE((disposition(SIGUSR1).handler == SIG_DFL));
    s.add_signal_handler(SIGUSR1, [] {});
    BOOST_TEST((disposition(SIGUSR1).handler != SIG_DFL));
    BOOST_TEST(s.remove_signal_handler(SIGUSR1));
    BOOST_TEST((disposition(SIGUSR1).handler == SIG_DFL));
    BOOST_TEST(!s.remove_signal_handler(SIGUSR1));  // nothing left to remove

    // Ignored before: ignored after.
    {
        ScopedDisposition ignored(SIGUSR2, SIG_IGN);
        s.add_signal_handler(SIGUSR2, [] {});
        BOOST_TEST((disposition(SIGUSR2).handler != SIG_IGN));
        BOOST_TEST(s.remove_signal_handler(SIGUSR2));
        BOOST_TEST((disposition(SIGUSR2).handler == SIG_IGN));
    }
    // Someone else's handler before: theirs again after, and it works.
    {
        ScopedDisposition foreign(SIGHUP, &foreign_handler);
        const Disposition before = disposition(SIGHUP);
        s.add_signal_handler(SIGHUP, [] {});
        BOOST_TEST(s.remove_signal_handler(SIGHUP));
        BOOST_TEST(disposition(SIGHUP) == before);
        const int calls = g_foreign_calls;
        BOOST_REQUIRE(::raise(SIGHUP) == 0);
        BOOST_TEST(g_foreign_calls == calls + 1);
    }
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(destroying_the_scheduler_restores_dispositions_and_drops_deliveries) {
    int runs = 0;
    auto capture = std::make_shared<int>(0);
    std::weak_ptr<int> alive = capture;
    {
        Scheduler s(on(backend_under_test()));
        s.add_signal_handler(SIGUSR1, [&runs, c = std::move(capture)] { ++runs; });
        s.add_signal_handler(SIGUSR2, [&runs] { ++runs; });
        BOOST_REQUIRE(::raise(SIGUSR1) == 0);  // pending, never run
    }
    BOOST_TEST(runs == 0);
    BOOST_TEST(alive.expired());
    BOOST_TEST((disposition(SIGUSR1).handler == SIG_DFL));
    BOOST_TEST((disposition(SIGUSR2).handler == SIG_DFL));
    // The signal is free for the next Scheduler, with no stale delivery.
    Scheduler next(on(backend_under_test()));
    next.add_signal_handler(SIGUSR1, [&runs] { ++runs; });
    next.run();
    BOOST_TEST(runs == 0);
    BOOST_TEST(next.remove_signal_handler(SIGUSR1));
    CHECK_EMPTY(next);
}

BOOST_AUTO_TEST_CASE(no_thread_signal_mask_is_changed) {
    sigset_t before, during, after;
    BOOST_REQUIRE(::pthread_sigmask(SIG_SETMASK, nullptr, &before) == 0);
    Scheduler s(on(backend_under_test()));
    s.add_signal_handler(SIGUSR1, [] {});
    BOOST_REQUIRE(::pthread_sigmask(SIG_SETMASK, nullptr, &during) == 0);
    BOOST_TEST(s.remove_signal_handler(SIGUSR1));
    BOOST_REQUIRE(::pthread_sigmask(SIG_SETMASK, nullptr, &after) == 0);
    for (int signo = 1; signo < NSIG; ++signo) {
        BOOST_TEST(sigismember(&during, signo) == sigismember(&before, signo), "signal " << signo);
        BOOST_TEST(sigismember(&after, signo) == sigismember(&before, signo), "signal " << signo);
    }
}

BOOST_AUTO_TEST_CASE(an_exception_in_a_handler_goes_to_the_exception_handler) {
    Scheduler s(on(backend_under_test()));
    std::vector<std::string> reports;
    s.set_exception_handler([&](const ErrorContext& ctx) { reports.push_back(reactor::describe(ctx)); });
    int runs = 0;
    const int line = __LINE__ + 1;
    s.add_signal_handler(SIGUSR1, [&] {
        ++runs;
        throw std::runtime_error("boom");
    });
    BOOST_REQUIRE(::raise(SIGUSR1) == 0);
    s.run();
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(reports[0].find("boom") != std::string::npos, reports[0]);
    BOOST_TEST(reports[0].find("test_signals.cpp:" + std::to_string(line)) != std::string::npos, reports[0]);
    // The handler stays registered and the loop carries on.
    BOOST_REQUIRE(::raise(SIGUSR1) == 0);
    s.run();
    BOOST_TEST(runs == 2);
    BOOST_TEST(reports.size() == 2u);
    BOOST_TEST(s.remove_signal_handler(SIGUSR1));
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(a_handler_may_remove_itself) {
    Scheduler s(on(backend_under_test()));
    int runs = 0;
    bool removed = false;
    s.add_signal_handler(SIGUSR1, [&] {
        ++runs;
        removed = s.remove_signal_handler(SIGUSR1);
    });
    BOOST_REQUIRE(::raise(SIGUSR1) == 0);
    s.run();
    BOOST_TEST(runs == 1);
    BOOST_TEST(removed);
    BOOST_TEST(s.signal_handler_count() == 0u);
    BOOST_TEST((disposition(SIGUSR1).handler == SIG_DFL));
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(removing_drops_a_delivery_not_yet_run) {
    Scheduler s(on(backend_under_test()));
    int runs = 0;
    s.add_signal_handler(SIGUSR1, [&] { ++runs; });
    BOOST_REQUIRE(::raise(SIGUSR1) == 0);
    BOOST_TEST(s.remove_signal_handler(SIGUSR1));
    s.run();
    BOOST_TEST(runs == 0);
    // Registered again, the old arrival does not come back.
    s.add_signal_handler(SIGUSR1, [&] { ++runs; });
    s.run();
    BOOST_TEST(runs == 0);
    BOOST_TEST(s.remove_signal_handler(SIGUSR1));
    CHECK_EMPTY(s);
}

// A server's run() ends once its listener and connections are gone, though
// its SIGINT handler is still registered.
BOOST_AUTO_TEST_CASE(a_handler_is_not_work) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    const auto t0 = loop.clock.now();
    s.add_signal_handler(SIGUSR1, [] {});
    BOOST_TEST(s.empty());
    s.run();
    BOOST_TEST((s.run_for(1h) == RunStatus::idle));
    BOOST_TEST((loop.clock.now() == t0));  // it did not wait
    BOOST_TEST(s.remove_signal_handler(SIGUSR1));
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(one_scheduler_owns_a_signal_at_a_time) {
    Scheduler first(on(backend_under_test()));
    Scheduler second(on(backend_under_test()));
    int first_runs = 0, second_runs = 0;
    first.add_signal_handler(SIGUSR1, [&] { ++first_runs; });
    const Disposition installed = disposition(SIGUSR1);
    try {
        second.add_signal_handler(SIGUSR1, [&] { ++second_runs; });
        BOOST_FAIL("a second Scheduler took SIGUSR1");
    } catch (const std::logic_error& e) {
        BOOST_TEST(std::string(e.what()).find("SIGUSR1") != std::string::npos, e.what());
        BOOST_TEST(std::string(e.what()).find("another Scheduler") != std::string::npos, e.what());
    }
    BOOST_TEST(second.signal_handler_count() == 0u);
    BOOST_TEST(disposition(SIGUSR1) == installed);
    BOOST_TEST(!second.remove_signal_handler(SIGUSR1));  // not second's to remove
    BOOST_TEST(disposition(SIGUSR1) == installed);
    // Other signals are free, and the first still gets its own.
    second.add_signal_handler(SIGUSR2, [&] { ++second_runs; });
    BOOST_REQUIRE(::raise(SIGUSR1) == 0);
    BOOST_REQUIRE(::raise(SIGUSR2) == 0);
    BOOST_TEST(deliver(first, [&] { return first_runs == 1; }));
    BOOST_TEST(deliver(second, [&] { return second_runs == 1; }));
    // Released by the first, SIGUSR1 may move.
    BOOST_TEST(first.remove_signal_handler(SIGUSR1));
    second.add_signal_handler(SIGUSR1, [&] { ++second_runs; });
    BOOST_REQUIRE(::raise(SIGUSR1) == 0);
    BOOST_TEST(deliver(second, [&] { return second_runs == 2; }));
    BOOST_TEST(first_runs == 1);
    BOOST_TEST(second.remove_signal_handler(SIGUSR1));
    BOOST_TEST(second.remove_signal_handler(SIGUSR2));
    CHECK_EMPTY(first);
    CHECK_EMPTY(second);
}

BOOST_AUTO_TEST_CASE(bad_input_throws_invalid_argument_and_changes_nothing) {
    Scheduler s(on(backend_under_test()));
    // The disposition, where the C library lets anyone see it.
    auto query = [](int signo) -> std::optional<Disposition> {
        struct sigaction sa {};
        if (::sigaction(signo, nullptr, &sa) != 0) return std::nullopt;
        return to_disposition(sa);
    };
    auto expect_refused = [&](int signo, const char* words) {
        const std::optional<Disposition> before = query(signo);
        try {
            s.add_signal_handler(signo, [] {});
            BOOST_ERROR("signal " << signo << " was accepted");
        } catch (const std::invalid_argument& e) {
            BOOST_TEST(std::string(e.what()).find(words) != std::string::npos, e.what());
        }
        BOOST_TEST((query(signo) == before), "signal " << signo);
        BOOST_TEST(s.signal_handler_count() == 0u);
    };
    for (int signo : {0, -1, NSIG, 1000}) {
        expect_refused(signo, "not a signal number");
        BOOST_CHECK_THROW(s.remove_signal_handler(signo), std::invalid_argument);
    }
    expect_refused(SIGKILL, "SIGKILL");
    expect_refused(SIGSTOP, "cannot be caught");
    for (int signo : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) expect_refused(signo, "fault");
    // The C library keeps the numbers below SIGRTMIN (if any) for itself.
    for (int signo = 32; signo < SIGRTMIN; ++signo) expect_refused(signo, "Invalid argument");
    BOOST_CHECK_THROW(s.add_signal_handler(SIGUSR1, reactor::Callback{}), std::invalid_argument);
    BOOST_TEST((disposition(SIGUSR1).handler == SIG_DFL));
    BOOST_TEST(!s.remove_signal_handler(SIGKILL));  // a valid number with no handler
    BOOST_TEST(s.signal_handler_count() == 0u);
    CHECK_EMPTY(s);
}
