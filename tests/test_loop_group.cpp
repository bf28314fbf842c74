// SPDX-License-Identifier: MIT
// LoopGroup: N Schedulers, each on a thread of its own; per-loop options,
// pinning, run() on the calling thread, the end of each loop on its own
// thread (drain, refuse posts, close), an exception out of a loop reported on
// that loop's handler, a loop blocked in a callback, and bad calls refused.
// Real threads; nothing here depends on how long anything takes: threads meet
// through posts, latches and joins.
//
// CTest runs the suite once per selector backend (REACTOR_TEST_BACKEND), and
// under ThreadSanitizer in .ci/run.
#include <boost/test/unit_test.hpp>

#include <sched.h>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <reactor/loop_group.hpp>
#include <reactor/scheduler.hpp>

#include "support/backends.hpp"

namespace {

using namespace std::chrono_literals;
using reactor::ErrorContext;
using reactor::LoopGroup;
using reactor::LoopGroupOptions;
using reactor::Scheduler;
using reactor_test::backend_under_test;
using reactor_test::on;

LoopGroupOptions with_loops(std::size_t n) {
    LoopGroupOptions o;
    o.loops = n;
    o.loop_options = [](std::size_t) { return on(backend_under_test()); };
    return o;
}

// What a loop's exception handler received, from whichever thread.
struct Reports {
    std::mutex mutex;
    std::vector<std::string> lines;
    void add(const ErrorContext& ctx) {
        std::string line = ctx.message;
        if (ctx.exception) {
            try {
                std::rethrow_exception(ctx.exception);
            } catch (const std::exception& e) {
                line += std::string(": ") + e.what();
            }
        }
        std::lock_guard lock(mutex);
        lines.push_back(line);
    }
    bool has(const std::string& part) {
        std::lock_guard lock(mutex);
        for (const auto& l : lines)
            if (l.find(part) != std::string::npos) return true;
        return false;
    }
};

// A real selector that throws EBADF from wait() once told to: the loop's
// state is broken, so run_forever() throws out (Scheduler::kWaitFailureLimit).
class BreakableSelector final : public reactor::Selector {
public:
    explicit BreakableSelector(std::shared_ptr<std::atomic<bool>> broken)
        : real_(reactor::make_selector(backend_under_test())), broken_(std::move(broken)) {}
    std::string_view name() const noexcept override { return "breakable"; }
    void set_interest(int fd, reactor::Interest interest) override { real_->set_interest(fd, interest); }
    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<reactor::FdEvent>& out) override {
        if (broken_->load()) throw std::system_error(EBADF, std::generic_category(), "wait");
        real_->wait(timeout, out);
    }
    bool has_pending_changes() const noexcept override { return real_->has_pending_changes(); }
    bool may_report_closed_fds() const noexcept override { return real_->may_report_closed_fds(); }

private:
    std::unique_ptr<reactor::Selector> real_;
    std::shared_ptr<std::atomic<bool>> broken_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(loop_group)

BOOST_AUTO_TEST_CASE(zero_loops_means_one_per_available_cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    BOOST_REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
    BOOST_TEST(LoopGroup::available_cpus() == static_cast<std::size_t>(CPU_COUNT(&set)));
    LoopGroup by_default;
    BOOST_TEST(by_default.size() == LoopGroup::available_cpus());
    LoopGroup three(with_loops(3));
    BOOST_TEST(three.size() == 3u);
    BOOST_TEST(&three.loop(0) != &three.loop(1));
}

BOOST_AUTO_TEST_CASE(each_loop_runs_on_a_thread_of_its_own_until_stopped) {
    constexpr std::size_t kLoops = 3;
    LoopGroup group(with_loops(kLoops));
    std::vector<std::thread::id> ran_on(kLoops);
    std::vector<std::optional<std::size_t>> index_seen(kLoops);
    std::latch all_ran(kLoops);
    group.start();
    for (std::size_t i = 0; i < kLoops; ++i) {
        group.loop(i).call_soon_threadsafe([&, i] {
            ran_on[i] = std::this_thread::get_id();
            index_seen[i] = group.current_index();
            all_ran.count_down();
        });
    }
    all_ran.wait();
    group.stop();
    for (std::size_t i = 0; i < kLoops; ++i) {
        BOOST_TEST((ran_on[i] != std::this_thread::get_id()));
        for (std::size_t j = 0; j < i; ++j) BOOST_TEST((ran_on[i] != ran_on[j]));
        BOOST_TEST((index_seen[i] == i));
    }
    BOOST_TEST(!group.current_index());
    // Ended loops refuse posts: the callback comes back to its poster.
    bool refused = !group.loop(1).try_call_soon_threadsafe([] {});
    BOOST_TEST(refused);
    group.stop();  // twice: harmless
}

BOOST_AUTO_TEST_CASE(loop_options_are_asked_per_index) {
    LoopGroupOptions o;
    o.loops = 3;
    std::vector<std::size_t> asked;
    o.loop_options = [&](std::size_t i) {
        asked.push_back(i);
        auto opts = on(backend_under_test());
        opts.debug = (i == 1);
        return opts;
    };
    LoopGroup group(std::move(o));
    BOOST_TEST(asked == (std::vector<std::size_t>{0, 1, 2}), boost::test_tools::per_element());
    BOOST_TEST(!group.loop(0).debug());
    BOOST_TEST(group.loop(1).debug());
    BOOST_TEST(group.loop(1).selector().name() == group.loop(0).selector().name());
}

BOOST_AUTO_TEST_CASE(pinned_loops_run_on_one_cpu_each) {
    std::vector<int> allowed;
    cpu_set_t set;
    CPU_ZERO(&set);
    BOOST_REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) allowed.push_back(c);
    LoopGroupOptions o = with_loops(3);
    o.pin_threads = true;
    LoopGroup group(std::move(o));
    std::vector<std::vector<int>> cpus_of(3);
    std::latch all_ran(3);
    group.start();
    for (std::size_t i = 0; i < 3; ++i) {
        group.loop(i).call_soon_threadsafe([&, i] {
            cpu_set_t mine;
            CPU_ZERO(&mine);
            if (::sched_getaffinity(0, sizeof mine, &mine) == 0)
                for (int c = 0; c < CPU_SETSIZE; ++c)
                    if (CPU_ISSET(c, &mine)) cpus_of[i].push_back(c);
            all_ran.count_down();
        });
    }
    all_ran.wait();
    group.stop();
    for (std::size_t i = 0; i < 3; ++i)
        BOOST_TEST(cpus_of[i] == (std::vector<int>{allowed[i % allowed.size()]}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(run_makes_the_calling_thread_loop_zero) {
    LoopGroup group(with_loops(2));
    std::thread::id loop0_thread;
    std::optional<std::size_t> loop0_index;
    // Loop 0 (this thread) asks loop 1 to stop the group: a stop from a loop.
    group.loop(0).call_soon([&] {
        loop0_thread = std::this_thread::get_id();
        loop0_index = group.current_index();
        group.loop(1).call_soon_threadsafe([&] { group.request_stop(); });
    });
    group.run();
    BOOST_TEST((loop0_thread == std::this_thread::get_id()));
    BOOST_TEST((loop0_index == 0u));
    BOOST_TEST(!group.current_index());
    BOOST_CHECK_THROW(group.run(), std::logic_error);
    BOOST_CHECK_THROW(group.start(), std::logic_error);
}

BOOST_AUTO_TEST_CASE(posts_made_before_stop_run_and_the_rest_ends_on_its_own_loop) {
    LoopGroup group(with_loops(2));
    Reports reports;
    group.loop(1).set_exception_handler([&](const ErrorContext& c) { reports.add(c); });
    std::atomic<int> ran{0};
    std::atomic<bool> far_timer_ran{false};
    std::thread::id loop1_thread;
    std::thread::id far_timer_destroyed_on;
    struct OnDestroy {
        std::thread::id* where;
        ~OnDestroy() { *where = std::this_thread::get_id(); }
    };
    group.start();
    group.loop(1).call_soon_threadsafe([&] {
        loop1_thread = std::this_thread::get_id();
        auto token = std::shared_ptr<OnDestroy>(new OnDestroy{&far_timer_destroyed_on});
        group.loop(1).call_later(1h, [&, token] { far_timer_ran = true; });
    });
    constexpr int kPosts = 1000;
    for (int i = 0; i < kPosts; ++i) group.loop(1).call_soon_threadsafe([&] { ++ran; });
    group.stop();
    // FIFO from this thread: every post made before stop() ran.
    BOOST_TEST(ran == kPosts);
    BOOST_TEST(!far_timer_ran);
    // The timer was dropped by close(), on the loop's own thread.
    BOOST_TEST((far_timer_destroyed_on == loop1_thread));
    // close() reported what was still alive.
    BOOST_TEST(reports.has("still alive at close: timer"));
}

BOOST_AUTO_TEST_CASE(drain_lets_a_loop_finish_what_it_has) {
    LoopGroupOptions o = with_loops(1);
    o.drain = 60s;  // a bound: the loop ends as soon as it has nothing left
    LoopGroup group(std::move(o));
    std::atomic<bool> timer_ran{false};
    group.loop(0).call_later(1ms, [&] { timer_ran = true; });
    group.loop(0).call_soon([&] { group.request_stop(); });
    group.start();
    group.stop();
    BOOST_TEST(timer_ran);
}

BOOST_AUTO_TEST_CASE(a_loop_that_throws_out_is_reported_on_its_handler_and_the_others_carry_on) {
    auto broken = std::make_shared<std::atomic<bool>>(false);
    LoopGroupOptions o = with_loops(2);
    o.loop_options = [broken](std::size_t i) {
        auto opts = on(backend_under_test());
        if (i == 1) opts.selector = std::make_unique<BreakableSelector>(broken);
        return opts;
    };
    LoopGroup group(std::move(o));
    Reports reports;
    group.loop(1).set_exception_handler([&](const ErrorContext& c) { reports.add(c); });
    group.start();
    std::promise<void> broke;
    group.loop(1).call_soon_threadsafe([&] {
        broken->store(true);
        broke.set_value();
    });
    broke.get_future().wait();
    // Loop 0 still serves.
    std::promise<int> answer;
    group.loop(0).call_soon_threadsafe([&] { answer.set_value(42); });
    BOOST_TEST(answer.get_future().get() == 42);
    group.stop();
    BOOST_TEST(reports.has("reactor: loop 1 of the group ended on an exception"));
    BOOST_TEST(reports.has("breakable backend"));
}

BOOST_AUTO_TEST_CASE(a_loop_blocked_in_a_callback_is_reported_in_debug_mode_and_stop_waits_for_it) {
    LoopGroupOptions o;
    o.loops = 2;
    o.loop_options = [](std::size_t) {
        auto opts = on(backend_under_test());
        opts.debug = true;
        opts.slow_callback_threshold = 1ms;
        return opts;
    };
    LoopGroup group(std::move(o));
    Reports reports;
    group.loop(1).set_exception_handler([&](const ErrorContext& c) { reports.add(c); });
    std::latch entered(1);
    std::latch release(1);
    std::atomic<bool> finished{false};
    group.start();
    group.loop(1).call_soon_threadsafe([&] {
        entered.count_down();
        release.wait();
        finished = true;
    });
    entered.wait();
    group.request_stop();
    // Blocked well past the threshold: the lower bound is what matters.
    std::this_thread::sleep_for(20ms);
    release.count_down();
    group.stop();
    BOOST_TEST(finished);
    BOOST_TEST(reports.has("slow"));
}

// Stopping while other threads post to every loop and one loop is blocked
// in a callback: no deadlock, and every posted callback is either run or
// destroyed (with call_soon_threadsafe, some are queued after a loop ended:
// those are destroyed with the group), none lost, none twice.
BOOST_AUTO_TEST_CASE(stop_with_posts_in_flight_and_a_blocked_loop) {
    std::atomic<long> alive{0};
    std::atomic<long> made{0};
    std::atomic<long> ran{0};
    struct Token {
        std::atomic<long>* alive;
        explicit Token(std::atomic<long>* a) : alive(a) { alive->fetch_add(1); }
        Token(const Token& o) : alive(o.alive) { alive->fetch_add(1); }
        ~Token() { alive->fetch_sub(1); }
    };
    {
        LoopGroup group(with_loops(3));
        group.start();
        std::latch blocked(1);
        std::latch release(1);
        group.loop(2).call_soon_threadsafe([&] {
            blocked.count_down();
            release.wait();
        });
        blocked.wait();
        std::atomic<bool> go{true};
        std::vector<std::thread> posters;
        for (int t = 0; t < 4; ++t) {
            posters.emplace_back([&, t] {
                for (int i = 0; i < 20'000 && go; ++i) {
                    Scheduler& target = group.loop(static_cast<std::size_t>(i + t) % 3);
                    ++made;
                    if (i % 2 == 0) {
                        target.call_soon_threadsafe([&, tok = Token(&alive)] { ++ran; });
                    } else {
                        (void)target.try_call_soon_threadsafe([&, tok = Token(&alive)] { ++ran; });
                    }
                }
            });
        }
        group.request_stop();
        release.count_down();
        group.stop();
        go = false;
        for (auto& p : posters) p.join();
        BOOST_TEST(ran <= made);
    }
    BOOST_TEST(alive == 0);
}

BOOST_AUTO_TEST_CASE(bad_calls_are_refused) {
    LoopGroup group(with_loops(2));
    BOOST_CHECK_THROW(group.loop(2), std::out_of_range);
    LoopGroupOptions negative = with_loops(1);
    negative.drain = -1s;
    BOOST_CHECK_THROW(LoopGroup{std::move(negative)}, std::invalid_argument);
    group.start();
    BOOST_CHECK_THROW(group.start(), std::logic_error);
    // stop() from one of the group's own loops would wait for itself.
    std::promise<std::string> what;
    group.loop(0).call_soon_threadsafe([&] {
        try {
            group.stop();
            what.set_value("no error");
        } catch (const std::logic_error& e) {
            what.set_value(e.what());
        }
    });
    const std::string message = what.get_future().get();
    BOOST_TEST(message.find("called from loop 0 of the same group") != std::string::npos, message);
    // The destructor stops and joins.
}

BOOST_AUTO_TEST_SUITE_END()
