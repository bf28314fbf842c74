// SPDX-License-Identifier: MIT
// call_soon_threadsafe: posts from other threads run once each, in each
// thread's order, on the loop thread; a post wakes a loop blocked with nothing
// to do; a post from the loop thread itself counts as work. The loop here is a
// real one (but in the last case): other threads meet it for real.
//
// Each case ends by checking that the scheduler holds nothing (CHECK_EMPTY).
// CTest runs the suite once per selector backend (REACTOR_TEST_BACKEND).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <stdexcept>
#include <thread>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/virtual_time.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::Clock;
using reactor::Handle;
using reactor::Scheduler;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::on;

}  // namespace

// ============================================================ threads

BOOST_AUTO_TEST_SUITE(threadsafe)

BOOST_AUTO_TEST_CASE(four_threads_times_ten_thousand_posts_run_once_each_in_order) {
    Scheduler s(on(backend_under_test()));
    constexpr int kThreads = 4;
    constexpr int kPerThread = 10'000;
    std::array<std::vector<int>, kThreads> seen;  // touched by the loop thread only
    int total = 0;
    const auto loop_thread = std::this_thread::get_id();
    bool all_on_loop_thread = true;
    // A safety net so a lost post fails the test instead of hanging it.
    bool timed_out = false;
    Handle guard = s.call_later(10s, [&] {
        timed_out = true;
        s.stop();
    });

    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThread; ++i) {
                s.call_soon_threadsafe([&, t, i] {
                    seen[static_cast<std::size_t>(t)].push_back(i);
                    if (std::this_thread::get_id() != loop_thread) all_on_loop_thread = false;
                    if (++total == kThreads * kPerThread) s.stop();
                });
            }
        });
    }
    s.run_forever();
    for (auto& th : threads) th.join();
    BOOST_TEST(!timed_out);
    BOOST_TEST(total == kThreads * kPerThread);
    BOOST_TEST(all_on_loop_thread);
    for (int t = 0; t < kThreads; ++t) {
        const auto& v = seen[static_cast<std::size_t>(t)];
        BOOST_TEST_CONTEXT("thread " << t) {
            BOOST_TEST(v.size() == static_cast<std::size_t>(kPerThread));
            BOOST_TEST(std::is_sorted(v.begin(), v.end()));
            BOOST_TEST((std::adjacent_find(v.begin(), v.end()) == v.end()));  // no duplicates
        }
    }
    BOOST_TEST(guard.cancel());
    CHECK_EMPTY(s);
}

