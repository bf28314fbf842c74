// SPDX-License-Identifier: MIT
// docs/testing.md: testing timer-heavy code on virtual time with the public
// kit (reactor/testing/): a VirtualLoop, scripted fd readiness, real fds and
// TimeHold, and the driver's errors.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/testing/virtual_loop.hpp>

using namespace std::chrono_literals;

namespace {

// [snippet:component]
// The code under test takes the Scheduler it runs on: it reads time only
// through sched.now() and waits only through timers and fd waiters.
class Reconnector {
public:
    Reconnector(reactor::Scheduler& sched, std::function<bool()> connect)
        : sched_(sched), connect_(std::move(connect)) {}

    // Tries now, then after 1 s, 2 s, 4 s, ... (at most 1 h apart), for a day.
    void start() {
        first_ = sched_.now();
        attempt();
    }
    bool gave_up() const { return gave_up_; }

private:
    void attempt() {
        if (connect_()) return;
        if (sched_.now() + delay_ - first_ > 24h) {
            gave_up_ = true;
            return;
        }
        sched_.call_later(delay_, [this] { attempt(); });
        delay_ = std::min<reactor::Duration>(delay_ * 2, 1h);
    }

    reactor::Scheduler& sched_;
    std::function<bool()> connect_;
    reactor::TimePoint first_{};
    reactor::Duration delay_ = 1s;
    bool gave_up_ = false;
};
// [end-snippet:component]

// [snippet:watchdog]
// Calls on_dead once `fd` (non-blocking) has stayed silent for 5 s.
class Watchdog {
public:
    Watchdog(reactor::Scheduler& sched, int fd, std::function<void()> on_dead)
        : sched_(sched), fd_(fd), on_dead_(std::move(on_dead)) {}
    void start() {
        sched_.add_reader(fd_, [this] {
            char buf[512];
            while (::read(fd_, buf, sizeof buf) > 0) {  // heard: drain, re-arm
            }
            arm();
        });
        arm();
    }

private:
    void arm() {
        timer_.cancel();
        timer_ = sched_.call_later(5s, [this] {
            sched_.remove_reader(fd_);
            on_dead_();
        });
    }
    reactor::Scheduler& sched_;
    int fd_;
    std::function<void()> on_dead_;
    reactor::Handle timer_;
};
// [end-snippet:watchdog]

}  // namespace

BOOST_AUTO_TEST_SUITE(testing_doc)

BOOST_AUTO_TEST_CASE(a_day_of_retries) {
    const auto started = std::chrono::steady_clock::now();
    // [snippet:day]
    reactor::testing::VirtualLoop loop;  // a Scheduler on virtual time: loop.sched
    std::vector<reactor::Duration> attempts;
    Reconnector reconnector(loop.sched, [&] {
        attempts.push_back(loop.clock.elapsed());  // virtual time since the loop was made
        return false;                              // the server never answers
    });
    reconnector.start();
    loop.sched.run();  // a day of virtual time, in milliseconds of real time

    // attempts: 0 s, 1 s, 3 s, 7 s, ..., 4095 s, then one an hour: 35 in all
    // loop.clock.elapsed() == 4095s + 22h, the last attempt
    // [end-snippet:day]
    BOOST_TEST(reconnector.gave_up());
    BOOST_REQUIRE(attempts.size() == 35u);
    BOOST_TEST((attempts[1] == 1s && attempts[3] == 7s && attempts[12] == 4095s && attempts[13] == 4095s + 1h));
    BOOST_TEST((loop.clock.elapsed() == 4095s + 22h));
    BOOST_TEST(loop.selector->real_blocks() == 0u);  // never slept for real
    BOOST_TEST((std::chrono::steady_clock::now() - started < 60s));  // a bound only: nothing near a day
}

BOOST_AUTO_TEST_CASE(scripted_readiness) {
    // [snippet:script]
    reactor::testing::VirtualLoop loop;
    const reactor::TimePoint t0 = loop.clock.now();
    const int fd = 900;  // no file behind it (its reads fail): the script alone answers for it
    loop.script().readable_at(fd, t0 + 3s);
    loop.script().readable_at(fd, t0 + 7s);
    reactor::Duration dead_at{};
    Watchdog watchdog(loop.sched, fd, [&] { dead_at = loop.clock.elapsed(); });
    watchdog.start();
    loop.sched.run();
    // dead_at == 12s: heard at 3 s and 7 s, then 5 s of silence
    // [end-snippet:script]
    BOOST_TEST((dead_at == 12s));
    BOOST_TEST(loop.script().pending() == 0u);
    BOOST_TEST(loop.sched.empty());
}

BOOST_AUTO_TEST_CASE(holding_time_for_real_io) {
    // [snippet:hold]
    reactor::testing::VirtualLoop loop;
    std::vector<std::string> order;
    loop.sched.call_later(1h, [&] { order.push_back("timer"); });

    reactor::testing::TimeHold hold = loop.hold_time();  // time stands still...
    std::thread worker([&] {
        std::this_thread::sleep_for(10ms);  // real work, on real time
        loop.sched.call_soon_threadsafe([&] {
            order.push_back("worker");
            hold.release();  // ...until the real work is in
        });
    });
    loop.sched.run();
    worker.join();
    // order == {"worker", "timer"}: without the hold, the 1 h timer would
    // have come first (nothing was ready, so time jumped)
    // [end-snippet:hold]
    BOOST_TEST(order == (std::vector<std::string>{"worker", "timer"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_stuck_test_fails_instead_of_hanging) {
    int fds[2];
    BOOST_REQUIRE(::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
    // [snippet:stuck]
    reactor::testing::VirtualLoop loop;
    loop.selector->set_real_wait_limit(100ms);  // default 5 s
    loop.sched.read_wait(fds[0], [] {});        // nobody will ever write
    std::string error;
    try {
        loop.sched.run();
    } catch (const std::runtime_error& e) {
        error = e.what();  // "VirtualSelector: the loop waits forever with nothing ready, ..."
    }
    // [end-snippet:stuck]
    BOOST_TEST(error.starts_with("VirtualSelector: the loop waits forever with nothing ready"), error);
    loop.sched.forget_fd(fds[0]);
    ::close(fds[0]);
    ::close(fds[1]);
}

BOOST_AUTO_TEST_SUITE_END()
