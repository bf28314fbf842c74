// SPDX-License-Identifier: MIT
// Scheduler fd waiters over real pipes and socketpairs, on every selector
// backend (tests/support/backends.hpp): one-shot and persistent waiters,
// replacement and removal from inside callbacks, and bad input (negative fd,
// fd >= FD_SETSIZE, an fd closed while registered, EINTR during the wait).
//
// Each test records what happened in a "bag", asserts exact order and counts,
// and ends by checking that the scheduler holds nothing (CHECK_EMPTY).
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/fd_limits.hpp"
#include "support/fds.hpp"


// A named namespace keeps these helpers out of the other suites' way.
namespace io_test {

using namespace std::chrono_literals;
using reactor::Backend;
using reactor::Clock;
using reactor::ErrorContext;
using reactor::Scheduler;
using Bag = std::vector<std::string>;

using reactor_test::ensure_fd_limit;
using reactor_test::Fd;
using reactor_test::on;
using reactor_test::Pipe;
using reactor_test::SocketPair;

// Turns a hang into a failure: if the test is still running after `limit`, it
// reports an error and keeps asking the loop to stop (call_soon_threadsafe) so
// that run()/run_forever()/run_once() return. Declare it after the Scheduler.
class Watchdog {
public:
    explicit Watchdog(Scheduler& s, std::chrono::milliseconds limit = 5s)
        : thread_([this, &s, limit] {
              std::unique_lock lock(mutex_);
              if (cv_.wait_for(lock, limit, [this] { return done_; })) return;
              fired_ = true;
              while (!cv_.wait_for(lock, 100ms, [this] { return done_; })) {
                  s.call_soon_threadsafe([&s] { s.stop(); });
              }
          }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        cv_.notify_one();
        thread_.join();
        BOOST_CHECK_MESSAGE(!fired_, "watchdog: the test hung and was stopped");
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    bool fired_ = false;  // written by the watchdog thread before done_ is read under mutex_
    std::thread thread_;  // last: starts once the members above exist
};

}  // namespace io_test

using namespace io_test;

// ============================================================ one-shot waiters

BOOST_AUTO_TEST_SUITE(oneshot)

BOOST_AUTO_TEST_CASE(read_wait_fires_once_and_is_removed_before_its_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p;
    p.put("abc");
    int calls = 0;
    std::size_t waiters_inside = 99;
    s.read_wait(p.r, [&] {
        ++calls;
        waiters_inside = s.waiter_count();  // already deregistered
    });
    BOOST_TEST(s.waiter_count() == 1u);
    s.run();  // the pipe stays readable (nothing read), yet it fires once
    BOOST_TEST(calls == 1);
    BOOST_TEST(waiters_inside == 0u);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(read_wait_may_reregister_itself) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p;
    std::vector<int> bag;
    int round = 0;
    std::function<void()> on_readable = [&] {
        char c;
        BOOST_TEST(::read(p.r, &c, 1) == 1);
        bag.push_back(c - '0');
        if (++round < 3) s.read_wait(p.r, [&] { on_readable(); });
    };
    s.read_wait(p.r, [&] { on_readable(); });
    p.put("0123");
    s.run();
    BOOST_TEST(bag == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
    BOOST_TEST(p.take() == 1);  // the fourth byte was never consumed
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(write_wait_fires_on_a_writable_socket) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    SocketPair sp;
    int calls = 0;
    s.write_wait(sp.a, [&] {
        ++calls;
        BOOST_TEST(::write(sp.a, "hi", 2) == 2);
    });
    s.run();
    BOOST_TEST(calls == 1);
    char buf[8] = {};
    BOOST_TEST(::read(sp.b, buf, sizeof buf) == 2);
    BOOST_TEST(std::string(buf, 2) == "hi");
    CHECK_EMPTY(s);
}

// One read slot and one write slot per fd, independent of each other.
BOOST_AUTO_TEST_CASE(read_and_write_waiters_on_one_fd_are_independent) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    SocketPair sp;
    Bag bag;
    s.read_wait(sp.a, [&] {
        bag.push_back("read");
        char c;
        BOOST_TEST(::read(sp.a, &c, 1) == 1);
    });
    s.write_wait(sp.a, [&] { bag.push_back("write"); });
    BOOST_TEST(s.waiter_count() == 2u);
    s.run_once();  // writable, not readable
    BOOST_TEST(bag == (Bag{"write"}), boost::test_tools::per_element());
    BOOST_TEST(s.waiter_count() == 1u);
    BOOST_REQUIRE(::write(sp.b, "z", 1) == 1);
    s.run_once();
    BOOST_TEST(bag == (Bag{"write", "read"}), boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

// ============================================================ persistent waiters

BOOST_AUTO_TEST_SUITE(persistent)

BOOST_AUTO_TEST_CASE(add_reader_fires_every_iteration_until_removed) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p;
    p.put();  // never drained: level-triggered readiness every iteration
    int calls = 0;
    s.add_reader(p.r, [&] { ++calls; });
    for (int i = 1; i <= 4; ++i) {
        s.run_once();
        BOOST_TEST(calls == i);
    }
    BOOST_TEST(s.waiter_count() == 1u);
    BOOST_TEST(s.remove_reader(p.r));
    BOOST_TEST(!s.remove_reader(p.r));
    s.run();
    BOOST_TEST(calls == 4);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(add_writer_fires_until_removed_by_itself) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    SocketPair sp;
    int calls = 0;
    bool removed = false;
    auto token = std::make_shared<int>(0);
    s.add_writer(sp.a, [&, token] {
        ++calls;
        BOOST_TEST(::write(sp.a, "w", 1) == 1);
        if (calls == 3) {
            removed = s.remove_writer(sp.a);
            // Still running: the callable (and token) must be alive until we return.
            BOOST_TEST(token.use_count() >= 2);
        }
    });
    s.run();
    BOOST_TEST(calls == 3);
    BOOST_TEST(removed);
    BOOST_TEST(token.use_count() == 1);  // released once it returned
    char buf[8];
    BOOST_TEST(::read(sp.b, buf, sizeof buf) == 3);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(add_reader_serves_a_stream_until_eof) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p;
    std::string got;
    s.add_reader(p.r, [&] {
        char buf[4];  // small on purpose: several readiness rounds
        ssize_t n = ::read(p.r, buf, sizeof buf);
        if (n > 0) {
            got.append(buf, static_cast<std::size_t>(n));
        } else if (n == 0) {
            BOOST_TEST(s.remove_reader(p.r));
        }  // n < 0 (EAGAIN): a spurious wake-up; wait again
    });
    p.put("hello, reactor");
    p.w.close();  // EOF after the data
    s.run();
    BOOST_TEST(got == "hello, reactor");
    CHECK_EMPTY(s);
}

// The clock is read after the selector returns, also when it returns because
// of I/O: a delay scheduled from an I/O callback counts from the wake-up, not
// from before the sleep (which would make the timer fire early).
BOOST_AUTO_TEST_CASE(now_is_refreshed_when_io_wakes_the_loop) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p;
    std::atomic<Clock::time_point> written{};
    bool timer_ok = false;
    s.read_wait(p.r, [&] {
        BOOST_TEST((s.now() >= written.load()));
        p.take();
        // Counted from a stale now() (before the 40 ms sleep) it would be due already.
        s.call_later(20ms, [&] { timer_ok = Clock::now() - written.load() >= 20ms; });
    });
    std::atomic<ssize_t> wrote{0};
    std::thread writer([&] {  // no Boost.Test macro here: they are not thread-safe
        std::this_thread::sleep_for(40ms);  // the loop is blocked in the selector meanwhile
        written = Clock::now();
        wrote = ::write(p.w.get(), "x", 1);
    });
    s.run_once();  // wakes for the pipe
    writer.join();
    BOOST_TEST(wrote.load() == 1);
    s.run();
    BOOST_TEST(timer_ok);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

// ============================================================ changing waiters from callbacks

BOOST_AUTO_TEST_SUITE(changes)

BOOST_AUTO_TEST_CASE(registering_again_replaces_the_waiter) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p;
    p.put();
    Bag bag;
    auto old_token = std::make_shared<int>(0);
    s.read_wait(p.r, [&, old_token] { bag.push_back("old one-shot"); });
    s.add_reader(p.r, [&, old_token] { bag.push_back("old persistent"); });
    BOOST_TEST(old_token.use_count() == 2);  // the first was released on replacement
    s.read_wait(p.r, [&] { bag.push_back("new"); });
    BOOST_TEST(old_token.use_count() == 1);
    BOOST_TEST(s.waiter_count() == 1u);
    s.run();
    BOOST_TEST(bag == (Bag{"new"}), boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

// Two readers due in the same batch; whichever runs first removes the other,
// which then must not run. (The order of the two depends on the backend.)
BOOST_AUTO_TEST_CASE(remove_reader_from_earlier_callback_prevents_due_reader) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p1, p2;
    p1.put();
    p2.put();
    Bag bag;
    auto token = std::make_shared<int>(0);
    s.add_reader(p1.r, [&, token] {
        bag.push_back("p1");
        BOOST_TEST(s.remove_reader(p2.r));
        BOOST_TEST(s.remove_reader(p1.r));
    });
    s.add_reader(p2.r, [&, token] {
        bag.push_back("p2");
        BOOST_TEST(s.remove_reader(p1.r));
        BOOST_TEST(s.remove_reader(p2.r));
    });
    s.run_once();  // both are readable: both are due in this batch
    BOOST_TEST(bag.size() == 1u);
    BOOST_TEST(token.use_count() == 1);
    s.run();
    BOOST_TEST(bag.size() == 1u);
    CHECK_EMPTY(s);
}

// Same, with replacement: the replaced (due) waiter does not run; its
// replacement was not due yet and runs in the next iteration.
BOOST_AUTO_TEST_CASE(replacing_a_due_waiter_from_earlier_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p1, p2;
    p1.put();
    p2.put();
    Bag bag;
    auto make = [&bag, &s](Pipe* self, Pipe* other, std::string name) {
        return [&bag, &s, self, other, name] {
            bag.push_back(name);
            self->take();
            s.read_wait(other->r, [&bag, other, name] {
                bag.push_back("replacement from " + name);
                other->take();
            });
        };
    };
    s.read_wait(p1.r, make(&p1, &p2, "p1"));
    s.read_wait(p2.r, make(&p2, &p1, "p2"));
    s.run_once();
    BOOST_REQUIRE(bag.size() == 1u);
    const std::string first = bag[0];
    s.run();
    BOOST_TEST(bag == (Bag{first, "replacement from " + first}), boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(one_shot_removing_itself_is_a_no_op) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p;
    p.put();
    bool removed = true;
    s.read_wait(p.r, [&] { removed = s.remove_reader(p.r); });
    s.run();
    BOOST_TEST(!removed);  // it was deregistered before it ran
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(persistent_reader_replacing_itself) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p;
    p.put();
    Bag bag;
    auto token = std::make_shared<int>(0);
    s.add_reader(p.r, [&, token] {
        bag.push_back("first");
        s.add_reader(p.r, [&] {
            bag.push_back("second");
            BOOST_TEST(s.remove_reader(p.r));
        });
        BOOST_TEST(*token == 0);  // our captures outlive the replacement while we run
    });
    s.run_once();
    BOOST_TEST(token.use_count() == 1);
    BOOST_TEST(s.waiter_count() == 1u);
    s.run();
    BOOST_TEST(bag == (Bag{"first", "second"}), boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(adding_waiters_from_inside_callbacks) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    SocketPair sp;
    Bag bag;
    s.call_soon([&] {
        bag.push_back("soon");
        s.read_wait(sp.b, [&] {
            bag.push_back("b readable");
            char c;
            BOOST_TEST(::read(sp.b, &c, 1) == 1);
        });
    });
    s.call_later(1ms, [&] {
        bag.push_back("timer");
        s.write_wait(sp.a, [&] {
            bag.push_back("a writable");
            BOOST_TEST(::write(sp.a, "!", 1) == 1);
        });
    });
    s.run();
    BOOST_TEST(bag == (Bag{"soon", "timer", "a writable", "b readable"}), boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()

// ============================================================ bad input

BOOST_AUTO_TEST_SUITE(bad_input)

BOOST_AUTO_TEST_CASE(negative_fd_is_rejected_and_changes_nothing) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    auto token = std::make_shared<int>(0);
    auto expect_rejected = [&](int fd, auto register_it) {
        try {
            register_it(fd);
            BOOST_ERROR("no exception for fd " << fd);
        } catch (const std::invalid_argument& e) {
            BOOST_TEST(std::string(e.what()).find(std::to_string(fd)) != std::string::npos);
        }
    };
    expect_rejected(-1, [&](int fd) { s.read_wait(fd, [token] {}); });
    expect_rejected(-1, [&](int fd) { s.write_wait(fd, [token] {}); });
    expect_rejected(-1, [&](int fd) { s.add_reader(fd, [token] {}); });
    expect_rejected(-1, [&](int fd) { s.add_writer(fd, [token] {}); });
    expect_rejected(-7, [&](int fd) { s.read_wait(fd, [token] {}); });
    BOOST_TEST(!s.remove_reader(-1));
    BOOST_TEST(!s.remove_writer(-1));
    BOOST_TEST(token.use_count() == 1);  // nothing kept
    s.run();
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(empty_callback_is_rejected) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p;
    BOOST_CHECK_THROW(s.read_wait(p.r, reactor::Callback{}), std::invalid_argument);
    BOOST_CHECK_THROW(s.add_writer(p.w, nullptr), std::invalid_argument);
    CHECK_EMPTY(s);
}

// The loop's own eventfd (for call_soon_threadsafe) cannot be taken over.
BOOST_AUTO_TEST_CASE(the_loops_wakeup_fd_is_rejected) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    auto open_fds = [] {
        std::vector<int> fds;
        for (int fd = 0; fd < 4096; ++fd) {
            if (::fcntl(fd, F_GETFD) != -1) fds.push_back(fd);
        }
        return fds;
    };
    const auto before = open_fds();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    int wakeup_fd = -1;
    for (int fd : open_fds()) {
        if (std::find(before.begin(), before.end(), fd) != before.end()) continue;
        char target[64] = {};
        const std::string link = "/proc/self/fd/" + std::to_string(fd);
        if (::readlink(link.c_str(), target, sizeof target - 1) > 0 && std::string(target) == "anon_inode:[eventfd]") {
            wakeup_fd = fd;
        }
    }
    if (wakeup_fd < 0) {
        BOOST_TEST_MESSAGE("skipped: could not identify the loop's eventfd");
        return;
    }
    BOOST_CHECK_THROW(s.read_wait(wakeup_fd, [] {}), std::invalid_argument);
    BOOST_CHECK_THROW(s.add_writer(wakeup_fd, [] {}), std::invalid_argument);
    BOOST_TEST(!s.remove_reader(wakeup_fd));
    int ran = 0;
    s.call_soon_threadsafe([&] { ++ran; });  // the wakeup path still works
    s.run();
    BOOST_TEST(ran == 1);
    CHECK_EMPTY(s);
}

// select(2)'s fd_set is a fixed bitmap: FD_SET beyond FD_SETSIZE writes out of
// bounds. The select backend must refuse such an fd at registration, clearly,
// leaving every other registration as it was; the others must accept it.
BOOST_AUTO_TEST_CASE(fd_at_or_above_fd_setsize) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    constexpr int kBigFd = 1500;
    static_assert(kBigFd >= FD_SETSIZE);
    if (!ensure_fd_limit(kBigFd + 1)) {
        BOOST_TEST_MESSAGE("skipped: RLIMIT_NOFILE hard limit is below " << kBigFd + 1);
        return;
    }
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe p, other;
    BOOST_REQUIRE(::dup2(p.r, kBigFd) == kBigFd);
    Fd big(kBigFd);
    p.put();
    other.put();
    Bag bag;
    s.add_reader(other.r, [&] {
        bag.push_back("other");
        BOOST_TEST(s.remove_reader(other.r));
    });
    auto token = std::make_shared<int>(0);
    if (backend == Backend::select) {
        for (int attempt = 0; attempt < 2; ++attempt) {  // read and write direction
            try {
                if (attempt == 0) {
                    s.read_wait(big, [&, token] { bag.push_back("big"); });
                } else {
                    s.add_writer(big, [&, token] { bag.push_back("big"); });
                }
                BOOST_FAIL("no exception for fd " << kBigFd);  // stop here: the fd_sets may be corrupt
            } catch (const std::invalid_argument& e) {
                const std::string what = e.what();
                BOOST_TEST_MESSAGE("message: " << what);
                BOOST_TEST(what.find("1500") != std::string::npos);
                BOOST_TEST(what.find("FD_SETSIZE") != std::string::npos);
            }
        }
        BOOST_TEST(token.use_count() == 1);
        BOOST_TEST(s.waiter_count() == 1u);
        BOOST_TEST(!s.remove_reader(big));
        s.run();
        BOOST_TEST(bag == (Bag{"other"}), boost::test_tools::per_element());
    } else {
        s.read_wait(big, [&, token] { bag.push_back("big"); });
        s.run();
        BOOST_TEST(bag.size() == 2u);
        BOOST_TEST(token.use_count() == 1);
    }
    CHECK_EMPTY(s);
}

// An fd closed while registered (EBADF from the selector) must not take the
// loop down: its waiters are dropped and reported with the fd, and the other
// fds keep being served.
BOOST_AUTO_TEST_CASE(fd_closed_from_a_callback_is_reported_and_dropped) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe doomed, alive;
    std::vector<ErrorContext> reports;
    s.set_exception_handler([&](const ErrorContext& ctx) { reports.push_back(ctx); });
    const int doomed_fd = doomed.r;
    auto token = std::make_shared<int>(0);
    const unsigned line = __LINE__; s.read_wait(doomed.r, [&, token] { BOOST_ERROR("waiter on a closed fd ran"); });
    s.add_writer(doomed.r, [&, token] { BOOST_ERROR("waiter on a closed fd ran"); });  // (never writable)
    int served = 0;
    s.add_reader(alive.r, [&] {
        served += alive.take();
        if (served == 2) BOOST_TEST(s.remove_reader(alive.r));
    });
    s.call_soon([&] {
        doomed.r.close();  // closed behind the loop's back; no new fd may reuse the number now
        alive.put();
    });
    s.call_later(20ms, [&] { alive.put(); });
    // A bound in case the backend never notices: fails instead of hanging.
    auto guard = s.call_later(2s, [&] {
        BOOST_ERROR("the closed fd was never reported");
        s.stop();
    });
    while ((served < 2 || reports.empty()) && guard.is_pending()) s.run_once();
    BOOST_TEST(guard.cancel());
    BOOST_TEST(served == 2);
    BOOST_REQUIRE(reports.size() == 1u);
    const ErrorContext& r = reports[0];
    BOOST_TEST(r.fd == doomed_fd);
    BOOST_TEST(!r.exception);
    BOOST_TEST(r.message.find(std::to_string(doomed_fd)) != std::string::npos);
    BOOST_TEST(r.origin_known);
    BOOST_TEST(std::string(r.origin.file_name()).ends_with("test_scheduler_io.cpp"));
    BOOST_TEST(r.origin.line() == line);
    BOOST_TEST(token.use_count() == 1);  // both dropped waiters were released
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(fd_closed_after_registering_is_reported_and_dropped) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    Pipe doomed, alive;
    std::vector<int> reported_fds;
    s.set_exception_handler([&](const ErrorContext& ctx) { reported_fds.push_back(ctx.fd); });
    const int doomed_fd = doomed.r;
    s.add_reader(doomed.r, [&] { BOOST_ERROR("waiter on a closed fd ran"); });
    doomed.r.close();
    alive.put("ab");
    int served = 0;
    s.read_wait(alive.r, [&] { served += alive.take(); });
    auto guard = s.call_later(2s, [&] { s.stop(); });
    for (int i = 0; i < 5 && (reported_fds.empty() || served == 0); ++i) s.run_once();
    BOOST_TEST(guard.cancel());
    BOOST_TEST(served == 2);
    BOOST_TEST(reported_fds == (std::vector<int>{doomed_fd}), boost::test_tools::per_element());
    CHECK_EMPTY(s);
}

// EINTR: a signal handler installed without SA_RESTART interrupts the wait.
// The selector must resume with the remaining time, so a single run_once()
// still returns only after the timer fired.
namespace {
std::atomic<int> g_signals{0};
void count_signal(int) { g_signals.fetch_add(1); }
}  // namespace

BOOST_AUTO_TEST_CASE(eintr_resumes_the_wait_with_the_remaining_time) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    struct sigaction action{};
    action.sa_handler = count_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: the blocked call fails with EINTR
    struct sigaction previous{};
    BOOST_REQUIRE(::sigaction(SIGUSR1, &action, &previous) == 0);
    g_signals = 0;

    Scheduler s(on(backend));
    Watchdog watchdog(s);
    int fired = 0;
    const auto start = Clock::now();
    s.call_later(100ms, [&] { ++fired; });
    const pthread_t loop_thread = ::pthread_self();
    std::thread killer([&] {
        std::this_thread::sleep_for(30ms);  // the loop is blocked in the selector by now
        ::pthread_kill(loop_thread, SIGUSR1);
    });
    s.run_once();
    const auto elapsed = Clock::now() - start;
    killer.join();
    ::sigaction(SIGUSR1, &previous, nullptr);

    BOOST_TEST(g_signals.load() == 1);
    BOOST_TEST(fired == 1);  // one run_once was enough
    BOOST_TEST((elapsed >= 100ms));
    BOOST_TEST((elapsed < 1s));
    CHECK_EMPTY(s);
}

// Regression (epoll keeps registrations across waits): an fd closed from a
// callback and its number reused, in the same batch, by a new file registered
// with the same interest. Without forget_fd the epoll backend saw "no change"
// and never watched the new file.
BOOST_AUTO_TEST_CASE(forget_fd_before_close_lets_a_reused_fd_number_be_watched) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    Watchdog watchdog(s);
    auto old_pipe = std::make_unique<Pipe>();
    Pipe other;
    int reused_fd = old_pipe->r;
    Bag bag;
    std::unique_ptr<Pipe> new_pipe;
    s.read_wait(old_pipe->r, [&] { bag.push_back("old"); });
    s.read_wait(other.r, [&] {
        bag.push_back("other");
        s.forget_fd(reused_fd);
        old_pipe.reset();  // closes both ends: the lowest free numbers
        new_pipe = std::make_unique<Pipe>();
        BOOST_REQUIRE(new_pipe->r.get() == reused_fd);
        s.read_wait(new_pipe->r, [&] {
            bag.push_back("new");
            BOOST_TEST(new_pipe->take() == 1);
        });
        new_pipe->put();
    });
    other.put();
    s.run();
    BOOST_TEST(bag == (Bag{"other", "new"}), boost::test_tools::per_element());
    BOOST_TEST(other.take() == 1);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(forget_fd_is_harmless_for_unknown_fds) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(on(backend));
    s.forget_fd(-1);
    s.forget_fd(12345);
    Pipe p;
    s.forget_fd(p.r);
    CHECK_EMPTY(s);
}

// A timer at the end of time (call_later(seconds::max()) means "never")
// makes the selector's wait as long as it can be: computing its deadline
// must saturate, not overflow into the past (UBSan caught it on poll and epoll).
BOOST_AUTO_TEST_CASE(a_timer_at_the_end_of_time_does_not_overflow_the_wait) {
    Scheduler s(on(reactor_test::backend_under_test()));
    reactor::Handle never = s.call_later(std::chrono::seconds::max(), [] {});
    Pipe p;
    p.put();
    bool heard = false;
    s.read_wait(p.r, [&] { heard = true; });
    s.run_once();
    BOOST_TEST(heard);
    never.cancel();
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_SUITE_END()
