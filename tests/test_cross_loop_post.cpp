// SPDX-License-Identifier: MIT
// Posting across loops (call_soon_threadsafe): one multi-producer queue taken
// whole by the loop each iteration; the eventfd written only by the first
// post since the loop last took the queue, and only while the loop is asleep
// in its selector. So: every post runs once, in each sender's order; a busy
// loop costs its posters a small fraction of a write per post; a sleeping
// loop is always woken (two loops playing ping-pong never hang); a loop that
// has ended refuses try_call_soon_threadsafe.
//
// Counts of wake-up writes are asserted as bounds, never exactly: how many
// posts find the loop asleep depends on the machine. CTest runs the suite once
// per selector backend (REACTOR_TEST_BACKEND), and under ThreadSanitizer in
// .ci/run.
#include <boost/test/unit_test.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <reactor/loop_group.hpp>
#include <reactor/loop_stats.hpp>
#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::Handle;
using reactor::LoopGroup;
using reactor::LoopGroupOptions;
using reactor::Scheduler;
using reactor_test::backend_under_test;
using reactor_test::on;

// A guard far beyond any real run: a lost post fails the test instead of
// hanging it.
constexpr auto kGuard = 120s;

}  // namespace

BOOST_AUTO_TEST_SUITE(cross_loop_post)

// The loop never sleeps: a callback reschedules itself until every post has
// arrived. Posts are taken in batches, and almost none of them writes.
BOOST_AUTO_TEST_CASE(eight_threads_times_100000_posts_to_a_busy_loop) {
    Scheduler s(on(backend_under_test()));
    constexpr int kThreads = 8;
    constexpr int kPerThread = 100'000;
    constexpr std::uint64_t kPosts = std::uint64_t{kThreads} * kPerThread;
    std::array<std::vector<int>, kThreads> seen;  // loop thread only
    for (auto& v : seen) v.reserve(kPerThread);
    std::uint64_t received = 0;
    std::uint64_t spins = 0;
    bool timed_out = false;
    Handle guard = s.call_later(kGuard, [&] {
        timed_out = true;
        s.stop();
    });
    std::function<void()> busy = [&] {
        ++spins;
        if (received == kPosts) {
            s.stop();
            return;
        }
        s.call_soon([&] { busy(); });
    };
    s.call_soon([&] { busy(); });
    std::atomic<bool> go{false};
    std::vector<std::thread> senders;
    for (int t = 0; t < kThreads; ++t) {
        senders.emplace_back([&, t] {
            while (!go.load()) std::this_thread::yield();
            for (int i = 0; i < kPerThread; ++i) {
                s.call_soon_threadsafe([&, t, i] {
                    seen[static_cast<std::size_t>(t)].push_back(i);
                    ++received;
                });
            }
        });
    }
    // The senders start once the loop is busy (its first callback runs).
    s.call_soon([&] { go = true; });
    s.run_forever();
    for (auto& th : senders) th.join();
    guard.cancel();
    BOOST_TEST(!timed_out);
    BOOST_TEST(received == kPosts);
    for (int t = 0; t < kThreads; ++t) {
        const auto& v = seen[static_cast<std::size_t>(t)];
        BOOST_REQUIRE(v.size() == static_cast<std::size_t>(kPerThread));
        bool in_order = true;
        for (int i = 0; i < kPerThread; ++i) in_order = in_order && v[static_cast<std::size_t>(i)] == i;
        BOOST_TEST(in_order, "sender " << t << " out of order");
    }
    const reactor::LoopStats st = s.stats();
    BOOST_TEST(st.posts_taken == kPosts);
    BOOST_TEST(st.wakeup_writes < kPosts / 10, st.wakeup_writes << " wake-up writes for " << kPosts << " posts");
    BOOST_TEST_MESSAGE("busy loop: " << kPosts << " posts, " << st.wakeup_writes << " wake-up writes, " << spins
                                     << " busy iterations");
    const std::string text = reactor::format_stats(st);
    BOOST_TEST(text.find("loop posts from other threads: 800000 taken, ") != std::string::npos, text);
    s.run();
    CHECK_EMPTY(s);
}

// A real selector that says when the loop has entered a wait that may
// block: the loop announced it was asleep just before (its inbox's asleep flag).
class SleepReportingSelector final : public reactor::Selector {
public:
    struct Sleeps {
        std::mutex mutex;
        std::condition_variable changed;
        int count = 0;
    };
    explicit SleepReportingSelector(std::shared_ptr<Sleeps> sleeps)
        : real_(reactor::make_selector(backend_under_test())), sleeps_(std::move(sleeps)) {}
    std::string_view name() const noexcept override { return real_->name(); }
    void set_interest(int fd, reactor::Interest interest) override { real_->set_interest(fd, interest); }
    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<reactor::FdEvent>& out) override {
        if (timeout != std::chrono::nanoseconds::zero()) {
            std::lock_guard lock(sleeps_->mutex);
            ++sleeps_->count;
            sleeps_->changed.notify_all();
        }
        real_->wait(timeout, out);
    }
    bool has_pending_changes() const noexcept override { return real_->has_pending_changes(); }
    bool may_report_closed_fds() const noexcept override { return real_->may_report_closed_fds(); }

private:
    std::unique_ptr<reactor::Selector> real_;
    std::shared_ptr<Sleeps> sleeps_;
};

