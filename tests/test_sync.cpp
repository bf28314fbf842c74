// SPDX-License-Identifier: MIT
// futures::Event, Semaphore (with its Permit) and Lock: FIFO fairness, a
// cancelled or dropped waiter never taking a permit or the lock, a permit
// handed to a waiter that lets it go unread passing on to the next waiter,
// tasks coordinating through them on a virtual clock, bad input, and their end
// with waiters still parked.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/event.hpp>
#include <futures/futures.hpp>
#include <futures/lock.hpp>
#include <futures/semaphore.hpp>

#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::Event;
using futures::Future;
using futures::Lock;
using futures::Permit;
using futures::Semaphore;
using futures::Step;
using reactor_test::error_of;
using reactor_test::mentions;
using reactor_test::what;
using Log = std::vector<std::string>;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;


// Takes a permit (from a Semaphore or a Lock), holds it for 1 s of work, lets go.
template <class Primitive>
class Worker {
public:
    Worker(reactor::Scheduler& sched, Primitive& p, std::string name, Log& log, int& inside, int& most)
        : sched_(&sched), p_(&p), name_(std::move(name)), log_(&log), inside_(&inside), most_(&most) {}
    Step<void> resume() {
        switch (state_) {
        case State::start:
            state_ = State::acquired;
            return acquire_ = p_->acquire();
        case State::acquired:
            permit_ = std::move(acquire_.result());
            log_->push_back(name_ + " in");
            *most_ = std::max(*most_, ++*inside_);
            state_ = State::worked;
            return work_ = futures::sleep(*sched_, 1s);
        case State::worked:
            log_->push_back(name_ + " out");
            --*inside_;
            permit_.release();
            return futures::finished;
        }
        throw std::logic_error("unreachable");
    }

private:
    enum class State { start, acquired, worked };
    reactor::Scheduler* sched_;
    Primitive* p_;
    std::string name_;
    Log* log_;
    int* inside_;
    int* most_;
    State state_ = State::start;
    Future<Permit> acquire_;
    Permit permit_;
    Future<void> work_;
};

