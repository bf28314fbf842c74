// SPDX-License-Identifier: MIT
// when_all_settled (every outcome, never failing fast), as_completed
// (completion order) and shield (cancellation that stops at the shield), on a
// virtual clock.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/as_completed.hpp>
#include <futures/futures.hpp>
#include <futures/shield.hpp>
#include <futures/when_all_settled.hpp>

#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using futures::CancelledError;
using futures::Future;
using futures::Status;
using futures::Step;
using reactor_test::Reports;
using reactor_test::what;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;

Future<int> value_after(reactor::Scheduler& s, reactor::Duration d, int value) {
    return futures::sleep(s, d).then([value] { return value; });
}

Future<int> error_after(reactor::Scheduler& s, reactor::Duration d, std::string message) {
    return futures::sleep(s, d).then([message]() -> int { throw std::runtime_error(message); });
}

reactor::Duration since(VirtualLoop& loop, reactor::TimePoint start) { return loop.clock.now() - start; }

// Reads the outputs of as_completed in order, noting each value (or error) and when.
class InOrder {
public:
    InOrder(VirtualLoop& loop, std::vector<Future<int>> outs, std::vector<std::string>& seen)
        : loop_(&loop), outs_(std::move(outs)), seen_(&seen), start_(loop.clock.now()) {}
    Step<void> resume() {
        if (next_ > 0) {
            const Future<int>& f = outs_[next_ - 1];
            std::string at = std::to_string(since(*loop_, start_) / 1s) + "s";
            seen_->push_back(f.failed() ? what(f.exception()) + "@" + at : std::to_string(f.result()) + "@" + at);
        }
        if (next_ == outs_.size()) return futures::finished;
        return outs_[next_++];
    }

private:
    VirtualLoop* loop_;
    std::vector<Future<int>> outs_;
    std::vector<std::string>* seen_;
    reactor::TimePoint start_;
    std::size_t next_ = 0;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(when_all_settled)

BOOST_AUTO_TEST_CASE(collects_every_outcome_in_input_order_without_failing_fast) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    auto start = loop.clock.now();
    Future<int> slow = value_after(loop.sched, 3s, 3);
    Future<int> broken = error_after(loop.sched, 1s, "boom");
    Future<int> gone = value_after(loop.sched, 5s, 5);
    loop.sched.call_later(2s, [gone] { gone.cancel(); });
    auto all = futures::when_all_settled(std::vector<Future<int>>{slow, broken, gone});
    BOOST_REQUIRE(futures::run_until(loop.sched, all, 1min));
    BOOST_TEST((since(loop, start) == 3s));  // waited for the slow one despite the early error
    std::vector<Future<int>> out = all.result();
    BOOST_REQUIRE(out.size() == 3u);
    BOOST_TEST((out[0] == slow));
    BOOST_TEST(out[0].result() == 3);
    BOOST_TEST(out[1].failed());
    BOOST_TEST(out[2].cancelled());
    slow = broken = gone = {};
    out.clear();
    all = {};
    loop.sched.run();
    BOOST_TEST(reports.size() == 0u);  // the error was handed over: not reported as never retrieved
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(empty_void_and_bad_inputs) {
    VirtualLoop loop(backend_under_test());
    auto none = futures::when_all_settled(loop.sched, std::vector<Future<void>>{});
    BOOST_TEST(none.done());
    BOOST_TEST(none.result().empty());
    BOOST_CHECK_THROW((void)futures::when_all_settled(std::vector<Future<void>>{}), std::invalid_argument);
    BOOST_CHECK_THROW((void)futures::when_all_settled(std::vector<Future<int>>{Future<int>()}),
                      futures::InvalidStateError);
    auto voids = futures::when_all_settled(
        std::vector<Future<void>>{futures::sleep(loop.sched, 1s), futures::make_ready_future(loop.sched)});
    BOOST_REQUIRE(futures::run_until(loop.sched, voids, 1min));
    BOOST_TEST(voids.result().size() == 2u);
    BOOST_TEST((voids.result()[0].status() == Status::done));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_it_cancels_the_inputs_still_pending) {
    VirtualLoop loop(backend_under_test());
    Future<int> done = futures::make_ready_future(loop.sched, 1);
    Future<int> pending = value_after(loop.sched, 10s, 2);
    auto all = futures::when_all_settled(std::vector<Future<int>>{done, pending});
    loop.sched.run_once();
    BOOST_TEST(all.cancel());
    BOOST_TEST(pending.cancelled());
    BOOST_TEST(done.result() == 1);
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(as_completed)

BOOST_AUTO_TEST_CASE(outputs_complete_in_the_order_the_inputs_do) {
    VirtualLoop loop(backend_under_test());
    std::vector<Future<int>> in{value_after(loop.sched, 3s, 30), error_after(loop.sched, 2s, "two"),
                                value_after(loop.sched, 1s, 10)};
    std::vector<std::string> seen;
    auto reader = futures::spawn(loop.sched, InOrder(loop, futures::as_completed(in), seen));
    BOOST_REQUIRE(futures::run_until(loop.sched, reader, 1min));
    BOOST_TEST(seen == (std::vector<std::string>{"10@1s", "two@2s", "30@3s"}), boost::test_tools::per_element());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(inputs_already_done_come_first_in_input_order) {
    VirtualLoop loop(backend_under_test());
    std::vector<Future<int>> in{value_after(loop.sched, 1s, 3), futures::make_ready_future(loop.sched, 1),
                                futures::make_ready_future(loop.sched, 2)};
    auto out = futures::as_completed(in);
    BOOST_REQUIRE(out.size() == 3u);
    BOOST_REQUIRE(futures::run_until(loop.sched, out[2], 1min));
    BOOST_TEST(out[0].result() == 1);
    BOOST_TEST(out[1].result() == 2);
    BOOST_TEST(out[2].result() == 3);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_cancelled_output_leaves_its_outcome_to_the_next_and_cancels_no_input) {
    VirtualLoop loop(backend_under_test());
    std::vector<Future<int>> in{value_after(loop.sched, 1s, 1), value_after(loop.sched, 2s, 2)};
    auto out = futures::as_completed(in);
    BOOST_TEST(out[0].cancel());
    BOOST_REQUIRE(futures::run_until(loop.sched, out[1], 1min));
    BOOST_TEST(out[1].result() == 1);  // the first outcome, out[0] having given up
    BOOST_REQUIRE(futures::run_until(loop.sched, in[1], 1min));
    BOOST_TEST(in[1].result() == 2);  // still ran; nobody was left to take it
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(bad_inputs_are_refused) {
    VirtualLoop loop(backend_under_test());
    VirtualLoop other(backend_under_test());
    BOOST_CHECK_THROW((void)futures::as_completed(std::vector<Future<int>>{}), std::invalid_argument);
    BOOST_CHECK_THROW((void)futures::as_completed(std::vector<Future<int>>{Future<int>()}),
                      futures::InvalidStateError);
    BOOST_CHECK_THROW((void)futures::as_completed(std::vector<Future<int>>{futures::make_ready_future(loop.sched, 1),
                                                                           futures::make_ready_future(other.sched, 2)}),
                      std::invalid_argument);
    loop.sched.run();
    other.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(shield)

BOOST_AUTO_TEST_CASE(completes_like_the_work_it_shields) {
    VirtualLoop loop(backend_under_test());
    auto ok = futures::shield(value_after(loop.sched, 1s, 7));
    auto bad = futures::shield(error_after(loop.sched, 1s, "bad"));
    Future<int> inner = value_after(loop.sched, 1s, 0);
    auto gone = futures::shield(inner);
    inner.cancel();
    BOOST_REQUIRE(futures::run_until(loop.sched, futures::when_all_settled(std::vector<Future<int>>{ok, bad, gone}),
                                     1min));
    BOOST_TEST(ok.result() == 7);
    BOOST_TEST(what(bad.exception()) == "bad");
    BOOST_TEST(gone.cancelled());  // the work itself was cancelled
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancelling_the_shield_leaves_the_work_running) {
    VirtualLoop loop(backend_under_test());
    auto start = loop.clock.now();
    Future<int> work = value_after(loop.sched, 2s, 42);
    Future<int> shielded = futures::shield(work);
    // A with_timeout over the shield gives up at 1 s and cancels what it waits on: the shield, not the work.
    Future<int> bounded = futures::with_timeout(shielded, 1s);
    BOOST_REQUIRE(futures::run_until(loop.sched, bounded, 1min));
    BOOST_CHECK_THROW(bounded.result(), futures::TimeoutError);
    BOOST_TEST(shielded.cancelled());
    BOOST_TEST(!work.done());
    BOOST_REQUIRE(futures::run_until(loop.sched, work, 1min));
    BOOST_TEST(work.result() == 42);
    BOOST_TEST((since(loop, start) == 2s));
    BOOST_TEST(!shielded.cancel());  // complete already
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(without_a_shield_the_same_timeout_cancels_the_work) {
    // The control case: it shows the test above would catch a shield that did nothing.
    VirtualLoop loop(backend_under_test());
    Future<int> work = value_after(loop.sched, 2s, 42);
    Future<int> bounded = futures::with_timeout(work, 1s);
    BOOST_REQUIRE(futures::run_until(loop.sched, bounded, 1min));
    BOOST_CHECK_THROW(bounded.result(), futures::TimeoutError);
    BOOST_TEST(work.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()
