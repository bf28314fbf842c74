// SPDX-License-Identifier: MIT
// docs/toolkit.md: the task toolkit (Queue, Event, Semaphore, Lock), the
// settled combinators (when_all_settled, as_completed, shield) and UDP as
// futures (DatagramSocket). Each region sits in a case that checks what the
// guide says of it; sockets on 127.0.0.1 only, timers of a few milliseconds.
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <futures/as_completed.hpp>
#include <futures/datagram.hpp>
#include <futures/event.hpp>
#include <futures/futures.hpp>
#include <futures/lock.hpp>
#include <futures/queue.hpp>
#include <futures/semaphore.hpp>
#include <futures/shield.hpp>
#include <futures/when_all_settled.hpp>
#include <reactor/scheduler.hpp>

namespace {

using namespace std::chrono_literals;
using futures::Future;
using futures::Step;

// [snippet:consumer]
// Sums what comes through the queue until it is closed and empty.
class Summer {
public:
    explicit Summer(futures::Queue<int>& q) : q_(&q) {}

    Step<int> resume() {
        if (get_.valid()) {
            try {
                sum_ += get_.result();
            } catch (const futures::QueueClosed&) {
                return sum_;  // closed, and nothing left
            }
        }
        return get_ = q_->get();
    }

private:
    futures::Queue<int>* q_;
    Future<int> get_;
    int sum_ = 0;
};
// [end-snippet:consumer]

// [snippet:worker]
// Does one job under a Semaphore: at most N of these run their job at once.
class Limited {
public:
    Limited(reactor::Scheduler& sched, futures::Semaphore& sem) : sched_(&sched), sem_(&sem) {}

    Step<void> resume() {
        switch (state_) {
        case State::start:
            state_ = State::acquired;
            return acquire_ = sem_->acquire();
        case State::acquired:
            permit_ = std::move(acquire_.result());  // ours until released or destroyed
            state_ = State::worked;
            return job_ = futures::sleep(*sched_, 10ms);
        case State::worked:
            permit_.release();  // the next waiter gets it now
            return futures::finished;
        }
        throw std::logic_error("unreachable");
    }

private:
    enum class State { start, acquired, worked };
    reactor::Scheduler* sched_;
    futures::Semaphore* sem_;
    State state_ = State::start;
    Future<futures::Permit> acquire_;
    futures::Permit permit_;
    Future<void> job_;
};
// [end-snippet:worker]

}  // namespace

BOOST_AUTO_TEST_SUITE(toolkit_md)

BOOST_AUTO_TEST_CASE(queue_between_tasks) {
    // [snippet:queue]
    reactor::Scheduler sched;
    futures::Queue<int> q(sched, 2);  // at most 2 items: a third put() waits
    Future<int> sum = futures::spawn(sched, Summer(q));
    std::vector<Future<void>> puts;
    for (int i = 1; i <= 4; ++i) puts.push_back(q.put(i));
    // puts[0] and puts[1] are done; puts[2] and [3] wait for the consumer.
    q.close();  // waiting puts fail with QueueClosed: their items never arrive
    int total = futures::run_until_complete(sched, sum);  // 1 + 2
    // [end-snippet:queue]
    BOOST_TEST(puts[0].done());
    BOOST_TEST(puts[1].done());
    BOOST_CHECK_THROW(puts[2].result(), futures::QueueClosed);
    BOOST_CHECK_THROW(puts[3].result(), futures::QueueClosed);
    BOOST_TEST(total == 3);
}

BOOST_AUTO_TEST_CASE(semaphore_limits_concurrency) {
    reactor::Scheduler sched;
    // [snippet:semaphore]
    futures::Semaphore sem(sched, 2);
    std::vector<Future<void>> jobs;
    for (int i = 0; i < 6; ++i) jobs.push_back(futures::spawn(sched, Limited(sched, sem)));
    futures::run_until_complete(sched, futures::when_all(jobs));  // three rounds of two
    // [end-snippet:semaphore]
    BOOST_TEST(sem.available() == 2u);
    BOOST_TEST(sem.waiting() == 0u);
}

