// SPDX-License-Identifier: MIT
// futures::Queue: FIFO order, fairness among waiting getters and putters,
// cancelled or dropped waiters never taking (or adding) an item, back-pressure
// of a bounded queue between tasks on a virtual clock, close(), bad input, and
// the end of a queue or of its Scheduler with waiters still parked.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/futures.hpp>
#include <futures/queue.hpp>

#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::CancelledError;
using futures::Future;
using futures::Queue;
using futures::QueueClosed;
using futures::Step;
using reactor_test::Tracked;
using reactor_test::error_of;
using reactor_test::mentions;
using reactor_test::what;
using Log = std::vector<std::string>;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;



// Puts 1..n, logging "put i @s" as each put completes, s the seconds since it started.
class Producer {
public:
    Producer(VirtualLoop& loop, Queue<int>& q, int n, Log& log)
        : loop_(&loop), q_(&q), n_(n), log_(&log), start_(loop.clock.now()) {}
    Step<void> resume() {
        if (i_ > 0) {
            put_.result();
            log_->push_back("put " + std::to_string(i_) + " @" + std::to_string((loop_->clock.now() - start_) / 1s));
        }
        if (i_ == n_) return futures::finished;
        ++i_;
        return put_ = q_->put(i_);
    }

private:
    VirtualLoop* loop_;
    Queue<int>* q_;
    int n_;
    Log* log_;
    reactor::TimePoint start_;
    int i_ = 0;
    Future<void> put_;
};

