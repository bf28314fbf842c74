// SPDX-License-Identifier: MIT
// State-machine task tests: the resume() protocol, joining, errors, cancellation
// (a request the machine sees as CancelledError), background-task error reports,
// run_until_complete, and lifetimes (the machine dies with the task's end).
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/futures.hpp>

#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::CancelledError;
using futures::Future;
using futures::InvalidStateError;
using futures::Step;
using reactor_test::Reports;
using reactor_test::Tracked;
using reactor_test::what;
using Bag = std::vector<std::string>;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;

// Sleeps `ticks` times for 1 s, logging each wake-up; returns the tick count.
class Ticker {
public:
    enum class State { start, sleeping };

    Ticker(reactor::Scheduler& sched, Bag& bag, std::string name, int ticks)
        : sched_(sched), bag_(bag), name_(std::move(name)), ticks_(ticks) {}

    Step<int> resume() {
        switch (state_) {
        case State::start:
            bag_.push_back(name_ + " start");
            state_ = State::sleeping;
            return sleep_ = futures::sleep(sched_, 1s);
        case State::sleeping:
            sleep_.result();  // rethrows CancelledError if we were cancelled
            bag_.push_back(name_ + " tick " + std::to_string(++done_));
            if (done_ == ticks_) return done_;
            return sleep_ = futures::sleep(sched_, 1s);
        }
        throw std::logic_error("unreachable");
    }

private:
    reactor::Scheduler& sched_;
    Bag& bag_;
    std::string name_;
    int ticks_;
    int done_ = 0;
    State state_ = State::start;
    Future<void> sleep_;
    Tracked tracked_;
};

// Waits on the future it is given, then returns its result (+1), or whatever
// the error handling below decides.
class Waiter {
public:
    enum class State { start, waiting, cleaning_up };
    enum class OnCancel { propagate, clean_up_and_return };

    Waiter(reactor::Scheduler& sched, Future<int> awaited, Bag& bag, OnCancel on_cancel = OnCancel::propagate)
        : sched_(sched), awaited_(std::move(awaited)), bag_(bag), on_cancel_(on_cancel) {}

    Step<int> resume() {
        ++resumes;
        switch (state_) {
        case State::start:
            state_ = State::waiting;
            return awaited_;
        case State::waiting:
            try {
                return awaited_.result() + 1;
            } catch (const CancelledError&) {
                bag_.push_back("saw CancelledError");
                if (on_cancel_ == OnCancel::propagate) throw;
                state_ = State::cleaning_up;
                return cleanup_ = futures::sleep(sched_, 1s);
            }
        case State::cleaning_up:
            bag_.push_back("cleaned up");
            return -1;
        }
        throw std::logic_error("unreachable");
    }

    int resumes = 0;

private:
    reactor::Scheduler& sched_;
    Future<int> awaited_;
    Bag& bag_;
    OnCancel on_cancel_;
    State state_ = State::start;
    Future<void> cleanup_;
};

