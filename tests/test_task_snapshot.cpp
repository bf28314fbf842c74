// SPDX-License-Identifier: MIT
// futures::all_tasks() and the tasks' side of Scheduler::live(), close() and
// destruction: every pending task is listed with its spawn line, its
// machine's state_name() (or "unknown"), and what it waits on; close()
// cancels tasks (their machines see CancelledError and may clean up), then
// pending hand-made futures, leaving nothing to report to a second close();
// destroying the Scheduler frees tasks even in cycles that no wake-up breaks.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/futures.hpp>

#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::Future;
using futures::Step;
using reactor_test::Tracked;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Sleeps, then waits on a future it is given; names its states. Logs a
// cancellation it sees.
class Napper {
public:
    enum class State { start, napping, waiting };

    Napper(reactor::Scheduler& sched, Future<void> gate, std::vector<std::string>& log)
        : sched_(sched), gate_(std::move(gate)), log_(log) {}

    std::string_view state_name() const {
        switch (state_) {
        case State::start: return "start";
        case State::napping: return "napping";
        case State::waiting: return "waiting";
        }
        return "?";
    }

    Step<void> resume() {
        try {
            switch (state_) {
            case State::start:
                state_ = State::napping;
                return nap_ = futures::sleep(sched_, 1s);
            case State::napping:
                nap_.result();
                state_ = State::waiting;
                return gate_;
            case State::waiting:
                gate_.result();
                return futures::finished;
            }
        } catch (const futures::CancelledError&) {
            log_.push_back(std::string("cancelled while ") + std::string(state_name()));
            throw;
        }
        throw std::logic_error("unreachable");
    }

private:
    reactor::Scheduler& sched_;
    Future<void> gate_;
    std::vector<std::string>& log_;
    State state_ = State::start;
    Future<void> nap_;
    Tracked tracked_;
};

// No state_name(): the snapshot says so.
struct Anonymous {
    Future<void> gate;
    Step<void> resume() {
        if (!gate.done()) return gate;
        return futures::finished;
    }
};

// Waits on its gate; its state's name is its number.
struct Numbered {
    std::string name;
    Future<void> gate;
    std::string_view state_name() const { return name; }
    Step<void> resume() {
        if (!gate.done()) return gate;
        return futures::finished;
    }
};

std::vector<std::string> listed_states(reactor::Scheduler& sched) {
    std::vector<std::string> out;
    for (const futures::TaskInfo& t : futures::all_tasks(sched)) out.push_back(t.state.value_or("?"));
    return out;
}

}  // namespace