BOOST_AUTO_TEST_CASE(event_wakes_every_waiter) {
    reactor::Scheduler sched;
    // [snippet:event]
    futures::Event ready(sched);
    Future<void> a = ready.wait(), b = ready.wait();
    sched.call_soon([&] { ready.set(); });  // both complete; later waits are done at once
    futures::run_until_complete(sched, futures::when_all(a, b));
    // [end-snippet:event]
    BOOST_TEST(ready.wait().done());
}

BOOST_AUTO_TEST_CASE(lock_and_a_permit_nobody_reads) {
    reactor::Scheduler sched;
    // [snippet:lock]
    futures::Lock lock(sched);
    std::optional<futures::Permit> held = lock.try_acquire();
    Future<futures::Permit> gave_up = futures::with_timeout(lock.acquire(), 5ms);
    Future<futures::Permit> next = lock.acquire();
    sched.call_later(5ms, [&] { held.reset(); });  // let go just after gave_up timed out
    futures::run_until(sched, next);               // next gets it: gave_up never will
    // [end-snippet:lock]
    BOOST_TEST(next.result().held());
    BOOST_CHECK_THROW(gave_up.result(), futures::TimeoutError);
}

BOOST_AUTO_TEST_CASE(settled_and_completion_order) {
    reactor::Scheduler sched;
    auto value_after = [&](auto d, int v) { return futures::sleep(sched, d).then([v] { return v; }); };
    // [snippet:settled]
    Future<int> fails = futures::sleep(sched, 1ms).then([]() -> int { throw std::runtime_error("no"); });
    std::vector<Future<int>> inputs{value_after(3ms, 3), fails, value_after(2ms, 2)};
    auto settled = futures::run_until_complete(sched, futures::when_all_settled(inputs));
    // settled[0].result() == 3, settled[1].failed(), settled[2].result() == 2
    // [end-snippet:settled]
    BOOST_TEST(settled[0].result() == 3);
    BOOST_TEST(settled[1].failed());
    BOOST_TEST(settled[2].result() == 2);
    // [snippet:as_completed]
    std::vector<Future<int>> in{value_after(20ms, 20), value_after(10ms, 10)};
    std::vector<Future<int>> by_time = futures::as_completed(in);
    int first = futures::run_until_complete(sched, by_time[0]);  // 10: the first to complete
    // [end-snippet:as_completed]
    BOOST_TEST(first == 10);
    BOOST_TEST(futures::run_until_complete(sched, by_time[1]) == 20);
}

BOOST_AUTO_TEST_CASE(shield_keeps_the_work_running) {
    reactor::Scheduler sched;
    // [snippet:shield]
    Future<int> work = futures::sleep(sched, 20ms).then([] { return 42; });
    Future<int> impatient = futures::with_timeout(futures::shield(work), 1ms);
    futures::run_until(sched, impatient);  // TimeoutError: the shield was cancelled...
    int value = futures::run_until_complete(sched, work);  // ...the work was not: 42
    // [end-snippet:shield]
    BOOST_CHECK_THROW(impatient.result(), futures::TimeoutError);
    BOOST_TEST(value == 42);
}

BOOST_AUTO_TEST_CASE(udp_as_futures) {
    reactor::Scheduler sched;
    // [snippet:datagram]
    auto server = futures::DatagramSocket::bind(sched, reactor::Address::loopback_v4(0));
    auto client = futures::DatagramSocket::connect(sched, server->local_address());
    Future<futures::Datagram> incoming = server->receive();
    Future<void> sent = client->send("ping");  // done once the kernel took it
    futures::Datagram d = futures::run_until_complete(sched, incoming);
    (void)server->send_to("pong", d.from);  // d.from: the client's address
    std::string reply = futures::run_until_complete(sched, client->receive()).data;
    // [end-snippet:datagram]
    BOOST_TEST(sent.done());
    BOOST_TEST(d.data == "ping");
    BOOST_TEST(reply == "pong");
}

BOOST_AUTO_TEST_SUITE_END()