// A machine that returns a fixed Step on its first resume.
template <class T>
struct Once {
    Step<T> step;
    Step<T> resume() { return std::move(step); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(protocol)

BOOST_AUTO_TEST_CASE(runs_until_its_final_value_resumed_by_the_futures_it_returns) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    auto start = loop.clock.now();
    Future<int> task = futures::spawn(loop.sched, Ticker(loop.sched, bag, "t", 3));
    BOOST_TEST(bag.empty());  // spawn never runs the machine inline
    loop.sched.run();
    BOOST_TEST(task.result() == 3);
    BOOST_TEST(bag == (Bag{"t start", "t tick 1", "t tick 2", "t tick 3"}));
    BOOST_TEST((loop.clock.now() - start == 3s));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(two_tasks_interleave) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    auto a = futures::spawn(loop.sched, Ticker(loop.sched, bag, "a", 2));
    auto b = futures::spawn(loop.sched, Ticker(loop.sched, bag, "b", 2));
    loop.sched.run();
    BOOST_TEST(bag == (Bag{"a start", "b start", "a tick 1", "b tick 1", "a tick 2", "b tick 2"}));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(tasks_join_tasks) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> child = futures::spawn(loop.sched, Ticker(loop.sched, bag, "child", 2));
    Future<int> parent = futures::spawn(loop.sched, Waiter(loop.sched, child, bag));
    loop.sched.run();
    BOOST_TEST(parent.result() == 3);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(void_and_move_only_results) {
    VirtualLoop loop(backend_under_test());
    Future<void> v = futures::spawn(loop.sched, Once<void>{futures::finished});
    Future<std::unique_ptr<int>> p = futures::spawn(loop.sched, Once<std::unique_ptr<int>>{std::make_unique<int>(4)});
    Future<std::string> s = futures::spawn(loop.sched, Once<std::string>{"text"});
    loop.sched.run();
    BOOST_CHECK_NO_THROW(v.result());
    BOOST_TEST(*p.result() == 4);
    BOOST_TEST(s.result() == "text");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(awaiting_a_done_future_still_resumes_from_the_loop) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> ready = futures::make_ready_future(loop.sched, 1);
    auto w = Waiter(loop.sched, ready, bag);
    Future<int> task = futures::spawn(loop.sched, std::move(w));
    loop.sched.run_once();  // first resume: returns the (done) future
    BOOST_TEST(!task.done());
    loop.sched.run_once();  // resumed on the next iteration, never inline
    BOOST_TEST(task.result() == 2);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(machine_is_destroyed_when_the_task_ends) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> task = futures::spawn(loop.sched, Ticker(loop.sched, bag, "t", 1));
    BOOST_TEST(Tracked::live == 1);
    loop.sched.run();
    BOOST_TEST(task.done());
    BOOST_TEST(Tracked::live == 0);  // the handle lives on; the machine does not
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(misused_steps_fail_the_task_clearly) {
    VirtualLoop loop(backend_under_test());
    Future<int> empty = futures::spawn(loop.sched, Once<int>{Future<int>()});
    loop.sched.run();
    BOOST_CHECK_EXCEPTION(empty.result(), InvalidStateError,
                          [](const auto& e) { return std::string(e.what()).find("empty Future") != std::string::npos; });

    struct SelfJoin {
        Future<int>* self;
        Step<int> resume() { return *self; }
    };
    Future<int> self;
    self = futures::spawn(loop.sched, SelfJoin{&self});
    loop.sched.run();
    BOOST_CHECK_THROW(self.result(), InvalidStateError);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(awaited_error_is_rethrown_by_result_and_fails_the_task) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> src(loop.sched);
    Future<int> task = futures::spawn(loop.sched, Waiter(loop.sched, src, bag));
    loop.sched.run_once();
    src.set_exception(std::runtime_error("awaited failed"));
    loop.sched.run();
    BOOST_TEST(task.failed());
    BOOST_TEST(what(task.exception()) == "awaited failed");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(exception_from_the_first_resume_fails_the_task) {
    struct Throws {
        Step<int> resume() { throw std::runtime_error("at once"); }
    };
    VirtualLoop loop(backend_under_test());
    Future<int> task = futures::spawn(loop.sched, Throws{});
    loop.sched.run();
    BOOST_TEST(what(task.exception()) == "at once");
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(unjoined_background_task_error_is_reported_naming_the_spawn_site) {
    struct Throws {
        Step<void> resume() { throw std::runtime_error("background failure"); }
    };
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    futures::spawn(loop.sched, Throws{});  // handle dropped: a background task
    const auto line = __LINE__ - 1;
    loop.sched.run();
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(reports[0].message == "Task exception was never retrieved");
    BOOST_TEST(what(reports[0].exception) == "background failure");
    BOOST_TEST(reports[0].origin.line() == line);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(joined_task_error_is_not_reported) {
    struct Throws {
        Step<int> resume() { throw std::runtime_error("joined"); }
    };
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, Throws{}), std::runtime_error);
    loop.sched.run();
    BOOST_TEST(reports.size() == 0u);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cancellation)

BOOST_AUTO_TEST_CASE(cancel_cancels_the_awaited_future_and_the_machine_lets_it_out) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<void> timer = futures::sleep(loop.sched, 1h);
    Future<int> awaited = timer.then([] { return 1; });
    Future<int> task = futures::spawn(loop.sched, Waiter(loop.sched, awaited, bag));
    loop.sched.run_once();
    BOOST_TEST(task.cancel());
    BOOST_TEST(!task.done());  // only a request: the machine decides
    BOOST_TEST(awaited.cancelled());
    BOOST_TEST(timer.cancelled());
    loop.sched.run();
    BOOST_TEST(bag == Bag{"saw CancelledError"});
    BOOST_TEST(task.cancelled());
    BOOST_TEST(!task.cancel());  // complete now
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(machine_may_catch_cancellation_clean_up_and_return) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> awaited(loop.sched);
    Future<int> task =
        futures::spawn(loop.sched, Waiter(loop.sched, awaited, bag, Waiter::OnCancel::clean_up_and_return));
    loop.sched.run_once();
    task.cancel();
    loop.sched.run();
    BOOST_TEST(bag == (Bag{"saw CancelledError", "cleaned up"}));
    BOOST_TEST(task.result() == -1);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelled_before_its_first_resume_it_never_runs) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> task = futures::spawn(loop.sched, Ticker(loop.sched, bag, "t", 1));
    BOOST_TEST(task.cancel());
    loop.sched.run();
    BOOST_TEST(bag.empty());
    BOOST_TEST(task.cancelled());
    BOOST_TEST(Tracked::live == 0);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancel_when_the_awaited_future_is_already_done_reaches_the_next_wait) {
    // Waits on a done future, then on a long sleep, and catches the cancellation.
    class TwoWaits {
    public:
        enum class State { first, second, after };
        TwoWaits(reactor::Scheduler& sched, Bag& bag) : sched_(sched), bag_(bag) {}
        Step<int> resume() {
            switch (state_) {
            case State::first:
                state_ = State::second;
                return ready_ = futures::make_ready_future(sched_, 1);
            case State::second:
                state_ = State::after;
                bag_.push_back("first wait: " + std::to_string(ready_.result()));
                return sleep_ = futures::sleep(sched_, 1h);
            case State::after:
                try {
                    sleep_.result();
                } catch (const CancelledError&) {
                    bag_.push_back("second wait cancelled");
                }
                return 5;
            }
            throw std::logic_error("unreachable");
        }

    private:
        reactor::Scheduler& sched_;
        Bag& bag_;
        State state_ = State::first;
        Future<int> ready_;
        Future<void> sleep_;
    };
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> task = futures::spawn(loop.sched, TwoWaits(loop.sched, bag));
    loop.sched.run_once();  // waiting on a future that is already done
    BOOST_TEST(task.cancel());
    loop.sched.run();
    BOOST_TEST(bag == (Bag{"first wait: 1", "second wait cancelled"}));
    BOOST_TEST(task.result() == 5);  // it caught the cancellation: its choice
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancel_pending_when_the_machine_returns_ends_the_task_cancelled) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> task = futures::spawn(loop.sched, Waiter(loop.sched, futures::make_ready_future(loop.sched, 1), bag));
    loop.sched.run_once();
    BOOST_TEST(task.cancel());
    loop.sched.run();
    BOOST_TEST(task.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_a_parent_cancels_the_child_it_joins) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> child = futures::spawn(loop.sched, Ticker(loop.sched, bag, "child", 5));
    Future<int> parent = futures::spawn(loop.sched, Waiter(loop.sched, child, bag));
    loop.sched.run_once();  // both started: the child sleeps, the parent waits on it
    parent.cancel();
    loop.sched.run();
    BOOST_TEST(child.cancelled());
    BOOST_TEST(parent.cancelled());
    BOOST_TEST(bag == (Bag{"child start", "saw CancelledError"}));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(run_until_complete_)

BOOST_AUTO_TEST_CASE(returns_the_value_or_rethrows) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    BOOST_TEST(futures::run_until_complete(loop.sched, Ticker(loop.sched, bag, "main", 2)) == 2);
    BOOST_TEST(futures::run_until_complete(loop.sched, futures::sleep(loop.sched, 1s).then([] { return 7; })) == 7);
    Future<int> cancelled(loop.sched);
    cancelled.cancel();
    BOOST_CHECK_THROW(futures::run_until_complete(loop.sched, cancelled), CancelledError);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(returns_when_its_future_is_done_leaving_the_rest_scheduled) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    auto slow = futures::spawn(loop.sched, Ticker(loop.sched, bag, "slow", 5));
    BOOST_TEST(futures::run_until_complete(loop.sched, futures::sleep(loop.sched, 2s).then([] { return 1; })) == 1);
    BOOST_TEST(!slow.done());
    BOOST_TEST(slow.cancel());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_future_nothing_can_complete_is_an_error_not_a_hang) {
    VirtualLoop loop(backend_under_test());
    Future<int> never(loop.sched);
    BOOST_CHECK_EXCEPTION(futures::run_until_complete(loop.sched, never), InvalidStateError, [](const auto& e) {
        return std::string(e.what()).find("ran out of work") != std::string::npos;
    });
    reactor::Scheduler other;
    BOOST_CHECK_THROW(futures::run_until_complete(other, futures::make_ready_future(loop.sched, 1)),
                      std::invalid_argument);
    never.cancel();  // else CHECK_EMPTY rightly names it: a pending future left on the loop
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(pending_background_tasks_are_freed_with_the_scheduler) {
    {
        VirtualLoop loop(backend_under_test());
        Bag bag;
        futures::spawn(loop.sched, Ticker(loop.sched, bag, "forever", 1000));
        loop.sched.run_once();
        BOOST_TEST(Tracked::live == 1);
    }
    BOOST_TEST(Tracked::live == 0);
}

// A task waiting on a task it holds the handle of: the joined task's waiter
// list holds the joiner, the joiner's machine holds the joined task. Neither
// can complete once the Scheduler is gone, yet both must be freed with it
// (without running any resume(): the objects it uses may be gone already).
class Joiner {
public:
    explicit Joiner(Future<int> child) : child_(std::move(child)) {}
    Step<int> resume() {
        if (!waited_) {
            waited_ = true;
            return child_;
        }
        return child_.result();
    }

private:
    Future<int> child_;
    bool waited_ = false;
    Tracked tracked_;
};

BOOST_AUTO_TEST_CASE(tasks_joining_tasks_are_freed_with_the_scheduler_without_resuming) {
    Bag bag;
    {
        VirtualLoop loop(backend_under_test());
        Future<int> child = futures::spawn(loop.sched, Ticker(loop.sched, bag, "child", 1000));
        Future<int> parent = futures::spawn(loop.sched, Joiner(child));
        futures::spawn(loop.sched, Joiner(parent));  // background: only its waiters hold it
        child = {};
        loop.sched.run_once();
        BOOST_TEST(Tracked::live == 3);
    }
    BOOST_TEST(Tracked::live == 0);
    BOOST_TEST(bag == Bag{"child start"});  // nothing resumed during destruction
}

BOOST_AUTO_TEST_SUITE_END()