// The loop lists its tasks in a vector, each task keeping its index: tasks
// that end leave holes, which are closed as they pile up (the indexes of
// those that moved updated). Whatever comes and goes, the list is still in
// the order the tasks were spawned, and names only those still running.
BOOST_AUTO_TEST_CASE(all_tasks_keeps_spawn_order_as_tasks_come_and_go) {
    VirtualLoop loop(backend_under_test());
    std::vector<Future<void>> gates, tasks;
    std::vector<std::string> expected;
    auto spawn = [&](int n) {
        for (int i = 0; i < n; ++i) {
            const std::string name = std::to_string(gates.size());
            gates.emplace_back(loop.sched);
            tasks.push_back(futures::spawn(loop.sched, Numbered{name, gates.back()}));
            expected.push_back(name);
        }
    };
    auto finish = [&](auto which) {  // ends the tasks whose number `which` picks
        for (std::size_t i = 0; i < gates.size(); ++i)
            if (which(i) && !gates[i].done()) gates[i].set_result();
        loop.sched.run();
        std::erase_if(expected, [&](const std::string& name) { return which(std::stoul(name)); });
        BOOST_TEST(listed_states(loop.sched) == expected, boost::test_tools::per_element());
    };
    spawn(300);
    loop.sched.run();
    BOOST_TEST(listed_states(loop.sched) == expected, boost::test_tools::per_element());
    finish([](std::size_t i) { return i % 3 != 0; });  // two thirds: holes, then compacted
    spawn(100);
    finish([](std::size_t i) { return i >= 150 && i < 330; });
    finish([](std::size_t i) { return i == 399 || i == 0; });  // the newest and the oldest
    spawn(5);
    finish([](std::size_t) { return true; });
    BOOST_TEST(futures::all_tasks(loop.sched).empty());
    for (Future<void>& t : tasks) BOOST_TEST(t.done());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(all_tasks_shows_spawn_line_state_and_what_each_waits_on) {
    VirtualLoop loop(backend_under_test());
    std::vector<std::string> log;
    Future<void> gate(loop.sched);
    const auto gate_line = std::source_location::current().line() - 1;
    const auto line = std::source_location::current().line();
    Future<void> a = futures::spawn(loop.sched, Napper(loop.sched, gate, log));  // line + 1
    Future<void> b = futures::spawn(loop.sched, Anonymous{gate});              // line + 2

    std::vector<futures::TaskInfo> tasks = futures::all_tasks(loop.sched);
    BOOST_REQUIRE(tasks.size() == 2u);
    BOOST_TEST(tasks[0].spawned_at.line() == line + 1);
    BOOST_TEST(!tasks[0].started);
    BOOST_TEST(tasks[0].state.value_or("") == "start");
    BOOST_TEST(!tasks[1].state.has_value());
    BOOST_TEST(contains(tasks[1].to_string(), "state unknown"));

    loop.sched.run_once();  // both start: a naps, b waits on the gate
    tasks = futures::all_tasks(loop.sched);
    BOOST_REQUIRE(tasks.size() == 2u);
    BOOST_TEST(tasks[0].state.value_or("") == "napping");
    BOOST_TEST(tasks[0].waiting_on_kind == "Future");
    BOOST_TEST(contains(tasks[0].waiting_on.file_name(), "test_task_snapshot.cpp"));
    BOOST_TEST(tasks[1].waiting_on.line() == gate_line);
    BOOST_TEST(contains(tasks[1].to_string(), "waiting on the Future created at"));

    gate.set_result();
    futures::run_until(loop.sched, a);
    BOOST_TEST(futures::all_tasks(loop.sched).empty());  // done tasks are not listed
    BOOST_TEST(log.empty());
}

BOOST_AUTO_TEST_CASE(live_lists_tasks_and_close_cancels_them_running_their_cleanup) {
    std::vector<std::string> log;
    {
        VirtualLoop loop(backend_under_test());
        std::vector<std::string> reports;
        loop.sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
        Future<void> gate(loop.sched);
        futures::spawn(loop.sched, Napper(loop.sched, gate, log));  // background: nobody holds its handle
        loop.sched.run_once();
        int tasks = 0;
        for (const reactor::LiveItem& item : loop.sched.live()) tasks += item.kind == reactor::LiveItem::Kind::task;
        BOOST_TEST(tasks == 1);

        loop.sched.close();
        BOOST_TEST(log == (std::vector<std::string>{"cancelled while napping"}), boost::test_tools::per_element());
        BOOST_TEST(Tracked::live == 0);  // the machine ended with its task
        bool listed = false;
        for (const std::string& r : reports) listed |= contains(r, "still alive at close: task (state napping");
        BOOST_TEST(listed);
        BOOST_TEST(futures::all_tasks(loop.sched).empty());
    }
}

BOOST_AUTO_TEST_CASE(destruction_frees_tasks_waiting_on_a_future_nobody_completes) {
    std::vector<std::string> log;
    {
        VirtualLoop loop(backend_under_test());
        Future<void> gate(loop.sched);
        // The machine holds `gate`, whose waiter list holds the task: a cycle
        // that no timer's cancellation reaches.
        futures::spawn(loop.sched, Napper(loop.sched, gate, log));
        gate = {};
        loop.sched.run_for(2s);  // past the nap: now it waits on the gate
        BOOST_REQUIRE(futures::all_tasks(loop.sched).size() == 1u);
        BOOST_TEST(futures::all_tasks(loop.sched)[0].state.value_or("") == "waiting");
        BOOST_TEST(Tracked::live == 1);
    }
    BOOST_TEST(Tracked::live == 0);
    BOOST_TEST(log.empty());  // freed without resuming
}

BOOST_AUTO_TEST_CASE(live_lists_a_pending_hand_made_future_with_its_line) {
    VirtualLoop loop(backend_under_test());
    const auto line = std::source_location::current().line();
    Future<int> answer(loop.sched);  // line + 1
    Future<int> doubled = answer.then([](int x) { return 2 * x; });
    std::vector<reactor::LiveItem> items = loop.sched.live();
    BOOST_REQUIRE(items.size() == 1u);  // the continuation is named by what it waits on
    BOOST_TEST((items[0].kind == reactor::LiveItem::Kind::future));
    BOOST_TEST(items[0].where.line() == line + 1);
    BOOST_TEST(contains(items[0].to_string(), "future (pending, to be completed by hand) created at"));
    BOOST_TEST(futures::all_tasks(loop.sched).empty());  // not a task

    answer.set_result(21);
    futures::run_until(loop.sched, doubled);
    BOOST_TEST(doubled.result() == 42);
    BOOST_TEST(loop.sched.live().empty());
}

BOOST_AUTO_TEST_CASE(close_cancels_a_pending_hand_made_future_and_leaves_an_empty_loop) {
    VirtualLoop loop(backend_under_test());
    std::vector<std::string> reports;
    loop.sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    Future<int> answer(loop.sched);
    Future<int> doubled = answer.then([](int x) { return 2 * x; });
    bool heard = false;
    answer.add_done_callback([&] { heard = true; });

    std::vector<reactor::LiveItem> reported = loop.sched.close();
    BOOST_REQUIRE(reported.size() == 1u);
    BOOST_TEST((reported[0].kind == reactor::LiveItem::Kind::future));
    BOOST_TEST(reports.size() == 2u);  // the item and the summary
    BOOST_TEST(answer.cancelled());
    BOOST_TEST(doubled.cancelled());  // its chain heard of it within close()
    BOOST_TEST(heard);
    BOOST_TEST(loop.sched.live().empty());
    BOOST_TEST(loop.sched.empty());

    reports.clear();
    BOOST_TEST(loop.sched.close().empty());  // nothing to report again
    BOOST_TEST(reports.empty());
    BOOST_CHECK_THROW(answer.set_result(1), futures::InvalidStateError);  // done: cancelled
}

BOOST_AUTO_TEST_CASE(close_cancels_a_task_first_then_the_hand_made_future_it_waits_on) {
    std::vector<std::string> log;
    VirtualLoop loop(backend_under_test());
    std::vector<std::string> reports;
    loop.sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    Future<void> gate(loop.sched);
    Future<void> other(loop.sched);  // nobody waits on it
    Future<void> task = futures::spawn(loop.sched, Napper(loop.sched, gate, log));
    loop.sched.run_for(2s);  // past the nap: it waits on the gate
    BOOST_REQUIRE(futures::all_tasks(loop.sched).size() == 1u);

    std::vector<reactor::LiveItem> reported = loop.sched.close();
    BOOST_TEST(reported.size() == 3u);  // two futures and the task
    BOOST_TEST(log == (std::vector<std::string>{"cancelled while waiting"}), boost::test_tools::per_element());
    BOOST_TEST(task.cancelled());
    BOOST_TEST(gate.cancelled());
    BOOST_TEST(other.cancelled());
    BOOST_TEST(Tracked::live == 0);
    BOOST_TEST(loop.sched.live().empty());
    reports.clear();
    BOOST_TEST(loop.sched.close().empty());
    BOOST_TEST(reports.empty());
}
