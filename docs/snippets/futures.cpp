// SPDX-License-Identifier: MIT
// docs/futures.md: a future, then-chains, errors, combinators, tasks, run_until.
#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/testing/virtual_loop.hpp>

using namespace std::chrono_literals;

namespace {

// The shape of every machine (never instantiated: `Step<T> resume()` is the whole protocol).
template <class T>
struct MachineShape {
    // [snippet:resume]
    futures::Step<T> resume();
    // [end-snippet:resume]
};

// [snippet:tasks]
// Appends `name` to `log` `times` times, sleeping `pause` after each; returns `times`.
class Ticker {
public:
    enum class State { tick, sleeping };

    Ticker(reactor::Scheduler& sched, std::string name, int times, reactor::Duration pause,
           std::vector<std::string>& log)
        : sched_(sched), name_(std::move(name)), times_(times), pause_(pause), log_(log) {}

    // Optional: names the state for futures::all_tasks() and Scheduler::live().
    std::string_view state_name() const { return state_ == State::tick ? "tick" : "sleeping"; }

    futures::Step<int> resume() {
        for (;;) {
            switch (state_) {
            case State::tick:
                log_.push_back(name_);
                state_ = State::sleeping;
                return sleep_ = futures::sleep(sched_, pause_);
            case State::sleeping:
                sleep_.result();  // rethrows CancelledError if the task was cancelled
                if (++ticks_ == times_) return ticks_;
                state_ = State::tick;
                continue;  // tick again, without waiting for anything
            }
        }
    }

private:
    reactor::Scheduler& sched_;
    std::string name_;
    int times_;
    reactor::Duration pause_;
    std::vector<std::string>& log_;
    int ticks_ = 0;
    State state_ = State::tick;
    futures::Future<void> sleep_;
};

// Spawns two tickers, joins them in turn, returns their ticks added up.
class Main {
public:
    enum class State { spawn, joining_a, joining_b };

    Main(reactor::Scheduler& sched, std::vector<std::string>& log) : sched_(sched), log_(log) {}

    futures::Step<int> resume() {
        switch (state_) {
        case State::spawn:
            a_ = futures::spawn(sched_, Ticker(sched_, "a", 2, 10ms, log_));
            b_ = futures::spawn(sched_, Ticker(sched_, "b", 3, 15ms, log_));
            state_ = State::joining_a;
            return a_;  // a task joins another by returning its handle
        case State::joining_a:
            a_.result();
            state_ = State::joining_b;
            return b_;
        case State::joining_b:
            return a_.result() + b_.result();
        }
        throw std::logic_error("Main: unknown state");
    }

private:
    reactor::Scheduler& sched_;
    std::vector<std::string>& log_;
    State state_ = State::spawn;
    futures::Future<int> a_, b_;
};
// [end-snippet:tasks]

}  // namespace

BOOST_AUTO_TEST_SUITE(futures_md)

BOOST_AUTO_TEST_CASE(a_result_slot) {
    // [snippet:future]
    reactor::Scheduler sched;
    futures::Future<int> answer(sched);  // pending
    int got = 0;
    answer.add_done_callback([&](futures::Future<int>& f) { got = f.result(); });
    answer.set_result(42);  // done; the callback is only *scheduled*: got is still 0
    sched.run();            // runs it: got == 42
    // [end-snippet:future]
    BOOST_TEST(got == 42);
}