// A loop kept busy by a call_soon chain alone calls no selector per
// iteration, and takes the posts every so many callbacks rather than at every
// iteration (Scheduler::take_posts_now): a post neither waits for the chain
// to end nor is taken in the middle of a batch. Posting from the loop thread
// itself makes the count exact.
BOOST_AUTO_TEST_CASE(a_loop_busy_with_callbacks_alone_takes_posts_within_a_bound) {
    Scheduler s(on(backend_under_test()));
    constexpr int kChain = 1000;
    constexpr int kBound = 64 + 1;  // the budget, and the hop that spent it
    int hops = 0;
    std::vector<int> posted_at;  // hops done when each post ran
    std::function<void()> hop = [&] {
        if (++hops % 200 == 1) s.call_soon_threadsafe([&] { posted_at.push_back(hops); });
        if (hops < kChain) s.call_soon(hop);
    };
    s.call_soon(hop);
    s.run();
    BOOST_TEST(hops == kChain);
    BOOST_REQUIRE(posted_at.size() == 5u);
    for (std::size_t i = 0; i < posted_at.size(); ++i) {
        const int at = static_cast<int>(i) * 200 + 1;
        BOOST_TEST_CONTEXT("post made at hop " << at) {
            BOOST_TEST(posted_at[i] > at);  // never in the batch that posted it
            BOOST_TEST(posted_at[i] <= at + kBound);
        }
    }
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(post_wakes_a_loop_blocked_with_nothing_to_do) {
    Scheduler s(on(backend_under_test()));
    std::atomic<bool> posted{false};
    const auto start = Clock::now();
    std::thread poster([&] {
        std::this_thread::sleep_for(30ms);
        posted = true;
        s.call_soon_threadsafe([&] { s.stop(); });
    });
    s.run_forever();  // no timers, no waiters: blocks in select until the post
    const auto elapsed = Clock::now() - start;
    poster.join();
    BOOST_TEST(posted.load());
    BOOST_TEST((elapsed >= 30ms));
    // No upper bound: with nothing to wait for, run_forever() would block
    // for ever unless the eventfd woke it (ctest's timeout would end the
    // test), and a bound in real time flakes on a loaded machine.
    const double ms = std::chrono::duration<double, std::milli>(elapsed).count();
    BOOST_TEST_MESSAGE("woken after " << ms << " ms");
    CHECK_EMPTY(s);
}

// Each wake-up of a loop asleep again must be seen (epoll watches the
// eventfd edge-triggered and never reads it back: every write is an edge).
// A lost one hangs the loop, and the poster's bounded wait fails the test.
BOOST_AUTO_TEST_CASE(every_post_wakes_a_loop_that_went_back_to_sleep) {
    Scheduler s(on(backend_under_test()));
    constexpr int kRounds = 300;
    std::atomic<int> ran{0};
    std::atomic<bool> lost{false};
    std::thread poster([&] {
        for (int i = 1; i <= kRounds && !lost; ++i) {
            s.call_soon_threadsafe([&] { ++ran; });
            const auto deadline = Clock::now() + 20s;
            while (ran.load() < i) {
                if (Clock::now() > deadline) {
                    lost = true;
                    break;
                }
                std::this_thread::yield();
            }
        }
        s.call_soon_threadsafe([&] { s.stop(); });
    });
    s.run_forever();  // nothing but the posts: asleep between two of them
    poster.join();
    BOOST_TEST(!lost.load());
    BOOST_TEST(ran.load() == kRounds);
    BOOST_TEST(s.stats().posts_taken == std::uint64_t{kRounds + 1});
    CHECK_EMPTY(s);
}

// The posts taken in one batch run in one place of the ready queue; while
// they run, those still to come are work, counted and listed one by one.
BOOST_AUTO_TEST_CASE(posts_of_one_batch_still_to_run_are_counted_and_listed) {
    Scheduler s(on(backend_under_test()));
    std::vector<int> order;
    std::size_t ready_seen = 0, posted_listed = 0;
    bool empty_seen = true;
    std::thread poster([&] {
        s.call_soon_threadsafe([&] {
            order.push_back(1);
            ready_seen = s.stats().ready;
            empty_seen = s.empty();
            for (const auto& item : s.live()) posted_listed += item.kind == reactor::LiveItem::Kind::posted;
        });
        s.call_soon_threadsafe([&] { order.push_back(2); });
        s.call_soon_threadsafe([&] { order.push_back(3); });
    });
    poster.join();  // all three are in the queue before the loop takes it
    s.run();
    BOOST_TEST(order == (std::vector<int>{1, 2, 3}), boost::test_tools::per_element());
    BOOST_TEST(ready_seen == 2u);
    BOOST_TEST(!empty_seen);
    BOOST_TEST(posted_listed == 2u);
    BOOST_TEST(s.stats().posts_taken == 3u);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(post_from_the_loop_thread_is_work) {
    VirtualLoop loop(backend_under_test());
    auto& s = loop.sched;
    int ran = 0;
    s.call_soon_threadsafe([&] { ++ran; });
    BOOST_TEST(!s.empty());  // posted counts as work: run() must not return early
    s.run();
    BOOST_TEST(ran == 1);
    CHECK_EMPTY(s);
}

// Posts keep only their targets' bytes in the loop's queue: small, whole
// inline buffers, boxed and move-only targets posted from another thread
// run in order; one that throws goes to the exception handler with where it
// was posted, and the rest of its batch runs.
BOOST_AUTO_TEST_CASE(posts_of_every_size_run_in_order_and_one_that_throws_is_reported) {
    Scheduler s(on(backend_under_test()));
    std::vector<int> order;
    std::vector<unsigned> reported_lines;
    s.set_exception_handler([&](const reactor::ErrorContext& ctx) { reported_lines.push_back(ctx.origin.line()); });
    const std::source_location thrower_where = std::source_location::current();
    std::thread poster([&] {
        s.call_soon_threadsafe([&order] { order.push_back(1); });
        s.call_soon_threadsafe([&order, pad = std::array<std::uint64_t, 5>{}] { order.push_back(2 + int(pad[0])); });
        s.call_soon_threadsafe([] { throw std::runtime_error("thrown by a post"); }, thrower_where);
        s.call_soon_threadsafe([&order, big = std::array<std::uint64_t, 16>{}] { order.push_back(3 + int(big[0])); });
        s.call_soon_threadsafe([&order, p = std::make_unique<int>(4)] { order.push_back(*p); });
    });
    poster.join();  // all in the queue before the loop takes it: one batch
    s.run();
    BOOST_TEST(order == (std::vector<int>{1, 2, 3, 4}), boost::test_tools::per_element());
    BOOST_TEST(reported_lines == (std::vector<unsigned>{thrower_where.line()}), boost::test_tools::per_element());
    BOOST_TEST(s.stats().posts_taken == 5u);
    CHECK_EMPTY(s);
}

// close() destroys the posts left unrun, each once, whatever its size.
BOOST_AUTO_TEST_CASE(close_destroys_each_post_left_once) {
    Scheduler s(on(backend_under_test()));
    s.set_exception_handler([](const reactor::ErrorContext&) {});  // close() reports the posts left
    auto small = std::make_shared<int>(0);
    auto boxed = std::make_shared<int>(0);
    bool ran = false;
    std::thread poster([&] {
        for (int i = 0; i < 300; ++i) {
            s.call_soon_threadsafe([small, &ran] { ran = true; });
            s.call_soon_threadsafe([boxed, &ran, big = std::array<std::uint64_t, 16>{}] { ran = big[0] == 0; });
        }
    });
    poster.join();
    BOOST_TEST(small.use_count() == 301);
    s.close();
    BOOST_TEST(small.use_count() == 1);
    BOOST_TEST(boxed.use_count() == 1);
    BOOST_TEST(!ran);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(an_empty_callback_is_refused) {
    Scheduler s(on(backend_under_test()));
    BOOST_CHECK_THROW(s.call_soon_threadsafe(reactor::Callback{}), std::invalid_argument);
    reactor::Callback empty;
    BOOST_CHECK_THROW((void)s.try_call_soon_threadsafe(std::move(empty)), std::invalid_argument);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()
