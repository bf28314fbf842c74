// SPDX-License-Identifier: MIT
// futures::next_signal with real signals sent to this process with kill():
// the wait completes with the signal's number, a wait keeps run_until_complete
// going, waits share the Scheduler's handler, cancelling (or close()) removes
// the handler and puts the disposition back, a chain on a dropped handle still
// runs, and bad input registers nothing. Every case leaves each signal's
// disposition as it found it (checked with sigaction) and the loop empty.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include <futures/futures.hpp>

#include "support/backends.hpp"
#include "support/futures_util.hpp"

namespace {

using namespace std::chrono_literals;
using futures::Future;
using reactor::Scheduler;
using reactor_test::backend_under_test;
using reactor_test::on;

// The handler installed for `signo` now (SIG_DFL, SIG_IGN or a function).
void (*handler_of(int signo))(int) {
    struct sigaction sa {};
    BOOST_REQUIRE(::sigaction(signo, nullptr, &sa) == 0);
    return sa.sa_handler;
}

void send(int signo) { BOOST_REQUIRE(::kill(::getpid(), signo) == 0); }

// Ignores `signo` for the life of the guard: a case that sends a signal nobody
// waits for any more must not kill the test program.
struct Ignored {
    explicit Ignored(int s) : signo(s) {
        struct sigaction sa {};
        sa.sa_handler = SIG_IGN;
        sigemptyset(&sa.sa_mask);
        BOOST_REQUIRE(::sigaction(signo, &sa, &old) == 0);
    }
    ~Ignored() { ::sigaction(signo, &old, nullptr); }
    int signo;
    struct sigaction old {};
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_signal_sent_before_the_loop_runs_completes_the_wait) {
    Scheduler sched(on(backend_under_test()));
    Future<int> stop = futures::next_signal(sched, {SIGINT, SIGTERM});
    BOOST_TEST(sched.signal_handler_count() == 2u);
    send(SIGTERM);
    BOOST_TEST(futures::run_until_complete(sched, stop) == SIGTERM);
    BOOST_TEST(sched.signal_handler_count() == 0u);  // nobody waits: the handlers are gone
    BOOST_TEST(handler_of(SIGINT) == SIG_DFL);
    BOOST_TEST(handler_of(SIGTERM) == SIG_DFL);
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_wait_keeps_the_loop_going_until_the_signal_comes) {
    Scheduler sched(on(backend_under_test()));
    Future<int> stop = futures::next_signal(sched, {SIGINT, SIGTERM});
    sched.call_later(5ms, [] { send(SIGINT); });
    // Nothing but the wait is left once the timer has fired: run_until_complete
    // must not give up ("ran out of work").
    BOOST_TEST(futures::run_until_complete(sched, stop) == SIGINT);
    BOOST_TEST(handler_of(SIGINT) == SIG_DFL);
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(every_wait_for_a_signal_gets_it_and_the_others_keep_waiting) {
    Scheduler sched(on(backend_under_test()));
    Future<int> a = futures::next_signal(sched, {SIGUSR1});
    Future<int> b = futures::next_signal(sched, {SIGUSR1, SIGUSR2});
    Future<int> c = futures::next_signal(sched, {SIGUSR2});
    BOOST_TEST(sched.signal_handler_count() == 2u);  // one handler per signal, shared
    send(SIGUSR1);
    futures::run_until(sched, b);
    BOOST_TEST(a.result() == SIGUSR1);
    BOOST_TEST(b.result() == SIGUSR1);
    BOOST_TEST(!c.done());
    BOOST_TEST(sched.signal_handler_count() == 1u);  // SIGUSR2's stays: c needs it
    BOOST_TEST(handler_of(SIGUSR1) == SIG_DFL);
    send(SIGUSR2);
    BOOST_TEST(futures::run_until_complete(sched, c) == SIGUSR2);
    BOOST_TEST(handler_of(SIGUSR2) == SIG_DFL);
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(cancelling_removes_the_handler_and_puts_the_disposition_back) {
    Ignored ignored(SIGUSR2);
    Scheduler sched(on(backend_under_test()));
    Future<int> wait = futures::next_signal(sched, {SIGUSR2});
    BOOST_TEST(handler_of(SIGUSR2) != SIG_IGN);
    BOOST_TEST(wait.cancel());
    BOOST_TEST(sched.signal_handler_count() == 0u);
    BOOST_TEST(handler_of(SIGUSR2) == SIG_IGN);  // what it replaced
    send(SIGUSR2);                               // ignored, as before the wait
    sched.run();
    BOOST_TEST(wait.cancelled());
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(cancelling_one_wait_leaves_the_handler_another_needs) {
    Scheduler sched(on(backend_under_test()));
    Future<int> first = futures::next_signal(sched, {SIGUSR1});
    Future<int> second = futures::next_signal(sched, {SIGUSR1});
    first.cancel();
    BOOST_TEST(sched.signal_handler_count() == 1u);
    send(SIGUSR1);
    BOOST_TEST(futures::run_until_complete(sched, second) == SIGUSR1);
    BOOST_TEST(first.cancelled());
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_chain_on_a_dropped_handle_still_runs) {
    Scheduler sched(on(backend_under_test()));
    Future<int> tenfold = futures::next_signal(sched, {SIGUSR1}).then([](int signo) { return signo * 10; });
    send(SIGUSR1);
    BOOST_TEST(futures::run_until_complete(sched, tenfold) == SIGUSR1 * 10);
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(cancelling_through_with_timeout) {
    Scheduler sched(on(backend_under_test()));
    Future<int> bounded = futures::with_timeout(futures::next_signal(sched, {SIGUSR1}), 5ms);
    futures::run_until(sched, bounded);
    BOOST_TEST(bounded.failed());
    BOOST_TEST(reactor_test::mentions(bounded.exception(), "gave up"));
    BOOST_TEST(sched.signal_handler_count() == 0u);
    BOOST_TEST(handler_of(SIGUSR1) == SIG_DFL);
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(close_cancels_a_pending_wait) {
    Scheduler sched(on(backend_under_test()));
    reactor_test::Reports reports(sched);
    Future<int> wait = futures::next_signal(sched, {SIGUSR1});
    BOOST_TEST(sched.close().size() == 1u);  // the wait, named by its line
    BOOST_TEST(wait.cancelled());
    BOOST_TEST(sched.signal_handler_count() == 0u);
    BOOST_TEST(handler_of(SIGUSR1) == SIG_DFL);
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_scheduler_destroyed_with_a_pending_wait_cancels_it) {
    Future<int> wait;
    {
        Scheduler sched(on(backend_under_test()));
        reactor_test::Reports reports(sched);
        wait = futures::next_signal(sched, {SIGUSR1});
    }
    BOOST_TEST(wait.cancelled());
    BOOST_TEST(handler_of(SIGUSR1) == SIG_DFL);
}

BOOST_AUTO_TEST_CASE(bad_input_registers_nothing) {
    Scheduler sched(on(backend_under_test()));
    BOOST_CHECK_THROW((void)futures::next_signal(sched, {}), std::invalid_argument);
    BOOST_CHECK_THROW((void)futures::next_signal(sched, {SIGUSR1, SIGKILL}), std::invalid_argument);
    BOOST_CHECK_THROW((void)futures::next_signal(sched, {0}), std::invalid_argument);
    BOOST_TEST(sched.signal_handler_count() == 0u);  // SIGUSR1's, added first, was taken back
    BOOST_TEST(handler_of(SIGUSR1) == SIG_DFL);
    {
        Scheduler other(on(backend_under_test()));
        Future<int> theirs = futures::next_signal(other, {SIGUSR2});
        BOOST_CHECK_THROW((void)futures::next_signal(sched, {SIGUSR2}), std::logic_error);
        theirs.cancel();
        other.run();
    }
    BOOST_TEST(sched.signal_handler_count() == 0u);
    CHECK_EMPTY(sched);
}