BOOST_AUTO_TEST_CASE(pipeline) {
    reactor::Scheduler sched;
    // [snippet:pipeline]
    futures::Future<std::string> text =
        futures::sleep(sched, 10ms)
            .then([] { return 21; })  // a value: Future<int>
            .then([&](int n) {        // a future: flattened, still Future<int>
                return futures::sleep(sched, 10ms).then([n] { return n * 2; });
            })
            .then([](int n) { return std::to_string(n); });  // Future<std::string>
    // futures::run_until_complete(sched, text) == "42"
    // [end-snippet:pipeline]
    BOOST_TEST(futures::run_until_complete(sched, text) == "42");
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(recovery) {
    reactor::Scheduler sched;
    // [snippet:recovery]
    bool cleaned_up = false;
    futures::Future<int> n =
        futures::make_ready_future(sched, std::string("forty-two"))
            .then([](const std::string& s) { return std::stoi(s); })       // throws std::invalid_argument
            .then([](int n) { return n * 2; })                               // skipped: the error passes by
            .catch_error([](const std::invalid_argument&) { return -1; })  // handled: -1 goes on
            .finally([&] { cleaned_up = true; });                            // runs however it ended
    // futures::run_until_complete(sched, n) == -1, and cleaned_up
    // [end-snippet:recovery]
    BOOST_TEST(futures::run_until_complete(sched, n) == -1);
    BOOST_TEST(cleaned_up);
}

BOOST_AUTO_TEST_CASE(combinators) {
    reactor::Scheduler sched;
    const reactor::TimePoint start = reactor::Clock::now();
    // [snippet:combinators]
    std::vector<futures::Future<void>> sleeps{futures::sleep(sched, 10ms), futures::sleep(sched, 20ms),
                                              futures::sleep(sched, 30ms)};
    futures::Future<void> all = futures::when_all(sleeps);  // done after 30 ms, not 60

    futures::Future<void> slow = futures::sleep(sched, 10s);
    futures::Future<void> bounded = futures::with_timeout(slow, 50ms);  // TimeoutError after 50 ms
    // [end-snippet:combinators]
    futures::run_until_complete(sched, all);
    BOOST_TEST((reactor::Clock::now() - start >= 30ms));
    BOOST_CHECK_THROW(futures::run_until_complete(sched, bounded), futures::TimeoutError);
    BOOST_TEST(slow.cancelled());
    BOOST_TEST(sched.timer_count() == 0u);  // the 10 s timer went with `slow`
    sched.run();                            // what run_until_complete left scheduled
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(seconds_as_doubles) {
    reactor::testing::VirtualLoop loop;
    reactor::Scheduler& sched = loop.sched;
    const reactor::TimePoint start = sched.now();
    // [snippet:seconds]
    futures::Future<void> nap = futures::sleep(sched, 0.25);                          // asyncio.sleep(0.25)
    futures::Future<void> bounded = futures::with_timeout(futures::sleep(sched, 10.0), 2.5);  // wait_for(x, 2.5)
    futures::RetryPolicy policy;
    policy.initial_delay = futures::from_seconds(0.1, "initial_delay");  // a field: 100 ms
    std::string refused;
    try {
        (void)futures::sleep(sched, -1.0);
    } catch (const std::invalid_argument& e) {
        refused = e.what();  // "sleep: delay must be a number of seconds >= 0, not -1"
    }
    // [end-snippet:seconds]
    futures::run_until_complete(sched, nap);
    BOOST_TEST((sched.now() - start == 250ms));
    BOOST_CHECK_THROW(futures::run_until_complete(sched, bounded), futures::TimeoutError);
    BOOST_TEST((sched.now() - start == 2500ms));
    BOOST_TEST((policy.initial_delay == 100ms));
    BOOST_TEST(refused == "sleep: delay must be a number of seconds >= 0, not -1");
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(timeout_on_a_task) {
    reactor::Scheduler sched;
    std::vector<std::string> log;
    // [snippet:timeout_on_a_task]
    futures::Future<int> ticker = futures::spawn(sched, Ticker(sched, "t", 3, 1s, log));
    futures::Future<int> bounded = futures::with_timeout(ticker, 20ms);
    futures::Status seen = futures::Status::done;
    bounded.add_done_callback([&] { seen = ticker.status(); });  // runs with the TimeoutError, 20 ms later
    futures::run_until(sched, ticker);
    // seen == futures::Status::pending: the task was asked to stop, and had not resumed yet;
    // ticker.status() == futures::Status::cancelled now (its sleep_.result() threw CancelledError)
    // [end-snippet:timeout_on_a_task]
    BOOST_TEST(bounded.failed());
    BOOST_CHECK_THROW(bounded.result(), futures::TimeoutError);
    BOOST_TEST(futures::to_string(seen) == "pending");
    BOOST_TEST(futures::to_string(ticker.status()) == "cancelled");
    BOOST_TEST(log == std::vector<std::string>{"t"}, boost::test_tools::per_element());
    // A continuation sees the same: the task is pending when catch_error runs.
    futures::Future<int> other = futures::spawn(sched, Ticker(sched, "u", 3, 1s, log));
    futures::Future<int> seen_by_continuation = futures::with_timeout(other, 1ms).catch_error(
        [&](const std::exception&) { return static_cast<int>(other.status()); });
    BOOST_TEST(futures::run_until_complete(sched, seen_by_continuation) == static_cast<int>(futures::Status::pending));
    futures::run_until(sched, other);
    BOOST_TEST(other.cancelled());
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(all_tasks) {
    reactor::Scheduler sched;
    std::vector<std::string> log;
    // [snippet:all_tasks]
    futures::Future<int> ticker = futures::spawn(sched, Ticker(sched, "a", 3, 1s, log));
    sched.run_once();  // its first resume(): it ticks, then sleeps
    std::vector<futures::TaskInfo> tasks = futures::all_tasks(sched);
    // tasks[0].spawned_at: this line; tasks[0].to_string():
    // "state sleeping, waiting on the Future created at docs/snippets/futures.cpp:LINE"
    // [end-snippet:all_tasks]
    BOOST_REQUIRE(tasks.size() == 1u);
    BOOST_TEST(tasks[0].to_string().find("state sleeping, waiting on the Future created at") == 0u);
    BOOST_TEST(tasks[0].state.value_or("") == "sleeping");
    ticker.cancel();
    sched.run();
    BOOST_TEST(futures::all_tasks(sched).empty());
}

BOOST_AUTO_TEST_CASE(tasks) {
    reactor::Scheduler sched;
    std::vector<std::string> log;
    // [snippet:run_tasks]
    int ticks = futures::run_until_complete(sched, Main(sched, log));  // 5
    // log == {"a", "b", "a", "b", "b"}
    // [end-snippet:run_tasks]
    BOOST_TEST(ticks == 5);
    BOOST_TEST(log == (std::vector<std::string>{"a", "b", "a", "b", "b"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(run_until) {
    reactor::Scheduler sched;
    // [snippet:run_until]
    futures::Future<void> never(sched);  // nothing will complete it
    reactor::Handle keep = sched.call_later(1h, [] {});
    bool first = futures::run_until(sched, never, 10ms);  // false: the 10 ms ran out
    keep.cancel();

    futures::Future<int> answer(sched);
    sched.call_soon([answer] { answer.set_result(42); });
    bool second = futures::run_until(sched, answer);     // true; answer.result() == 42
    // [end-snippet:run_until]

    BOOST_TEST(!first);
    BOOST_TEST(second);
    BOOST_TEST(answer.result() == 42);
    BOOST_TEST(!never.done());
    // With no work left, the future can never complete: an error, not a hang.
    BOOST_CHECK_THROW(futures::run_until(sched, never), futures::InvalidStateError);
    never.cancel();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_SUITE_END()