// Gets n items, taking 1 s over each, logging "got i" when it gets one.
class SlowConsumer {
public:
    SlowConsumer(VirtualLoop& loop, Queue<int>& q, int n, Log& log)
        : loop_(&loop), q_(&q), n_(n), log_(&log) {}
    Step<int> resume() {
        switch (state_) {
        case State::getting:
            state_ = State::got;
            return get_ = q_->get();
        case State::got:
            log_->push_back("got " + std::to_string(get_.result()));
            sum_ += get_.result();
            state_ = State::working;
            return work_ = futures::sleep(loop_->sched, 1s);
        case State::working:
            if (++seen_ == n_) return sum_;
            state_ = State::got;
            return get_ = q_->get();
        }
        throw std::logic_error("unreachable");
    }

private:
    enum class State { getting, got, working };
    VirtualLoop* loop_;
    Queue<int>* q_;
    int n_;
    Log* log_;
    State state_ = State::getting;
    Future<int> get_;
    Future<void> work_;
    int seen_ = 0;
    int sum_ = 0;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(order)

BOOST_AUTO_TEST_CASE(unbounded_queue_keeps_fifo_order_and_never_blocks_a_put) {
    VirtualLoop loop(backend_under_test());
    Queue<int> q(loop.sched);
    BOOST_TEST(!q.bounded());
    std::vector<Future<void>> puts;
    for (int i = 0; i < 1000; ++i) puts.push_back(q.put(i));
    for (auto& p : puts) BOOST_TEST(p.done());
    BOOST_TEST(q.size() == 1000u);
    BOOST_TEST(!q.full());
    for (int i = 0; i < 1000; ++i) {
        Future<int> g = q.get();
        BOOST_REQUIRE(g.done());
        BOOST_TEST(g.result() == i);
    }
    BOOST_TEST(!q.try_get().has_value());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(waiting_getters_are_served_in_the_order_they_came) {
    VirtualLoop loop(backend_under_test());
    Queue<std::string> q(loop.sched);
    Future<std::string> a = q.get(), b = q.get(), c = q.get();
    BOOST_TEST(q.waiting_getters() == 3u);
    int callbacks = 0;
    a.add_done_callback([&] { ++callbacks; });
    BOOST_TEST(q.try_put("one"));
    (void)q.put("two");
    (void)q.put("three");
    BOOST_TEST(a.result() == "one");  // handed over at once...
    BOOST_TEST(callbacks == 0);       // ...but its callbacks run from the loop
    BOOST_TEST(b.result() == "two");
    BOOST_TEST(c.result() == "three");
    BOOST_TEST(q.empty());  // the items went to the getters, not into the queue
    loop.sched.run();
    BOOST_TEST(callbacks == 1);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(move_only_items) {
    VirtualLoop loop(backend_under_test());
    Queue<std::unique_ptr<int>> q(loop.sched, 1);
    Future<std::unique_ptr<int>> g = q.get();
    (void)q.put(std::make_unique<int>(1));
    (void)q.put(std::make_unique<int>(2));
    Future<void> blocked = q.put(std::make_unique<int>(3));
    BOOST_TEST(*g.result() == 1);
    BOOST_TEST(!blocked.done());
    BOOST_TEST(**q.try_get() == 2);
    BOOST_TEST(blocked.done());
    BOOST_TEST(*q.get().result() == 3);
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(bounded)

BOOST_AUTO_TEST_CASE(a_full_queue_parks_putters_and_admits_them_in_order) {
    VirtualLoop loop(backend_under_test());
    Queue<int> q(loop.sched, 2);
    BOOST_TEST(q.bounded());
    BOOST_TEST(q.capacity() == 2u);
    BOOST_TEST(q.put(1).done());
    BOOST_TEST(q.put(2).done());
    BOOST_TEST(q.full());
    BOOST_TEST(!q.try_put(99));
    Future<void> p3 = q.put(3), p4 = q.put(4);
    BOOST_TEST(!p3.done());
    BOOST_TEST(q.waiting_putters() == 2u);
    BOOST_TEST(q.get().result() == 1);
    BOOST_TEST(p3.done());  // room made: the first putter is in
    BOOST_TEST(!p4.done());
    BOOST_TEST(q.size() == 2u);
    BOOST_TEST(q.get().result() == 2);
    BOOST_TEST(p4.done());
    BOOST_TEST(q.get().result() == 3);
    BOOST_TEST(q.get().result() == 4);
    BOOST_TEST(q.empty());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_slow_consumer_throttles_the_producer) {
    VirtualLoop loop(backend_under_test());
    Queue<int> q(loop.sched, 2);
    Log log;
    Future<void> producer = futures::spawn(loop.sched, Producer(loop, q, 5, log));
    Future<int> consumer = futures::spawn(loop.sched, SlowConsumer(loop, q, 5, log));
    BOOST_REQUIRE(futures::run_until(loop.sched, consumer, 1min));
    BOOST_TEST(consumer.result() == 15);
    BOOST_TEST(producer.done());
    // Puts 1-3 go through at once (the consumer took item 1 straight away,
    // 2 and 3 fill the queue); from then on each put waits for the consumer
    // to take an item, which it does once a second.
    BOOST_TEST(log == (Log{"put 1 @0", "got 1", "put 2 @0", "put 3 @0", "put 4 @1", "got 2", "put 5 @2", "got 3",
                           "got 4", "got 5"}),
               boost::test_tools::per_element());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cancellation)

BOOST_AUTO_TEST_CASE(a_cancelled_getter_never_takes_an_item) {
    VirtualLoop loop(backend_under_test());
    Queue<int> q(loop.sched);
    Future<int> first = q.get(), second = q.get();
    BOOST_TEST(first.cancel());
    BOOST_TEST(q.waiting_getters() == 1u);
    (void)q.put(7);
    BOOST_TEST(first.cancelled());
    BOOST_TEST(second.result() == 7);
    BOOST_TEST(!first.cancel());  // complete: nothing changes
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_getter_whose_handles_were_all_dropped_never_takes_an_item) {
    VirtualLoop loop(backend_under_test());
    Queue<int> q(loop.sched);
    (void)q.get();  // nobody could ever read what it got
    BOOST_TEST(q.waiting_getters() == 0u);
    (void)q.put(5);
    BOOST_TEST(q.size() == 1u);
    BOOST_TEST(*q.try_get() == 5);
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_a_task_waiting_in_get_leaves_the_item_to_the_next_getter) {
    VirtualLoop loop(backend_under_test());
    Queue<int> q(loop.sched);
    Log log;
    Future<int> a = futures::spawn(loop.sched, SlowConsumer(loop, q, 1, log));
    Future<int> b = futures::spawn(loop.sched, SlowConsumer(loop, q, 1, log));
    loop.sched.run_once();  // both parked in get()
    BOOST_TEST(q.waiting_getters() == 2u);
    BOOST_TEST(a.cancel());
    (void)q.put(3);
    BOOST_REQUIRE(futures::run_until(loop.sched, b, 10s));
    BOOST_TEST(a.cancelled());
    BOOST_TEST(b.result() == 3);
    BOOST_TEST(log == Log{"got 3"});
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_cancelled_putter_never_adds_its_item) {
    VirtualLoop loop(backend_under_test());
    Queue<int> q(loop.sched, 1);
    (void)q.put(1);
    Future<void> p2 = q.put(2), p3 = q.put(3);
    BOOST_TEST(p2.cancel());
    BOOST_TEST(q.waiting_putters() == 1u);
    BOOST_TEST(q.get().result() == 1);
    BOOST_TEST(p3.done());
    BOOST_TEST(q.get().result() == 3);
    BOOST_TEST(q.empty());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_dropped_putter_destroys_its_item_and_never_adds_it) {
    VirtualLoop loop(backend_under_test());
    const long live = Tracked::live;
    {
        Queue<Tracked> q(loop.sched, 1);
        (void)q.put(Tracked{});
        (void)q.put(Tracked{});  // parked, then dropped: withdrawn
        BOOST_TEST(Tracked::live == live + 1);
        BOOST_TEST(q.waiting_putters() == 0u);
        BOOST_TEST(q.get().done());
        BOOST_TEST(q.empty());
        loop.sched.run();
    }
    BOOST_TEST(Tracked::live == live);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(closing)

BOOST_AUTO_TEST_CASE(close_wakes_every_waiter_with_queue_closed) {
    VirtualLoop loop(backend_under_test());
    Queue<int> empty(loop.sched);
    Future<int> g1 = empty.get(), g2 = empty.get();
    empty.close();
    for (auto* g : {&g1, &g2}) {
        BOOST_REQUIRE(g->failed());
        BOOST_CHECK_THROW(g->result(), QueueClosed);
        BOOST_TEST(mentions(g->exception(), "get: the Queue created at"));
        BOOST_TEST(mentions(g->exception(), "is closed"));
    }
    Queue<int> full(loop.sched, 1);
    (void)full.put(1);
    Future<void> p = full.put(2);
    full.close();
    BOOST_CHECK_THROW(p.result(), QueueClosed);
    BOOST_TEST(full.waiting_putters() == 0u);
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_closed_queue_refuses_puts_and_drains_then_fails_gets) {
    VirtualLoop loop(backend_under_test());
    Queue<int> q(loop.sched);
    (void)q.put(1);
    (void)q.put(2);
    q.close();
    q.close();  // idempotent
    BOOST_TEST(q.is_closed());
    Future<void> late = q.put(3);
    BOOST_CHECK_THROW(late.result(), QueueClosed);
    BOOST_TEST(mentions(late.exception(), "put: the Queue created at"));
    BOOST_CHECK_THROW(q.try_put(4), QueueClosed);
    BOOST_TEST(q.get().result() == 1);
    BOOST_TEST(*q.try_get() == 2);
    BOOST_CHECK_THROW(q.get().result(), QueueClosed);
    BOOST_CHECK_THROW(q.try_get(), QueueClosed);
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_capacity_of_zero_is_refused) {
    VirtualLoop loop(backend_under_test());
    BOOST_CHECK_EXCEPTION(Queue<int>(loop.sched, 0), std::invalid_argument, [](const std::invalid_argument& e) {
        return std::string(e.what()).find("use Queue(sched) for an unbounded queue") != std::string::npos;
    });
}

BOOST_AUTO_TEST_CASE(destroying_the_queue_cancels_its_waiters_saying_so) {
    VirtualLoop loop(backend_under_test());
    Future<int> g;
    {
        Queue<int> q(loop.sched);
        g = q.get();
    }
    BOOST_REQUIRE(g.cancelled());
    BOOST_TEST(mentions(error_of(g), "the Queue created at"));
    BOOST_TEST(mentions(error_of(g), "was destroyed"));
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_scheduler_destroyed_first_releases_the_tasks_waiting_on_its_queues) {
    // The consumer task holds the queue (shared) and waits in get(): a cycle
    // of task, get future and queue that only the Scheduler's end can break.
    // Under ASan this case fails with a leak if it is not broken.
    const long live = Tracked::live;
    struct Holder {
        std::shared_ptr<Queue<int>> q;
        Tracked tracked;
        Future<int> get;
        Step<int> resume() {
            if (get.valid()) return get.result();
            return get = q->get();
        }
    };
    {
        VirtualLoop loop(backend_under_test());
        auto q = std::make_shared<Queue<int>>(loop.sched);
        (void)futures::spawn(loop.sched, Holder{q, {}, {}});
        q.reset();
        loop.sched.run_once();
        BOOST_TEST(Tracked::live == live + 1);
    }
    BOOST_TEST(Tracked::live == live);
}

BOOST_AUTO_TEST_SUITE_END()
