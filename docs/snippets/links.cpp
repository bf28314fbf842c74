// SPDX-License-Identifier: MIT
// docs/futures.md, "Inside": a new combinator is one short class built on
// detail::WaitingState (one Link) and detail::launch. tests/test_futures_links.cpp
// tests the same combinator's guarantees in depth; this one checks what the
// guide claims of it.
#include <source_location>
#include <stdexcept>
#include <utility>

#include <boost/test/unit_test.hpp>
#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>

namespace {

using futures::Future;
using futures::Status;
using futures::detail::Access;
using futures::detail::State;
using futures::detail::WaitingState;

// [snippet:sequence]
template <class A, class B>
class SequenceState final : public WaitingState<B> {
public:
    SequenceState(reactor::Scheduler& sched, std::source_location where, Future<B> second)
        : WaitingState<B>(sched, where, false), second_(std::move(second)) {}

    // [snippet:connect]
    void start(State<A>& first) { this->link_.template connect<&SequenceState::on_first>(first); }
    // [end-snippet:connect]

private:
    void on_first(State<A>& first) {
        if (!this->pending()) return;
        if (first.status() != Status::done) return this->finish_like(first);
        Future<B> second = std::exchange(second_, {});
        this->link_.template connect<&State<B>::adopt>(Access::state(second));
    }

    void destroy_payload() noexcept override { second_ = {}; }

    Future<B> second_;
};

template <class A, class B>
Future<B> sequence(const Future<A>& a, const Future<B>& b,
                   std::source_location where = std::source_location::current()) {
    return futures::detail::launch<SequenceState<A, B>>(a.scheduler(), where, b).start(Access::state(a));
}
// [end-snippet:sequence]

}  // namespace

BOOST_AUTO_TEST_SUITE(futures_md_inside)

BOOST_AUTO_TEST_CASE(sequence_completes_like_its_second_input) {
    reactor::Scheduler sched;
    Future<int> a(sched), b(sched);
    Future<int> both = sequence(a, b);
    a.set_result(1);
    b.set_result(2);
    BOOST_TEST(futures::run_until_complete(sched, both) == 2);
}

BOOST_AUTO_TEST_CASE(an_error_of_the_first_skips_the_second) {
    reactor::Scheduler sched;
    Future<int> a(sched), b(sched);
    Future<int> both = sequence(a, b);
    a.set_exception(std::runtime_error("no a"));
    BOOST_CHECK_THROW(futures::run_until_complete(sched, both), std::runtime_error);
    BOOST_TEST(!b.done());
}

BOOST_AUTO_TEST_CASE(cancelling_cancels_what_the_link_leads_to) {
    reactor::Scheduler sched;
    Future<int> a(sched), b(sched);
    Future<int> both = sequence(a, b);
    sched.run();  // linked to a
    BOOST_TEST(both.cancel());
    BOOST_TEST(a.cancelled());  // while it waits on the first input: that one
    BOOST_TEST(!b.done());

    Future<int> c(sched), d(sched);
    Future<int> then_d = sequence(c, d);
    c.set_result(1);
    sched.run();  // woken by c, now linked to d
    BOOST_TEST(then_d.cancel());
    BOOST_TEST(d.cancelled());  // once it waits on the second input: that one
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_SUITE_END()
