// SPDX-License-Identifier: MIT
// futures::detail::Link and detail::launch, the two pieces a new combinator is
// made of, tested through one written here the way docs/futures.md shows:
// `sequence(a, b)` waits for a, then, through the same link, for b. Wake-ups
// come from the loop, cancellation travels along the link to whatever it leads
// to at the time, the link keeps its owner alive but not its upstream, and
// death cuts it.
#include <boost/test/unit_test.hpp>

#include <optional>
#include <source_location>
#include <stdexcept>
#include <utility>

#include <futures/futures.hpp>

#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using futures::CancelledError;
using futures::Future;
using futures::Status;
using futures::detail::Access;
using futures::detail::State;
using futures::detail::WaitingState;
using reactor_test::Reports;
using reactor_test::Tracked;
using reactor_test::what;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;

// sequence(a, b): completes like b once a is done and then b is; a's error or
// cancellation skips b. One link, connected twice, one after the other.
template <class A, class B>
class SequenceState final : public WaitingState<B> {
public:
    SequenceState(reactor::Scheduler& sched, std::source_location where, Future<B> second)
        : WaitingState<B>(sched, where, false), second_(std::move(second)) {}

    void start(State<A>& first) { this->link_.template connect<&SequenceState::on_first>(first); }

private:
    void on_first(State<A>& first) {
        if (!this->pending()) return;
        if (first.status() != Status::done) return this->finish_like(first);
        Future<B> second = std::exchange(second_, {});
        this->link_.template connect<&State<B>::adopt>(Access::state(second));
    }

    void destroy_payload() noexcept override {
        second_ = {};
        tracked_.reset();
    }

    Future<B> second_;
    std::optional<Tracked> tracked_{std::in_place};
};

template <class A, class B>
Future<B> sequence(const Future<A>& a, const Future<B>& b,
                   std::source_location where = std::source_location::current()) {
    return futures::detail::launch<SequenceState<A, B>>(a.scheduler(), where, b).start(Access::state(a));
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_link_wakes_its_owner_from_the_loop_and_can_be_connected_again) {
    VirtualLoop loop(backend_under_test());
    Future<int> a(loop.sched);
    Future<int> b(loop.sched);
    Future<int> both = sequence(a, b);
    a.set_result(1);
    b.set_result(2);
    BOOST_TEST(!both.done());  // never woken inline
    loop.sched.run_once();
    BOOST_TEST(!both.done());  // woken by a, now linked to b (already done)
    loop.sched.run_once();
    BOOST_TEST(both.result() == 2);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(an_error_upstream_is_passed_on_and_counts_as_retrieved) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    Future<int> b(loop.sched);
    Future<int> both;
    {
        Future<int> a(loop.sched);
        both = sequence(a, b);
        a.set_exception(std::runtime_error("no a"));
    }
    loop.sched.run();
    BOOST_TEST(what(both.exception()) == "no a");
    BOOST_TEST(!b.done());  // skipped, not cancelled: the link never reached it
    BOOST_TEST(reports.size() == 0u);
    b.cancel();  // else CHECK_EMPTY rightly names it: a pending future left on the loop
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancellation_travels_along_the_link_to_what_it_leads_to_now) {
    VirtualLoop loop(backend_under_test());
    {
        Future<int> a(loop.sched);
        Future<int> b(loop.sched);
        Future<int> both = sequence(a, b);
        BOOST_TEST(both.cancel());
        BOOST_TEST(a.cancelled());  // linked to a: a gets the request
        BOOST_TEST(!b.done());
        loop.sched.run();
    }
    {
        Future<int> a(loop.sched);
        Future<int> b(loop.sched);
        Future<int> both = sequence(a, b);
        a.set_result(1);
        loop.sched.run();  // now linked to b
        BOOST_TEST(both.cancel());
        BOOST_TEST(b.cancelled());
        BOOST_TEST(!both.cancel());  // a second request finds it complete
        loop.sched.run();
        BOOST_TEST(both.cancelled());
    }
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_link_keeps_its_owner_alive_until_woken_but_not_its_upstream) {
    VirtualLoop loop(backend_under_test());
    Future<int> a(loop.sched);
    Future<int> b(loop.sched);
    (void)sequence(a, b);  // no handle left: a's waiter list holds the state
    BOOST_TEST(Tracked::live == 1);
    a.set_result(1);
    b.set_result(2);
    loop.sched.run();  // woken by a, then by b: nothing holds it any more
    BOOST_TEST(Tracked::live == 0);

    Future<int> c(loop.sched);
    Future<int> d(loop.sched);
    Future<int> both = sequence(c, d);
    c = Future<int>();  // the link holds c weakly: it dies (and its waiter list with it)
    BOOST_TEST(Tracked::live == 1);  // `both` still has a handle
    BOOST_TEST(both.cancel());  // finds the link dead: nothing upstream to cancel
    loop.sched.run();
    BOOST_TEST(!d.done());
    both = Future<int>();
    BOOST_TEST(Tracked::live == 0);
    d.cancel();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(death_cuts_the_link_and_destroys_the_payload_at_once) {
    VirtualLoop loop(backend_under_test());
    Future<int> a(loop.sched);
    Future<int> b(loop.sched);
    Future<int> both = sequence(a, b);
    a.set_result(1);
    loop.sched.run();  // linked to b now; b's waiter list holds the state
    b.cancel();
    loop.sched.run();
    BOOST_TEST(both.cancelled());
    both = Future<int>();
    BOOST_TEST(Tracked::live == 0);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(launch_frees_the_state_when_start_throws) {
    VirtualLoop loop(backend_under_test());
    struct Throwing final : State<int> {
        Throwing(reactor::Scheduler& sched, std::source_location where) : State<int>(sched, where, false) {}
        void start() { throw std::invalid_argument("no start"); }
        Tracked tracked;
    };
    BOOST_CHECK_THROW((void)futures::detail::launch<Throwing>(loop.sched, std::source_location::current()).start(),
                      std::invalid_argument);
    BOOST_TEST(Tracked::live == 0);
    CHECK_EMPTY(loop.sched);
}