// A loop asleep in its selector with nothing else to wake it is woken by a
// post, every time: each post is made once the loop is known to be asleep,
// so each one writes the eventfd.
BOOST_AUTO_TEST_CASE(a_sleeping_loop_is_woken_by_each_lone_post) {
    auto sleeps = std::make_shared<SleepReportingSelector::Sleeps>();
    LoopGroupOptions o;
    o.loops = 1;
    o.loop_options = [sleeps](std::size_t) {
        auto opts = on(backend_under_test());
        opts.selector = std::make_unique<SleepReportingSelector>(sleeps);
        return opts;
    };
    LoopGroup group(std::move(o));
    group.start();
    constexpr int kRounds = 50;
    int seen_sleeps = 0;
    for (int i = 0; i < kRounds; ++i) {
        {
            std::unique_lock lock(sleeps->mutex);
            sleeps->changed.wait(lock, [&] { return sleeps->count > seen_sleeps; });
            seen_sleeps = sleeps->count;
        }
        std::promise<void> ran;
        group.loop(0).call_soon_threadsafe([&] { ran.set_value(); });
        ran.get_future().wait();
    }
    std::promise<reactor::LoopStats> stats;
    group.loop(0).call_soon_threadsafe([&] { stats.set_value(group.loop(0).stats()); });
    const reactor::LoopStats st = stats.get_future().get();
    group.stop();
    BOOST_TEST(st.posts_taken == kRounds + 1u);
    BOOST_TEST(st.wakeup_writes >= static_cast<std::uint64_t>(kRounds));
    BOOST_TEST(st.wakeup_writes <= st.posts_taken);
}

// Two loops posting to each other, one message in flight at a time: each
// receiver is asleep when its message comes. A lost wake-up would hang the
// game (and fail it by the guard); the order of messages is kept.
BOOST_AUTO_TEST_CASE(two_loops_play_ping_pong_without_a_lost_wakeup) {
    LoopGroupOptions o;
    o.loops = 2;
    o.loop_options = [](std::size_t) { return on(backend_under_test()); };
    LoopGroup group(std::move(o));
    Scheduler& a = group.loop(0);
    Scheduler& b = group.loop(1);
    constexpr int kRounds = 10'000;
    std::vector<int> a_seen;  // loop a only
    std::vector<int> b_seen;  // loop b only
    std::promise<void> finished;
    std::function<void(int)> ping;  // runs on a
    std::function<void(int)> pong;  // runs on b
    ping = [&](int n) {
        a_seen.push_back(n);
        if (n == kRounds) {
            finished.set_value();
            return;
        }
        b.call_soon_threadsafe([&, n] { pong(n + 1); });
    };
    pong = [&](int n) {
        b_seen.push_back(n);
        a.call_soon_threadsafe([&, n] { ping(n + 1); });
    };
    group.start();
    a.call_soon_threadsafe([&] { ping(0); });
    auto done = finished.get_future();
    BOOST_REQUIRE(done.wait_for(kGuard) == std::future_status::ready);
    group.stop();
    BOOST_REQUIRE(a_seen.size() == kRounds / 2 + 1u);
    BOOST_REQUIRE(b_seen.size() == kRounds / 2u);
    bool in_order = true;
    for (std::size_t i = 0; i < a_seen.size(); ++i) in_order = in_order && a_seen[i] == static_cast<int>(2 * i);
    for (std::size_t i = 0; i < b_seen.size(); ++i) in_order = in_order && b_seen[i] == static_cast<int>(2 * i + 1);
    BOOST_TEST(in_order);
}

// try_call_soon_threadsafe: taken while the loop takes posts, refused (the
// callback left with its caller, unrun and undestroyed) once it refuses them.
BOOST_AUTO_TEST_CASE(try_post_is_refused_after_refuse_posts) {
    Scheduler s(on(backend_under_test()));
    int ran = 0;
    BOOST_TEST(s.try_call_soon_threadsafe([&] { ++ran; }));
    s.refuse_posts();
    auto token = std::make_shared<int>(7);
    reactor::Callback cb([&, token] { ++ran; });
    BOOST_TEST(!s.try_call_soon_threadsafe(std::move(cb)));
    BOOST_TEST(token.use_count() == 2);  // still in cb: left to its caller
    // Already queued posts still run, and plain call_soon_threadsafe still queues.
    s.call_soon_threadsafe([&] { ++ran; });
    s.run();
    BOOST_TEST(ran == 2);
    CHECK_EMPTY(s);
}

// try_send_home (what a ForeignPtr sends home): taken even once the loop
// refuses posts, and run or destroyed by the loop itself; refused only once
// a group's loop has finished (after its close(), on its own thread).
BOOST_AUTO_TEST_CASE(send_home_is_taken_until_the_loop_has_finished) {
    Scheduler s(on(backend_under_test()));
    s.refuse_posts();
    int ran = 0;
    BOOST_TEST(s.try_send_home([&] { ++ran; }));
    auto token = std::make_shared<int>(7);
    BOOST_TEST(s.try_send_home([token] {}));
    BOOST_TEST(token.use_count() == 2);
    s.run();
    BOOST_TEST(ran == 1);
    BOOST_TEST(token.use_count() == 1);
    reactor::LoopGroupOptions o;
    o.loops = 1;
    o.loop_options = [](std::size_t) { return on(backend_under_test()); };
    reactor::LoopGroup group(o);
    group.start();
    group.stop();
    reactor::Callback cb([token] {});
    BOOST_TEST(!group.loop(0).try_send_home(std::move(cb)));
    BOOST_TEST(token.use_count() == 2);  // still in cb: left to its caller
    BOOST_CHECK_THROW((void)s.try_send_home(reactor::Callback()), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