// Waits for the event, then logs.
class EventWaiter {
public:
    EventWaiter(Event& e, std::string name, Log& log) : e_(&e), name_(std::move(name)), log_(&log) {}
    Step<void> resume() {
        if (wait_.valid()) {
            wait_.result();
            log_->push_back(name_ + " woke");
            return futures::finished;
        }
        return wait_ = e_->wait();
    }

private:
    Event* e_;
    std::string name_;
    Log* log_;
    Future<void> wait_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(event)

BOOST_AUTO_TEST_CASE(set_wakes_every_waiter_in_order_and_stays_set_until_cleared) {
    VirtualLoop loop(backend_under_test());
    Event e(loop.sched);
    Log log;
    auto a = futures::spawn(loop.sched, EventWaiter(e, "a", log));
    auto b = futures::spawn(loop.sched, EventWaiter(e, "b", log));
    loop.sched.run_once();
    BOOST_TEST(e.waiting() == 2u);
    BOOST_TEST(!e.is_set());
    loop.sched.call_later(1s, [&] { e.set(); });
    loop.sched.run();
    BOOST_TEST(log == (Log{"a woke", "b woke"}));
    BOOST_TEST(e.is_set());
    BOOST_TEST(e.wait().done());  // set: no waiting
    e.set();                      // again: nothing changes
    e.clear();
    Future<void> later = e.wait();
    BOOST_TEST(!later.done());
    e.set();
    BOOST_TEST(later.done());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_cancelled_or_dropped_wait_is_forgotten) {
    VirtualLoop loop(backend_under_test());
    Event e(loop.sched);
    Future<void> cancelled = e.wait();
    (void)e.wait();  // dropped at once
    Future<void> kept = e.wait();
    BOOST_TEST(e.waiting() == 2u);
    BOOST_TEST(cancelled.cancel());
    BOOST_TEST(e.waiting() == 1u);
    e.set();
    BOOST_TEST(cancelled.cancelled());
    BOOST_TEST(kept.done());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(destroying_the_event_cancels_its_waiters_saying_so) {
    VirtualLoop loop(backend_under_test());
    Future<void> w;
    {
        Event e(loop.sched);
        w = e.wait();
    }
    BOOST_REQUIRE(w.cancelled());
    BOOST_TEST(mentions(error_of(w), "the Event created at"));
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(semaphore)

BOOST_AUTO_TEST_CASE(no_permits_is_refused) {
    VirtualLoop loop(backend_under_test());
    BOOST_CHECK_EXCEPTION(Semaphore(loop.sched, 0), std::invalid_argument, [](const std::invalid_argument& e) {
        return std::string(e.what()).find("at least 1 permit") != std::string::npos;
    });
}

BOOST_AUTO_TEST_CASE(permits_are_handed_out_then_waited_for_in_fifo_order) {
    VirtualLoop loop(backend_under_test());
    Semaphore sem(loop.sched, 2);
    Future<Permit> a = sem.acquire(), b = sem.acquire();
    BOOST_TEST(a.done());
    BOOST_TEST(b.done());
    BOOST_TEST(sem.locked());
    BOOST_TEST(!sem.try_acquire().has_value());
    Future<Permit> c = sem.acquire(), d = sem.acquire();
    BOOST_TEST(sem.waiting() == 2u);
    a.result().release();
    BOOST_TEST(c.done());  // handed straight to the first waiter
    BOOST_TEST(!d.done());
    BOOST_TEST(sem.available() == 0u);
    Permit from_b = std::move(b.result());
    from_b = std::move(c.result());  // assigning releases the permit it held: d gets it
    BOOST_TEST(d.done());
    from_b.release();
    from_b.release();  // idempotent
    BOOST_TEST(!from_b.held());
    BOOST_TEST(sem.available() == 1u);
    d = {};  // its permit, never read, goes back with it
    BOOST_TEST(sem.available() == 2u);
    BOOST_TEST(sem.permits() == 2u);
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_cancelled_waiter_never_takes_a_permit) {
    VirtualLoop loop(backend_under_test());
    Semaphore sem(loop.sched, 1);
    std::optional<Permit> held = sem.try_acquire();
    BOOST_REQUIRE(held.has_value());
    Future<Permit> first = sem.acquire(), second = sem.acquire();
    BOOST_TEST(first.cancel());
    BOOST_TEST(sem.waiting() == 1u);
    held.reset();
    BOOST_TEST(first.cancelled());
    BOOST_TEST(second.result().held());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_permit_handed_to_a_waiter_that_lets_it_go_unread_goes_to_the_next) {
    VirtualLoop loop(backend_under_test());
    Semaphore sem(loop.sched, 1);
    std::optional<Permit> held = sem.try_acquire();
    // The permit comes back at 1 s, in the same batch of timers as the
    // timeout: the first waiter gets it, but with_timeout has already given
    // up and nobody will read it. It must reach the second waiter.
    loop.sched.call_later(1s, [&] { held.reset(); });
    Future<Permit> bounded = futures::with_timeout(sem.acquire(), 1s);
    Future<Permit> patient = sem.acquire();
    BOOST_REQUIRE(futures::run_until(loop.sched, patient, 10s));
    BOOST_TEST(bounded.failed());
    BOOST_CHECK_THROW(bounded.result(), futures::TimeoutError);
    BOOST_TEST(patient.result().held());
    patient = {};
    BOOST_TEST(sem.available() == 1u);
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(tasks_never_exceed_the_permits_and_enter_in_order) {
    VirtualLoop loop(backend_under_test());
    Semaphore sem(loop.sched, 2);
    Log log;
    int inside = 0, most = 0;
    std::vector<Future<void>> workers;
    for (const char* name : {"a", "b", "c", "d", "e"})
        workers.push_back(futures::spawn(loop.sched, Worker<Semaphore>(loop.sched, sem, name, log, inside, most)));
    const auto start = loop.clock.now();
    BOOST_REQUIRE(futures::run_until(loop.sched, futures::when_all(workers), 1min));
    BOOST_TEST(most == 2);
    BOOST_TEST((loop.clock.now() - start == 3s));
    BOOST_TEST(log == (Log{"a in", "b in", "a out", "b out", "c in", "d in", "c out", "d out", "e in", "e out"}),
               boost::test_tools::per_element());
    BOOST_TEST(sem.available() == 2u);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_permit_may_outlive_its_semaphore) {
    VirtualLoop loop(backend_under_test());
    std::optional<Permit> permit;
    Future<Permit> waiter;
    {
        Semaphore sem(loop.sched, 1);
        permit = sem.try_acquire();
        waiter = sem.acquire();
    }
    BOOST_TEST(waiter.cancelled());
    BOOST_TEST(mentions(error_of(waiter), "the Semaphore created at"));
    BOOST_TEST(permit->held());
    permit.reset();  // gives back to nobody
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(lock)

BOOST_AUTO_TEST_CASE(tasks_hold_the_lock_one_at_a_time_in_order) {
    VirtualLoop loop(backend_under_test());
    Lock lock(loop.sched);
    Log log;
    int inside = 0, most = 0;
    std::vector<Future<void>> workers;
    for (const char* name : {"a", "b", "c"})
        workers.push_back(futures::spawn(loop.sched, Worker<Lock>(loop.sched, lock, name, log, inside, most)));
    BOOST_REQUIRE(futures::run_until(loop.sched, futures::when_all(workers), 1min));
    BOOST_TEST(most == 1);
    BOOST_TEST(log == (Log{"a in", "a out", "b in", "b out", "c in", "c out"}), boost::test_tools::per_element());
    BOOST_TEST(!lock.locked());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(try_acquire_and_a_cancelled_wait) {
    VirtualLoop loop(backend_under_test());
    Lock lock(loop.sched);
    std::optional<Permit> hold = lock.try_acquire();
    BOOST_REQUIRE(hold.has_value());
    BOOST_TEST(lock.locked());
    BOOST_TEST(!lock.try_acquire().has_value());
    Future<Permit> gave_up = lock.acquire();
    Future<Permit> next = lock.acquire();
    BOOST_TEST(lock.waiting() == 2u);
    gave_up.cancel();
    hold->release();
    Future<Permit> orphan;
    std::optional<Permit> outlives;
    {
        Lock gone(loop.sched);
        outlives = gone.try_acquire();
        orphan = gone.acquire();
    }
    BOOST_TEST(orphan.cancelled());
    BOOST_TEST(mentions(error_of(orphan), "the Lock created at"));
    outlives.reset();
    BOOST_TEST(next.done());
    BOOST_TEST(lock.locked());
    next = {};
    BOOST_TEST(!lock.locked());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_scheduler_destroyed_first_releases_the_tasks_waiting_for_the_lock) {
    // The task holds the lock (shared) and waits for it: without the
    // Scheduler's end cancelling the wait, this cycle leaks (ASan).
    struct Waiting {
        std::shared_ptr<Lock> lock;
        std::shared_ptr<int> alive;
        Future<Permit> acquire;
        Step<void> resume() {
            if (acquire.valid()) return futures::finished;
            return acquire = lock->acquire();
        }
    };
    auto alive = std::make_shared<int>(0);
    std::optional<Permit> hold;
    {
        VirtualLoop loop(backend_under_test());
        auto lock = std::make_shared<Lock>(loop.sched);
        hold = lock->try_acquire();
        (void)futures::spawn(loop.sched, Waiting{lock, alive, {}});
        loop.sched.run_once();
        BOOST_TEST(alive.use_count() == 2);
    }
    BOOST_TEST(alive.use_count() == 1);  // the machine was destroyed with the loop
    hold.reset();
}

BOOST_AUTO_TEST_SUITE_END()
