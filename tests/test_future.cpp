// SPDX-License-Identifier: MIT
// Future<T> tests: the state machine (pending -> done | failed | cancelled), its
// misuse errors, done-callbacks (scheduled with call_soon in registration order,
// never inline), the "exception was never retrieved" report, and the per-thread
// pool the states' memory comes from.
//
// Each test records what happened in a bag and asserts exact order, and ends by
// checking that the scheduler holds nothing (CHECK_EMPTY).

#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include <futures/futures.hpp>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "support/futures_util.hpp"
#include "support/virtual_time.hpp"

namespace {

using futures::CancelledError;
using futures::Future;
using futures::InvalidStateError;
using futures::Status;
using reactor_test::Reports;
using reactor_test::what;
using Bag = std::vector<std::string>;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;

// The memory block behind a future (its state).
template <class T>
const void* block_of(const Future<T>& f) {
    return futures::detail::Access::base(f).get();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(state_machine)

BOOST_AUTO_TEST_CASE(pending_future_refuses_to_be_read) {
    VirtualLoop loop(backend_under_test());
    Future<int> f(loop.sched);
    BOOST_TEST(f.valid());
    BOOST_TEST(!f.done());
    BOOST_TEST((f.status() == Status::pending));
    BOOST_CHECK_THROW(f.result(), InvalidStateError);
    BOOST_CHECK_THROW(f.exception(), InvalidStateError);
    f.cancel();  // else CHECK_EMPTY rightly names it: a pending future left on the loop
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(set_result_then_result) {
    VirtualLoop loop(backend_under_test());
    Future<std::string> f(loop.sched);
    f.set_result("hello");
    BOOST_TEST(f.done());
    BOOST_TEST(!f.failed());
    BOOST_TEST(!f.cancelled());
    BOOST_TEST(f.result() == "hello");
    BOOST_TEST(!f.exception());
    Future<void> v(loop.sched);
    v.set_result();
    BOOST_CHECK_NO_THROW(v.result());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(second_completion_is_an_invalid_state_error) {
    VirtualLoop loop(backend_under_test());
    Future<int> f(loop.sched);
    f.set_result(1);
    BOOST_CHECK_THROW(f.set_result(2), InvalidStateError);
    BOOST_CHECK_THROW(f.set_exception(std::runtime_error("late")), InvalidStateError);
    BOOST_TEST(f.result() == 1);  // unchanged
    BOOST_TEST(!f.cancel());      // too late to cancel: false, nothing changes
    BOOST_TEST(f.result() == 1);

    Future<int> c(loop.sched);
    BOOST_TEST(c.cancel());
    BOOST_CHECK_THROW(c.set_result(3), InvalidStateError);
    BOOST_TEST(!c.cancel());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(invalid_state_error_names_the_future) {
    VirtualLoop loop(backend_under_test());
    Future<int> f(loop.sched);
    const auto line = __LINE__ - 1;
    f.set_result(1);
    try {
        f.set_result(2);
        BOOST_FAIL("no exception");
    } catch (const InvalidStateError& e) {
        std::string text = e.what();
        BOOST_TEST(text.find("test_future.cpp:" + std::to_string(line)) != std::string::npos, text);
        BOOST_TEST(text.find("already done") != std::string::npos, text);
    }
}

BOOST_AUTO_TEST_CASE(failed_future_rethrows_the_same_exception) {
    VirtualLoop loop(backend_under_test());
    Future<int> f(loop.sched);
    auto error = std::make_exception_ptr(std::runtime_error("boom"));
    f.set_exception(error);
    BOOST_TEST(f.failed());
    BOOST_TEST((f.exception() == error));
    BOOST_CHECK_EXCEPTION(f.result(), std::runtime_error, [](const auto& e) { return std::string(e.what()) == "boom"; });
    BOOST_CHECK_THROW(f.set_exception(nullptr), std::invalid_argument);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(cancel_makes_result_throw_cancelled_error) {
    VirtualLoop loop(backend_under_test());
    Future<int> f(loop.sched);
    BOOST_TEST(f.cancel());
    BOOST_TEST(f.cancelled());
    BOOST_TEST(f.done());
    BOOST_CHECK_THROW(f.result(), CancelledError);
    BOOST_CHECK_THROW(f.exception(), CancelledError);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(completing_with_cancelled_error_means_cancelled) {
    VirtualLoop loop(backend_under_test());
    Future<int> f(loop.sched);
    f.set_exception(CancelledError("stopped by the user"));
    BOOST_TEST(f.cancelled());
    BOOST_CHECK_EXCEPTION(f.result(), CancelledError,
                          [](const auto& e) { return std::string(e.what()) == "stopped by the user"; });
}

BOOST_AUTO_TEST_CASE(empty_future_throws_on_use) {
    Future<int> f;
    BOOST_TEST(!f.valid());
    BOOST_CHECK_THROW(f.done(), InvalidStateError);
    BOOST_CHECK_THROW(f.result(), InvalidStateError);
    BOOST_CHECK_THROW(f.cancel(), InvalidStateError);
    BOOST_CHECK_THROW((void)f.then([](int) {}), InvalidStateError);
    BOOST_TEST(!f.remove_done_callback(futures::CallbackId{0}));
}

BOOST_AUTO_TEST_CASE(copies_share_one_state) {
    VirtualLoop loop(backend_under_test());
    Future<int> a(loop.sched);
    Future<int> b = a;
    BOOST_TEST((a == b));
    b.set_result(7);
    BOOST_TEST(a.result() == 7);
    a.result() = 8;  // a reference into the shared slot
    BOOST_TEST(b.result() == 8);
    BOOST_TEST(!(a == Future<int>(loop.sched)));
}

BOOST_AUTO_TEST_CASE(move_only_values) {
    VirtualLoop loop(backend_under_test());
    Future<std::unique_ptr<int>> f(loop.sched);
    f.set_result(std::make_unique<int>(5));
    BOOST_TEST(*f.result() == 5);
    std::unique_ptr<int> taken = std::move(f.result());
    BOOST_TEST(*taken == 5);
}

BOOST_AUTO_TEST_CASE(derived_futures_complete_themselves) {
    VirtualLoop loop(backend_under_test());
    Future<int> src(loop.sched);
    Future<int> derived = src.then([](int v) { return v; });
    BOOST_CHECK_THROW(derived.set_result(1), InvalidStateError);
    BOOST_CHECK_THROW(derived.set_exception(std::runtime_error("x")), InvalidStateError);
    Future<void> timer = futures::sleep(loop.sched, std::chrono::seconds(1));
    BOOST_CHECK_THROW(timer.set_result(), InvalidStateError);
    BOOST_TEST(timer.cancel());
    BOOST_TEST(derived.cancel());
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(ready_and_exception_futures) {
    VirtualLoop loop(backend_under_test());
    auto r = futures::make_ready_future(loop.sched, std::string("x"));
    BOOST_TEST(r.result() == "x");
    auto v = futures::make_ready_future(loop.sched);
    BOOST_TEST(v.done());
    auto e = futures::make_exception_future<int>(loop.sched, std::logic_error("bad"));
    BOOST_TEST(e.failed());
    BOOST_TEST(what(e.exception()) == "bad");
    auto c = futures::make_exception_future<void>(loop.sched, CancelledError());
    BOOST_TEST(c.cancelled());
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(status_names) {
    BOOST_TEST(futures::to_string(Status::pending) == "pending");
    BOOST_TEST(futures::to_string(Status::done) == "done");
    BOOST_TEST(futures::to_string(Status::failed) == "failed");
    BOOST_TEST(futures::to_string(Status::cancelled) == "cancelled");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(done_callbacks)

BOOST_AUTO_TEST_CASE(never_run_inside_set_result) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> f(loop.sched);
    f.add_done_callback([&] { bag.push_back("cb"); });
    f.set_result(1);
    BOOST_TEST(bag.empty());  // scheduled, not run
    BOOST_TEST(loop.sched.ready_count() == 1u);
    loop.sched.run_once();
    BOOST_TEST(bag == Bag{"cb"});
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(never_run_inline_on_an_already_done_future) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> f(loop.sched);
    f.set_result(1);
    f.add_done_callback([&] { bag.push_back("late"); });
    BOOST_TEST(bag.empty());
    loop.sched.run_once();
    BOOST_TEST(bag == Bag{"late"});
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(run_in_registration_order_on_every_outcome) {
    for (Status outcome : {Status::done, Status::failed, Status::cancelled}) {
        VirtualLoop loop(backend_under_test());
        Bag bag;
        Future<int> f(loop.sched);
        for (int i = 0; i < 5; ++i) f.add_done_callback([&bag, i] { bag.push_back(std::to_string(i)); });
        if (outcome == Status::done) f.set_result(1);
        if (outcome == Status::failed) f.set_exception(std::runtime_error("x"));
        if (outcome == Status::cancelled) f.cancel();
        f.add_done_callback([&bag] { bag.push_back("after"); });
        loop.sched.run();
        BOOST_TEST(bag == (Bag{"0", "1", "2", "3", "4", "after"}));
        if (outcome == Status::failed) (void)f.exception();
        CHECK_EMPTY(loop.sched);
    }
}

BOOST_AUTO_TEST_CASE(callback_receives_the_future) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> f(loop.sched);
    f.add_done_callback([&](Future<int>& self) { bag.push_back(std::to_string(self.result())); });
    f.add_done_callback([&](const Future<int>& self) { bag.push_back(self == f ? "same" : "other"); });
    f.set_result(42);
    loop.sched.run();
    BOOST_TEST(bag == (Bag{"42", "same"}));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_callback_may_add_callbacks) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> f(loop.sched);
    f.add_done_callback([&] {
        bag.push_back("first");
        f.add_done_callback([&] { bag.push_back("added by first"); });
    });
    f.add_done_callback([&] { bag.push_back("second"); });
    f.set_result(1);
    loop.sched.run_once();
    BOOST_TEST(bag == (Bag{"first", "second"}));  // the new one runs next iteration
    loop.sched.run_once();
    BOOST_TEST(bag == (Bag{"first", "second", "added by first"}));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(remove_before_and_after_completion) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> f(loop.sched);
    auto a = f.add_done_callback([&] { bag.push_back("a"); });
    auto b = f.add_done_callback([&] { bag.push_back("b"); });
    auto c = f.add_done_callback([&] { bag.push_back("c"); });
    BOOST_TEST(f.remove_done_callback(a));
    BOOST_TEST(!f.remove_done_callback(a));  // only once
    f.set_result(1);
    BOOST_TEST(f.remove_done_callback(c));  // scheduled but not started: still removable
    loop.sched.run();
    BOOST_TEST(bag == Bag{"b"});
    BOOST_TEST(!f.remove_done_callback(b));  // already ran
    BOOST_TEST(!f.remove_done_callback(futures::CallbackId{99}));
    CHECK_EMPTY(loop.sched);
}

// A lone callback lives in the waiter list's own word; taken out (removed,
// or run), it leaves the index taken, so its id never names the next one.
BOOST_AUTO_TEST_CASE(a_lone_callbacks_id_outlives_it) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> f(loop.sched);
    auto a = f.add_done_callback([&] { bag.push_back("a"); });
    BOOST_TEST(f.remove_done_callback(a));
    auto b = f.add_done_callback([&] { bag.push_back("b"); });
    BOOST_TEST(b.index != a.index);
    BOOST_TEST(!f.remove_done_callback(a));  // not b
    f.set_result(1);
    loop.sched.run();
    BOOST_TEST(bag == Bag{"b"});

    Future<int> g(loop.sched);
    auto c = g.add_done_callback([&] { bag.push_back("c"); });
    g.set_result(2);
    loop.sched.run();  // c runs, and is taken out of the list's word
    auto d = g.add_done_callback([&] { bag.push_back("d"); });
    BOOST_TEST(d.index != c.index);
    BOOST_TEST(!g.remove_done_callback(c));
    BOOST_TEST(g.remove_done_callback(d));  // scheduled, not started
    loop.sched.run();
    BOOST_TEST(bag == (Bag{"b", "c"}));
    CHECK_EMPTY(loop.sched);
}

// Every future has a state: six words (a vtable, the loop, two counts, the
// error, the origin, the waiter list) and one for the status, the flags (a
// State<T>'s "has a value" and a task's among them) and the registry's
// index. A State<T> is that and its T; a task that, its link and its
// machine: an idle conversation is a task and its read's State<std::string>.
struct FiveWordMachine {
    futures::Step<void> resume() { return futures::finished; }
    std::array<void*, 5> words{};
};

BOOST_AUTO_TEST_CASE(a_futures_state_is_seven_words_and_its_value) {
    BOOST_TEST(sizeof(futures::detail::WaiterList) == sizeof(void*));
    BOOST_TEST(sizeof(futures::detail::State<void>) == 7 * sizeof(void*));
    BOOST_TEST(sizeof(futures::detail::State<std::string>) == 7 * sizeof(void*) + sizeof(std::string));
    BOOST_TEST(sizeof(futures::detail::TaskState<FiveWordMachine>) ==
               7 * sizeof(void*) + sizeof(futures::detail::Link) + sizeof(FiveWordMachine));
}

BOOST_AUTO_TEST_CASE(removed_callback_releases_its_captures_at_once) {
    VirtualLoop loop(backend_under_test());
    auto token = std::make_shared<int>(0);
    Future<int> f(loop.sched);
    auto id = f.add_done_callback([token] {});
    BOOST_TEST(token.use_count() == 2);
    f.remove_done_callback(id);
    BOOST_TEST(token.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(throwing_callback_goes_to_the_exception_handler) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    Bag bag;
    Future<int> f(loop.sched);
    f.add_done_callback([] { throw std::runtime_error("callback failed"); });
    const auto line = __LINE__ - 1;
    f.add_done_callback([&] { bag.push_back("still runs"); });
    f.set_result(1);
    loop.sched.run();
    BOOST_TEST(bag == Bag{"still runs"});
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(what(reports[0].exception) == "callback failed");
    BOOST_TEST(reports[0].origin_known);
    BOOST_TEST(reports[0].origin.line() == line);
    CHECK_EMPTY(loop.sched);
}

// The callbacks registered before a completion share one ready-queue entry,
// which runs them in order within that iteration.
BOOST_AUTO_TEST_CASE(callbacks_of_one_completion_share_one_ready_entry) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> f(loop.sched);
    for (int i = 0; i < 3; ++i) f.add_done_callback([&bag, i] { bag.push_back(std::to_string(i)); });
    f.set_result(1);
    BOOST_TEST(loop.sched.ready_count() == 1u);
    loop.sched.run_once();
    BOOST_TEST(bag == (Bag{"0", "1", "2"}));
    CHECK_EMPTY(loop.sched);
}

// A callback added to a future that is already done goes to the back of the
// ready queue, behind whatever was scheduled before it.
BOOST_AUTO_TEST_CASE(late_callbacks_queue_behind_earlier_work) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> f(loop.sched);
    f.set_result(1);
    f.add_done_callback([&] { bag.push_back("a"); });
    loop.sched.call_soon([&] { bag.push_back("other"); });
    f.add_done_callback([&] { bag.push_back("b"); });
    loop.sched.run_once();
    BOOST_TEST(bag == (Bag{"a", "other", "b"}));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(a_callback_may_remove_a_later_one_of_its_batch) {
    VirtualLoop loop(backend_under_test());
    Bag bag;
    Future<int> f(loop.sched);
    futures::CallbackId c;
    bool removed = false;
    f.add_done_callback([&] {
        bag.push_back("a");
        removed = f.remove_done_callback(c);
    });
    f.add_done_callback([&] { bag.push_back("b"); });
    c = f.add_done_callback([&] { bag.push_back("c"); });
    f.set_result(1);
    loop.sched.run();
    BOOST_TEST(removed);
    BOOST_TEST(bag == (Bag{"a", "b"}));
    CHECK_EMPTY(loop.sched);
}

// A Scheduler destroyed with a completion's callbacks still queued releases
// every one of them (and their captures), not only the first.
BOOST_AUTO_TEST_CASE(callbacks_queued_when_the_scheduler_goes_are_released) {
    auto token = std::make_shared<int>(0);
    {
        VirtualLoop loop(backend_under_test());
        Future<int> f(loop.sched);
        for (int i = 0; i < 3; ++i) f.add_done_callback([token] {});
        f.set_result(1);
        f = Future<int>();  // only the queued entry holds the state now
        BOOST_TEST(token.use_count() == 4);
    }
    BOOST_TEST(token.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(empty_callback_is_refused) {
    VirtualLoop loop(backend_under_test());
    Future<int> f(loop.sched);
    BOOST_CHECK_THROW(f.add_done_callback(reactor::Callback{}), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(never_retrieved)

BOOST_AUTO_TEST_CASE(reported_when_the_last_handle_goes_naming_the_creation_site) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    unsigned line = 0;
    {
        Future<int> f(loop.sched);
        line = __LINE__ - 1;
        f.set_exception(std::runtime_error("lost error"));
        BOOST_TEST(reports.size() == 0u);  // still reachable: not yet
    }
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(reports[0].message.find("never retrieved") != std::string::npos, reports[0].message);
    BOOST_TEST(what(reports[0].exception) == "lost error");
    BOOST_TEST(reports[0].origin_known);
    BOOST_TEST(reports[0].origin.line() == line);
    BOOST_TEST(std::string(reports[0].origin.file_name()).find("test_future.cpp") != std::string::npos);
    std::string line_text = reactor::describe(reports[0]);
    BOOST_TEST(line_text.find("lost error") != std::string::npos, line_text);
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(not_reported_once_retrieved) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    {
        Future<int> a(loop.sched);
        a.set_exception(std::runtime_error("a"));
        BOOST_CHECK_THROW(a.result(), std::runtime_error);
        Future<int> b(loop.sched);
        b.set_exception(std::runtime_error("b"));
        (void)b.exception();
        Future<int> c(loop.sched);
        c.set_exception(std::runtime_error("c"));
        c.add_done_callback([](Future<int>& self) { (void)self.exception(); });
        loop.sched.run();
    }
    BOOST_TEST(reports.size() == 0u);
}

BOOST_AUTO_TEST_CASE(cancelled_and_successful_futures_are_not_reported) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    {
        Future<int> a(loop.sched);
        a.cancel();
        Future<int> b(loop.sched);
        b.set_result(1);
        Future<int> never_completed(loop.sched);
        loop.sched.run();
    }
    BOOST_TEST(reports.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_callback_that_ignores_the_error_does_not_retrieve_it) {
    VirtualLoop loop(backend_under_test());
    Reports reports(loop.sched);
    {
        Future<int> f(loop.sched);
        f.add_done_callback([] {});
        f.set_exception(std::runtime_error("ignored"));
        loop.sched.run();
    }
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(what(reports[0].exception) == "ignored");
}

BOOST_AUTO_TEST_SUITE_END()

// The states' memory comes from a per-thread pool (futures/detail/state_pool.hpp).
// Other tests of this process use it too, so these count differences.
BOOST_AUTO_TEST_SUITE(state_pool)

using futures::detail::pooled_state_blocks;
using futures::detail::pooled_state_bytes;

BOOST_AUTO_TEST_CASE(a_freed_state_is_reused_by_the_next_state_of_its_size) {
    VirtualLoop loop(backend_under_test());
    Future<long> a(loop.sched);
    a.set_result(1);
    const void* block = block_of(a);
    const std::size_t before = pooled_state_blocks();
    a = Future<long>();
    BOOST_TEST(pooled_state_blocks() == before + 1);
#if defined(__SANITIZE_ADDRESS__)
    BOOST_TEST(__asan_address_is_poisoned(block));  // a stale access would be reported
#endif
    Future<long> b(loop.sched);
    BOOST_TEST(block_of(b) == block);
    BOOST_TEST(pooled_state_blocks() == before);
#if defined(__SANITIZE_ADDRESS__)
    BOOST_TEST(!__asan_address_is_poisoned(block));
#endif
    BOOST_TEST(!b.done());  // a fresh state, nothing left of the old one
    b.set_result(2);
    BOOST_TEST(b.result() == 2);
    CHECK_EMPTY(loop.sched);
}

// A state whose last handle went while a continuation still points back at it
// (weakly, for cancellation) keeps its memory until that link goes.
BOOST_AUTO_TEST_CASE(memory_held_by_a_weak_link_returns_to_the_pool_when_the_link_goes) {
    VirtualLoop loop(backend_under_test());
    Future<int> src(loop.sched);
    Future<int> next = src.then([](int v) { return v; });
    const void* block = block_of(src);
    const std::size_t before = pooled_state_blocks();
    src = Future<int>();  // dead, but `next` still links to it
    BOOST_TEST(pooled_state_blocks() == before);
    BOOST_TEST(next.cancel());  // finds the link dead, drops it: now the memory goes
    BOOST_TEST(pooled_state_blocks() == before + 1);
    Future<int> reuse(loop.sched);
    BOOST_TEST(block_of(reuse) == block);
    loop.sched.run();
    BOOST_TEST(next.cancelled());
    BOOST_TEST(!reuse.done());
    reuse.cancel();
    CHECK_EMPTY(loop.sched);
}

// A pooled block is no bigger than malloc's chunk for it can use: the pool's
// classes are 16k + 8 bytes, which fill a glibc chunk (its size word is the
// 8 bytes before the block). Classes of 16k bytes took 16 bytes more for
// every state whose size is 16k + 1 to 16k + 8. Measured by the block the
// state gives back to the pool (the class's size), not by
// malloc_usable_size: glibc hands out a bigger chunk than asked for when
// the free one it finds would leave a remainder too small to split.
template <class T>
void check_block_fills_its_chunk(reactor::Scheduler& sched) {
    const std::size_t state = sizeof(futures::detail::SettableState<T>);
    std::size_t before = 0;
    {
        Future<T> f(sched);
        f.cancel();
        before = pooled_state_bytes();  // after f took its block, from the pool or not
    }
    const std::size_t block = pooled_state_bytes() - before;
    BOOST_TEST_INFO("Future<" << typeid(T).name() << ">: a " << state << "-byte state, a " << block << "-byte block");
    BOOST_TEST(block >= state);
    BOOST_TEST(block < state + 16, "bytes beyond the state's own");
    BOOST_TEST((block + 8) % 16 == 0, "a block and malloc's size word fill a 16-byte multiple");
}

BOOST_AUTO_TEST_CASE(a_states_block_fills_its_malloc_chunk) {
    VirtualLoop loop(backend_under_test());
    check_block_fills_its_chunk<void>(loop.sched);
    check_block_fills_its_chunk<char>(loop.sched);
    check_block_fills_its_chunk<long>(loop.sched);
    check_block_fills_its_chunk<std::array<char, 12>>(loop.sched);
    check_block_fills_its_chunk<std::array<char, 20>>(loop.sched);
    check_block_fills_its_chunk<std::string>(loop.sched);
    check_block_fills_its_chunk<std::array<char, 100>>(loop.sched);
    loop.sched.run();
    CHECK_EMPTY(loop.sched);
}

// A done-callback's box is sized to its callable, from the pool: a lambda
// of one pointer takes a block smaller than a reactor::Callback alone (the
// box held one of those, inline buffer and all).
BOOST_AUTO_TEST_CASE(a_done_callbacks_box_is_sized_to_its_callable) {
    VirtualLoop loop(backend_under_test());
    Future<void> f(loop.sched);
    int runs = 0;
    auto count = [&runs] { ++runs; };
    f.add_done_callback(count);
    const std::size_t before = pooled_state_bytes();
    f.set_result();
    loop.sched.run();
    BOOST_TEST(runs == 1);
    const std::size_t box = pooled_state_bytes() - before;  // the box, back in the pool
    BOOST_TEST(box >= sizeof(futures::detail::UserCallbackOf<decltype(count)>));
    BOOST_TEST(box < sizeof(futures::detail::UserCallbackOf<decltype(count)>) + 16);
    BOOST_TEST(box < sizeof(reactor::Callback));
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_CASE(big_and_over_aligned_states_bypass_the_pool) {
    struct alignas(64) Wide {
        char bytes[64];
    };
    VirtualLoop loop(backend_under_test());
    const std::size_t before = pooled_state_blocks();
    {
        Future<std::array<char, 1024>> big(loop.sched);
        Future<Wide> wide(loop.sched);
        BOOST_TEST(reinterpret_cast<std::uintptr_t>(block_of(wide)) % alignof(Wide) == 0u);
        wide.set_result(Wide{});
    }
    BOOST_TEST(pooled_state_blocks() == before);
    CHECK_EMPTY(loop.sched);
}

// Chains and fan-outs built, run or abandoned, and built again on the reused
// memory: every value comes out right (and ASan sees no stale access).
BOOST_AUTO_TEST_CASE(chains_and_fan_outs_run_right_on_reused_memory) {
    constexpr int kLength = 1000;
    VirtualLoop loop(backend_under_test());
    for (int round = 0; round < 3; ++round) {
        {
            Future<int> abandoned(loop.sched);
            Future<int> tail = abandoned;
            for (int i = 0; i < kLength; ++i) tail = tail.then([](int v) { return v + 1; });
        }
        Future<int> src(loop.sched);
        Future<int> tail = src;
        for (int i = 0; i < kLength; ++i) tail = tail.then([](int v) { return v + 1; });
        int sum = 0;
        for (int i = 0; i < kLength; ++i) (void)src.then([&sum](int v) { sum += v; });
        src.set_result(round);
        loop.sched.run();
        BOOST_TEST(tail.result() == round + kLength);
        BOOST_TEST(sum == round * kLength);
        BOOST_TEST(pooled_state_blocks() >= std::size_t{kLength});
    }
    CHECK_EMPTY(loop.sched);
}

BOOST_AUTO_TEST_SUITE_END()
