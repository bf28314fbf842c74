// SPDX-License-Identifier: MIT
// Backend-specific tests for the Selector implementations (select, poll,
// epoll): what the shared Scheduler suites cannot see. fds above FD_SETSIZE,
// 10,000 idle connections, epoll's batching of epoll_ctl, closed-fd
// detection, EINTR, and timeouts that never wake early.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <fmt/format.h>

#include <reactor/scheduler.hpp>
#include <reactor/selector.hpp>

#include "../reactor/src/loop/epoll_selector.hpp"
#include "support/backends.hpp"
#include "support/fd_limits.hpp"
#include "support/fds.hpp"

using namespace std::chrono_literals;
using reactor::Backend;
using reactor::FdEvent;
using reactor::Interest;
using Clock = std::chrono::steady_clock;

namespace selector_tests {


using reactor_test::Pipe;
using reactor_test::raise_fd_limit;
using reactor_test::SocketPair;

// A free fd number >= FD_SETSIZE (2000 unless taken), or -1 if the limit is too low.
int free_high_fd() {
    rlim_t limit = raise_fd_limit();
    for (int fd = 2000; static_cast<rlim_t>(fd) < limit; ++fd) {
        if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) return fd;
    }
    return -1;
}

// A Scheduler on `backend`. For epoll the selector is built here with a short
// idle check, so closed-fd tests need not wait the default second.
reactor::Scheduler::Options options_for(Backend backend, reactor::EpollSelector** epoll = nullptr) {
    if (backend != Backend::epoll) return reactor_test::on(backend);
    reactor::Scheduler::Options options;
    auto sel = std::make_unique<reactor::EpollSelector>(reactor::EpollSelector::Options{20ms});
    if (epoll) *epoll = sel.get();
    options.selector = std::move(sel);
    return options;
}

const FdEvent* find_event(const std::vector<FdEvent>& events, int fd) {
    for (const auto& e : events) {
        if (e.fd == fd) return &e;
    }
    return nullptr;
}

}  // namespace selector_tests
using namespace selector_tests;

// ---------------------------------------------------------------- basics, every backend

BOOST_AUTO_TEST_CASE(reports_readable_and_writable) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    auto sel = reactor::make_selector(backend);
    BOOST_TEST(sel->name() == reactor::to_string(backend));
    Pipe p;
    std::vector<FdEvent> out;
    sel->set_interest(p.r, Interest::read);
    sel->set_interest(p.w, Interest::write);
    sel->wait(0ns, out);
    BOOST_TEST_REQUIRE(out.size() == 1u);  // the empty pipe is writable, not readable
    BOOST_TEST(out[0].fd == p.w);
    BOOST_TEST((out[0].writable && !out[0].readable && out[0].error == 0));

    p.put();
    out.clear();
    sel->set_interest(p.w, Interest::none);
    sel->wait(1s, out);
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST(out[0].fd == p.r);
    BOOST_TEST((out[0].readable && out[0].error == 0));

    BOOST_CHECK_THROW(sel->set_interest(-1, Interest::read), std::invalid_argument);
}

// Add/remove is O(1) and leaves the others intact (poll swap-removes).
BOOST_AUTO_TEST_CASE(removing_fds_keeps_the_others) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    auto sel = reactor::make_selector(backend);
    std::vector<std::unique_ptr<Pipe>> pipes;
    for (int i = 0; i < 40; ++i) {
        pipes.push_back(std::make_unique<Pipe>());
        sel->set_interest(pipes.back()->r, Interest::read);
    }
    for (std::size_t i = 0; i < pipes.size(); i += 2) sel->set_interest(pipes[i]->r, Interest::none);
    sel->set_interest(pipes[5]->r, Interest::read);  // re-registering is harmless
    for (auto& p : pipes) p->put();
    std::vector<FdEvent> out;
    sel->wait(1s, out);
    BOOST_TEST(out.size() == pipes.size() / 2);
    for (std::size_t i = 0; i < pipes.size(); ++i) {
        const FdEvent* e = find_event(out, pipes[i]->r);
        BOOST_TEST((i % 2 == 1 ? e != nullptr && e->readable : e == nullptr), "pipe " << i);
    }
    for (auto& p : pipes) sel->set_interest(p->r, Interest::none);
    out.clear();
    sel->wait(0ns, out);
    BOOST_TEST(out.empty());
}

// POLLERR/POLLHUP wake both directions: the owner's read or write finds the error.
BOOST_AUTO_TEST_CASE(hang_up_wakes_both_directions,
                     *reactor_test::skip_on(Backend::select, "select has no hang-up event to report")) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    auto sel = reactor::make_selector(backend);
    SocketPair sp;
    sel->set_interest(sp.a, Interest::read);
    sp.b.close();
    std::vector<FdEvent> out;
    sel->wait(1s, out);
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST((out[0].fd == sp.a && out[0].readable && out[0].writable && out[0].error == 0));
    sp.a.close();
}

// epoll refuses regular files (EPERM); select and poll call them always ready,
// and so does our epoll, so code behaves the same on every backend.
BOOST_AUTO_TEST_CASE(regular_file_is_always_ready) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    std::FILE* file = std::tmpfile();
    BOOST_REQUIRE(file != nullptr);
    int fd = ::fileno(file);
    reactor::Scheduler s(options_for(backend));
    int fired = 0;
    s.read_wait(fd, [&] { ++fired; });
    s.write_wait(fd, [&] { ++fired; });
    s.run();
    BOOST_TEST(fired == 2);
    s.add_reader(fd, [&] {
        if (++fired == 5) s.remove_reader(fd);
    });
    s.run();
    BOOST_TEST(fired == 5);
    BOOST_TEST(s.empty());
    std::fclose(file);
}

// ---------------------------------------------------------------- FD_SETSIZE

BOOST_AUTO_TEST_CASE(watches_fd_above_fd_setsize,
                     *reactor_test::skip_on(Backend::select, "select cannot watch fds >= FD_SETSIZE")) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    int high = free_high_fd();
    if (high < 0) {
        fmt::print(stderr, "SKIPPED watches_fd_above_fd_setsize: RLIMIT_NOFILE hard limit too low\n");
        return;
    }
    BOOST_TEST_REQUIRE(high >= FD_SETSIZE);
    Pipe p;
    BOOST_REQUIRE(::dup3(p.r, high, O_CLOEXEC) == high);

    auto sel = reactor::make_selector(backend);
    sel->set_interest(high, Interest::read);
    p.put();
    std::vector<FdEvent> out;
    sel->wait(1s, out);
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST((out[0].fd == high && out[0].readable));

    reactor::Scheduler s(options_for(backend));
    int fired = 0;
    s.read_wait(high, [&] { ++fired; });
    s.run();
    BOOST_TEST(fired == 1);
    BOOST_TEST(s.empty());
    ::close(high);
}

BOOST_AUTO_TEST_CASE(select_refuses_fd_at_or_above_fd_setsize, *reactor_test::only_on(Backend::select)) {
    auto says_fd_setsize = [](const std::invalid_argument& e) {
        return std::string(e.what()).find("FD_SETSIZE") != std::string::npos;
    };
    auto sel = reactor::make_select_selector();
    BOOST_CHECK_EXCEPTION(sel->set_interest(FD_SETSIZE, Interest::read), std::invalid_argument, says_fd_setsize);
    BOOST_CHECK_NO_THROW(sel->set_interest(FD_SETSIZE - 1, Interest::none));

    int high = free_high_fd();
    if (high < 0) return;
    Pipe p;
    BOOST_REQUIRE(::dup3(p.r, high, O_CLOEXEC) == high);
    reactor::Scheduler s;  // select, the default
    BOOST_CHECK_EXCEPTION(s.read_wait(high, [] {}), std::invalid_argument, says_fd_setsize);
    BOOST_CHECK_EXCEPTION(s.add_writer(high, [] {}), std::invalid_argument, says_fd_setsize);
    BOOST_TEST(s.waiter_count() == 0u);
    BOOST_TEST(s.empty());
    ::close(high);
}

// ---------------------------------------------------------------- epoll batching

BOOST_AUTO_TEST_CASE(epoll_calls_epoll_ctl_only_when_interest_changes_or_is_renewed,
                     *reactor_test::only_on(Backend::epoll)) {
    reactor::EpollSelector sel;
    Pipe p;
    std::vector<FdEvent> out;
    sel.set_interest(p.r, Interest::read);
    sel.wait(0ns, out);
    BOOST_TEST(sel.ctl_calls() == 1u);  // ADD

    sel.wait(0ns, out);  // nothing asked: nothing done
    BOOST_TEST(sel.ctl_calls() == 1u);

    sel.set_interest(p.r, Interest::none);  // a one-shot waiter fired...
    sel.set_interest(p.r, Interest::read);  // ...and re-armed itself: the fd may be a new file
    sel.set_interest(p.r, Interest::read);
    sel.wait(0ns, out);
    BOOST_TEST(sel.ctl_calls() == 2u);  // one MOD checks it

    sel.set_interest(p.w, Interest::write);  // added and removed before a wait
    sel.set_interest(p.w, Interest::none);
    sel.wait(0ns, out);
    BOOST_TEST(sel.ctl_calls() == 2u);

    sel.set_interest(p.r, Interest::read_write);
    sel.wait(0ns, out);
    BOOST_TEST(sel.ctl_calls() == 3u);  // MOD
    sel.set_interest(p.r, Interest::none);
    sel.wait(0ns, out);
    BOOST_TEST(sel.ctl_calls() == 4u);  // DEL
    BOOST_TEST(out.empty());
}

// What makes epoll cheap stays: a persistent reader costs no epoll_ctl per
// event; a one-shot waiter that re-arms itself costs exactly one.
BOOST_AUTO_TEST_CASE(epoll_persistent_reader_costs_no_epoll_ctl_and_one_shot_rearm_one,
                     *reactor_test::only_on(Backend::epoll)) {
    auto owned = std::make_unique<reactor::EpollSelector>();
    reactor::EpollSelector* sel = owned.get();
    reactor::Scheduler::Options options;
    options.selector = std::move(owned);
    reactor::Scheduler s(std::move(options));
    Pipe p;
    constexpr int kRounds = 1000;

    int persistent_events = 0;
    s.add_reader(p.r, [&] {
        char c;
        BOOST_REQUIRE(::read(p.r, &c, 1) == 1);
        if (++persistent_events < kRounds) {
            p.put();
        } else {
            s.remove_reader(p.r);
        }
    });
    p.put();
    s.run_once();  // first wait: ADD the wakeup eventfd and the pipe
    std::uint64_t base = sel->ctl_calls();
    BOOST_TEST(base == 2u);
    s.run();
    BOOST_TEST(persistent_events == kRounds);
    BOOST_TEST(sel->ctl_calls() == base);  // 1000 events, no epoll_ctl (the final DEL is still pending)

    int oneshot_events = 0;
    std::function<void()> arm = [&] {
        s.read_wait(p.r, [&] {
            char c;
            BOOST_REQUIRE(::read(p.r, &c, 1) == 1);
            if (++oneshot_events < kRounds) {
                arm();
                p.put();
            }
        });
    };
    arm();
    p.put();
    base = sel->ctl_calls();
    s.run();
    BOOST_TEST(oneshot_events == kRounds);
    BOOST_TEST(sel->ctl_calls() == base + kRounds);  // one MOD per registration
    s.call_soon([] {});
    s.run();  // this wait applies the last change: the pipe is no longer wanted
    BOOST_TEST(sel->ctl_calls() == base + kRounds + 1);
    BOOST_TEST(s.empty());
}

// ---------------------------------------------------------------- closed fds

// Every backend reports an fd closed while registered as EBADF.
BOOST_AUTO_TEST_CASE(selector_reports_fd_closed_while_registered) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    std::unique_ptr<reactor::Selector> sel;
    if (backend == Backend::epoll) {
        sel = std::make_unique<reactor::EpollSelector>(reactor::EpollSelector::Options{20ms});
    } else {
        sel = reactor::make_selector(backend);
    }
    Pipe p, other;
    std::vector<FdEvent> out;
    sel->set_interest(p.r, Interest::read);
    sel->set_interest(other.r, Interest::read);
    sel->wait(0ns, out);  // registered with the kernel (epoll)
    int fd = p.r;
    p.r.close();
    auto t0 = Clock::now();
    sel->wait(5s, out);
    auto took = Clock::now() - t0;
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST((out[0].fd == fd && out[0].error == EBADF));
    BOOST_TEST((took < 2s));
    // The owner deregisters; the others still work.
    sel->set_interest(fd, Interest::none);
    other.put();
    out.clear();
    sel->wait(1s, out);
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST((out[0].fd == other.r && out[0].readable));
}

// epoll checks a bounded number of registered fds per interval, in turn: the
// check costs the same few system calls with a million fds as with three, and
// a closed fd behind the cursor is still found, a round later.
BOOST_AUTO_TEST_CASE(epoll_checks_a_bounded_number_of_fds_per_interval_in_turn) {
    if (reactor_test::backend_under_test() != Backend::epoll) return;
    reactor::EpollSelector::Options one_per_check;
    one_per_check.closed_fd_check_interval = 1ms;
    one_per_check.closed_fd_checks_per_interval = 1;
    reactor::EpollSelector sel(one_per_check);
    Pipe a, b, c;  // ascending fd numbers: the check meets a.r, then b.r, then c.r
    BOOST_REQUIRE((a.r < b.r && b.r < c.r));
    std::vector<FdEvent> out;
    for (int fd : {static_cast<int>(a.r), static_cast<int>(b.r), static_cast<int>(c.r)})
        sel.set_interest(fd, Interest::read);
    sel.wait(0ns, out);  // registered with the kernel
    BOOST_TEST(out.empty());
    const int fd = c.r;
    c.r.close();  // its last reference: the kernel drops the registration silently
    const std::uint64_t before = sel.closed_fd_checks();
    for (int i = 0; i < 20 && out.empty(); ++i) sel.wait(20ms, out);
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST((out[0].fd == fd && out[0].error == EBADF));
    // One fd per check: a.r and b.r cost a check each before c.r's turn.
    BOOST_TEST(sel.closed_fd_checks() - before == 3u);
    // The others are still watched.
    a.put();
    out.clear();
    sel.wait(1s, out);
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST((out[0].fd == a.r && out[0].readable));
}

// Through the Scheduler: the waiters are dropped and reported, run() returns.
BOOST_AUTO_TEST_CASE(scheduler_drops_waiters_of_closed_fd) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler s(options_for(backend));
    std::vector<int> reported;
    s.set_exception_handler([&](const reactor::ErrorContext& ctx) { reported.push_back(ctx.fd); });
    Pipe p;
    bool ran = false;
    s.read_wait(p.r, [&] { ran = true; });
    s.call_soon([] {});
    s.run_once();  // the waiter is registered with the kernel
    int fd = p.r;
    p.r.close();
    s.run();
    BOOST_TEST(!ran);
    BOOST_TEST_REQUIRE(reported.size() == 1u);
    BOOST_TEST(reported[0] == fd);
    BOOST_TEST(s.empty());
}

BOOST_AUTO_TEST_CASE(epoll_reports_fd_closed_before_its_first_wait, *reactor_test::only_on(Backend::epoll)) {
    reactor::EpollSelector sel;
    Pipe p;
    sel.set_interest(p.r, Interest::read);
    int fd = p.r;
    p.r.close();
    std::vector<FdEvent> out;
    auto t0 = Clock::now();
    sel.wait(5s, out);  // the ADD fails: reported at once
    BOOST_TEST((Clock::now() - t0 < 1s));
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST((out[0].fd == fd && out[0].error == EBADF));
}

BOOST_AUTO_TEST_CASE(epoll_reports_closed_fd_when_its_interest_changes, *reactor_test::only_on(Backend::epoll)) {
    reactor::EpollSelector sel;  // default idle check: the change must find it first
    Pipe p;
    std::vector<FdEvent> out;
    sel.set_interest(p.r, Interest::read);
    sel.wait(0ns, out);
    int fd = p.r;
    p.r.close();
    sel.set_interest(fd, Interest::read_write);
    auto t0 = Clock::now();
    sel.wait(5s, out);
    BOOST_TEST((Clock::now() - t0 < 500ms));
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST((out[0].fd == fd && out[0].error == EBADF));
}

// Closed and its number reused by a new file: a changed interest re-adds it.
BOOST_AUTO_TEST_CASE(epoll_watches_new_file_on_reused_fd_number_when_interest_changes,
                     *reactor_test::only_on(Backend::epoll)) {
    reactor::EpollSelector sel;
    Pipe a, b;
    std::vector<FdEvent> out;
    sel.set_interest(a.r, Interest::read);
    sel.wait(0ns, out);
    int fd = a.r;
    BOOST_REQUIRE(::dup3(b.r, fd, O_CLOEXEC) == fd);  // closes a's read end, reuses its number
    sel.set_interest(fd, Interest::read_write);       // MOD: ENOENT, then ADD
    b.put();
    sel.wait(1s, out);
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST((out[0].fd == fd && out[0].readable && out[0].error == 0));
}

// Deregister, then close from a later callback (muduo's habit; once the rule
// the epoll backend needed): a new file that gets the same number and the same
// interest is watched. tests/test_closed_fds.cpp covers closing at any time.
BOOST_AUTO_TEST_CASE(fd_number_reused_after_deferred_close_is_watched) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler s(options_for(backend));
    Pipe a, b;
    int fd = a.r;
    bool new_file_seen = false, timed_out = false;
    s.add_reader(fd, [&] {
        s.remove_reader(fd);
        s.call_soon([&] {
            BOOST_REQUIRE(::dup3(b.r, fd, O_CLOEXEC) == fd);  // close(fd); the number comes back at once
            s.add_reader(fd, [&] {
                new_file_seen = true;
                s.remove_reader(fd);
            });
            b.put();
        });
    });
    a.put();
    reactor::Handle watchdog = s.call_later(5s, [&] {
        timed_out = true;
        s.remove_reader(fd);
    });
    while (!new_file_seen && !timed_out) s.run_once();
    BOOST_TEST(new_file_seen);
    watchdog.cancel();
    BOOST_TEST(s.empty());
}

// A registration whose fd number was closed while its file lives on (a dup)
// cannot be removed with epoll_ctl; its events would make the loop spin.
// The selector notices the stale events and rebuilds the epoll set.
BOOST_AUTO_TEST_CASE(epoll_clears_stale_registration_of_duplicated_file, *reactor_test::only_on(Backend::epoll)) {
    reactor::EpollSelector sel;
    Pipe p, other;
    std::vector<FdEvent> out;
    sel.set_interest(p.r, Interest::read);
    sel.set_interest(other.r, Interest::read);
    sel.wait(0ns, out);
    int fd = p.r;
    int keep = ::dup(p.r);
    p.r.close();
    p.put();                             // the file is readable; the epoll set still has it
    sel.set_interest(fd, Interest::none);  // the owner deregisters: DEL fails (EBADF)
    sel.wait(0ns, out);
    BOOST_TEST(out.empty());
    BOOST_TEST(sel.rebuilds() == 1u);
    sel.wait(0ns, out);  // no spin: nothing is reported any more
    BOOST_TEST(out.empty());
    other.put();  // the rebuilt set still watches the rest
    sel.wait(1s, out);
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST(out[0].fd == other.r);
    ::close(keep);
}

// ---------------------------------------------------------------- signals and timeouts

namespace selector_tests {

std::atomic<int> g_signals{0};
extern "C" void count_signal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }

// SIGUSR1 handler installed without SA_RESTART, so blocking calls fail with EINTR.
struct SignalCatcher {
    struct sigaction old {};
    SignalCatcher() {
        struct sigaction sa {};
        sa.sa_handler = count_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0;
        ::sigaction(SIGUSR1, &sa, &old);
        g_signals = 0;
    }
    ~SignalCatcher() { ::sigaction(SIGUSR1, &old, nullptr); }
};

}  // namespace selector_tests
using namespace selector_tests;

// Sends SIGUSR1 to `target` one at a time, each only after the previous one
// was handled (so none merges with another), until told to stop or `limit`
// signals were handled.
class SignalSender {
public:
    SignalSender(pthread_t target, int limit)
        : thread_([this, target, limit] {
              for (int sent = 0; sent < limit && !stop_.load();) {
                  ::pthread_kill(target, SIGUSR1);
                  ++sent;
                  while (g_signals.load() < sent && !stop_.load()) std::this_thread::sleep_for(100us);
                  std::this_thread::sleep_for(1ms);
              }
              done_ = true;
          }) {}
    ~SignalSender() { stop(); }
    void stop() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
    }
    bool done() const { return done_.load(); }

private:
    std::atomic<bool> stop_{false};
    std::atomic<bool> done_{false};
    std::thread thread_;
};

// A signal during a timed wait neither ends it early nor reports anything.
// Which wait a signal lands in depends on scheduling, so the wait is repeated
// (bounded) until at least one signal arrived during one; every attempt must
// last the whole timeout.
BOOST_AUTO_TEST_CASE(signal_does_not_cut_a_timed_wait_short) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    SignalCatcher catcher;
    auto sel = reactor::make_selector(backend);
    Pipe p;
    sel->set_interest(p.r, Interest::read);
    SignalSender sender(::pthread_self(), 1000);
    bool interrupted = false;
    for (int attempt = 0; attempt < 50 && !interrupted; ++attempt) {
        std::vector<FdEvent> out;
        const int before = g_signals.load();
        auto t0 = Clock::now();
        sel->wait(20ms, out);
        auto took = Clock::now() - t0;
        interrupted = g_signals.load() > before;
        BOOST_TEST(out.empty());
        BOOST_TEST((took >= 20ms));
    }
    sender.stop();
    BOOST_TEST(interrupted);
}

// An unbounded wait is interrupted by ten signals, one at a time, and still
// returns only when the pipe becomes readable.
BOOST_AUTO_TEST_CASE(signal_does_not_end_an_unbounded_wait) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    SignalCatcher catcher;
    auto sel = reactor::make_selector(backend);
    Pipe p;
    sel->set_interest(p.r, Interest::read);
    constexpr int kSignals = 10;
    SignalSender sender(::pthread_self(), kSignals);
    std::atomic<ssize_t> wrote{0};
    std::thread writer([&] {  // no Boost.Test macro here: they are not thread-safe
        while (!sender.done()) std::this_thread::sleep_for(1ms);
        wrote = ::write(p.w.get(), "x", 1);
    });
    std::vector<FdEvent> out;
    sel->wait(std::nullopt, out);
    writer.join();
    BOOST_TEST(wrote.load() == 1);
    BOOST_TEST(g_signals.load() == kSignals);
    BOOST_TEST_REQUIRE(out.size() == 1u);
    BOOST_TEST((out[0].fd == p.r && out[0].readable));
}

BOOST_AUTO_TEST_CASE(timeouts_never_wake_early) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    auto sel = reactor::make_selector(backend);
    Pipe p;
    sel->set_interest(p.r, Interest::read);
    const std::chrono::nanoseconds timeouts[] = {1ns, 1us, 999us, 1ms + 1ns, 1500us, 2001us, 5ms};
    for (auto timeout : timeouts) {
        std::vector<FdEvent> out;
        auto t0 = Clock::now();
        sel->wait(timeout, out);
        auto took = Clock::now() - t0;
        BOOST_TEST(out.empty());
        BOOST_TEST((took >= timeout), "waited " << took.count() << " ns for " << timeout.count() << " ns");
    }
}

// The loop's view: a timer fires on the first wake-up, never after a spin of
// early returns (which is what rounding 1.5 ms down to 1 ms would cause).
BOOST_AUTO_TEST_CASE(timer_fires_after_exactly_one_wait) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler s(options_for(backend));
    for (auto delay : {std::chrono::nanoseconds(1500us), std::chrono::nanoseconds(2001us), 10ms + 1ns}) {
        bool fired = false;
        s.call_later(delay, [&] { fired = true; });
        int iterations = 0;
        while (!fired && iterations < 100) {
            s.run_once();
            ++iterations;
        }
        BOOST_TEST(iterations == 1, "delay " << delay.count() << " ns took " << iterations << " iterations");
    }
    BOOST_TEST(s.empty());
}

// ---------------------------------------------------------------- 10,000 idle connections

namespace selector_tests {

constexpr int kIdleConnections = 10'000;
constexpr int kActiveClients = 5;
constexpr int kRounds = 100;
constexpr std::size_t kMessageSize = 64;

// The child process that holds the client ends of the idle connections (two
// ends per connection would not fit in one process's fd limit). It reports
// 'k' (or 'e' on failure) on `status`, then waits for EOF on `quit`.
[[noreturn]] void run_idle_client(const sockaddr_in& addr, int status, int quit) {
    std::vector<int> conns;
    conns.reserve(kIdleConnections);
    char result = 'k';
    for (int i = 0; i < kIdleConnections; ++i) {
        int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c < 0 || ::connect(c, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
            result = 'e';
            break;
        }
        conns.push_back(c);
    }
    (void)!::write(status, &result, 1);
    ::fcntl(quit, F_SETFL, 0);  // the test's pipes are non-blocking: block here
    char b;
    while (::read(quit, &b, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
}

}  // namespace selector_tests
using namespace selector_tests;

BOOST_AUTO_TEST_CASE(ten_thousand_idle_connections_and_a_few_active,
                     *reactor_test::skip_on(Backend::select, "select cannot watch fds >= FD_SETSIZE")) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    rlim_t limit = raise_fd_limit();
    if (limit < static_cast<rlim_t>(kIdleConnections + 256)) {
        fmt::print(stderr, "SKIPPED ten_thousand_idle_connections: RLIMIT_NOFILE hard limit {} < {}\n", limit,
                   kIdleConnections + 256);
        return;
    }
    reactor::EpollSelector* epoll = nullptr;
    reactor::Scheduler s(options_for(backend, &epoll));

    int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    BOOST_REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    BOOST_REQUIRE(::listen(listener, SOMAXCONN) == 0);
    BOOST_REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);

    // The server: accept everything; echo whatever arrives; close on EOF.
    int accepted = 0, closed = 0, spurious = 0;
    std::size_t echoed = 0;
    s.add_reader(listener, [&] {
        for (;;) {
            int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) break;
            ++accepted;
            s.add_reader(fd, [&, fd] {
                char buf[4096];
                ssize_t n = ::read(fd, buf, sizeof buf);
                if (n > 0) {
                    echoed += static_cast<std::size_t>(n);
                    BOOST_REQUIRE(::write(fd, buf, static_cast<std::size_t>(n)) == n);
                } else if (n < 0 && errno == EAGAIN) {
                    ++spurious;
                } else {
                    s.remove_reader(fd);
                    ::close(fd);
                    ++closed;
                }
            });
        }
    });

    bool timed_out = false;
    reactor::Handle watchdog = s.call_later(120s, [&] { timed_out = true; });

    // Phase 1: a child process opens the idle connections.
    Pipe status, quit;
    pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        ::close(quit.w);
        run_idle_client(addr, status.w, quit.r);
    }
    quit.r.close();
    char child_said = 0;
    s.read_wait(status.r, [&] { BOOST_REQUIRE(::read(status.r, &child_said, 1) == 1); });
    auto t0 = Clock::now();
    while (!timed_out && child_said != 'e' && !(child_said == 'k' && accepted == kIdleConnections)) s.run_once();
    auto connect_time = Clock::now() - t0;
    BOOST_TEST_REQUIRE(child_said == 'k');
    BOOST_TEST_REQUIRE(accepted == kIdleConnections);

    // Cost of one loop iteration with 10,000 idle fds registered.
    constexpr int kIterations = 200;  // poll: ~4 ms each here
    int hops = 0;
    std::function<void()> hop = [&] {
        if (++hops < kIterations) s.call_soon(hop);
    };
    s.call_soon(hop);
    t0 = Clock::now();
    while (hops < kIterations) s.run_once();
    auto iteration_ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kIterations;

    // Phase 2: a few active clients, one 64-byte message in flight each.
    struct Client {
        int fd = -1;
        int round = 0;
        std::size_t got = 0;
        char expect[kMessageSize];
        char reply[kMessageSize];
    };
    std::vector<Client> clients(kActiveClients);
    int finished = 0;
    std::uint64_t ctl_before = epoll ? epoll->ctl_calls() : 0;
    std::uint64_t registrations = 0;  // the clients' one-shot read_waits
    std::function<void(Client&)> send_next;
    std::function<void(Client&)> on_reply = [&](Client& c) {
        ssize_t n = ::read(c.fd, c.reply + c.got, kMessageSize - c.got);
        if (n > 0) c.got += static_cast<std::size_t>(n);
        if (c.got < kMessageSize) {
            ++registrations;
            s.read_wait(c.fd, [&, client = &c] { on_reply(*client); });
            return;
        }
        BOOST_REQUIRE(std::memcmp(c.reply, c.expect, kMessageSize) == 0);
        if (++c.round == kRounds) {
            ::close(c.fd);
            c.fd = -1;
            ++finished;
        } else {
            send_next(c);
        }
    };
    send_next = [&](Client& c) {
        std::memset(c.expect, '.', kMessageSize);
        auto text = fmt::format("client {} round {}", &c - clients.data(), c.round);
        std::memcpy(c.expect, text.data(), text.size());
        c.got = 0;
        BOOST_REQUIRE(::write(c.fd, c.expect, kMessageSize) == static_cast<ssize_t>(kMessageSize));
        ++registrations;
        s.read_wait(c.fd, [&, client = &c] { on_reply(*client); });
    };
    for (auto& c : clients) {
        c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        BOOST_REQUIRE(::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        ::fcntl(c.fd, F_SETFL, O_NONBLOCK);
        send_next(c);
    }
    t0 = Clock::now();
    while (!timed_out && finished < kActiveClients) s.run_once();
    auto active_time = Clock::now() - t0;
    BOOST_TEST_REQUIRE(finished == kActiveClients);
    BOOST_TEST(echoed == std::size_t{kActiveClients} * kRounds * kMessageSize);
    BOOST_TEST(spurious == 0);
    if (epoll) {
        // Adds for the 5 client and 5 server fds, deletes for the 5 closed
        // clients, and one check per one-shot registration of the clients:
        // the server's persistent readers echoed every message for free.
        BOOST_TEST(epoll->ctl_calls() - ctl_before <= 4u * kActiveClients + registrations);
    }

    // Phase 3: the child exits; every idle connection hangs up at once.
    quit.w.close();
    t0 = Clock::now();
    while (!timed_out && closed < kIdleConnections + kActiveClients) s.run_once();
    auto hangup_time = Clock::now() - t0;
    BOOST_TEST(closed == kIdleConnections + kActiveClients);
    int wstatus = 0;
    BOOST_TEST(::waitpid(child, &wstatus, 0) == child);
    BOOST_TEST((WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0));

    s.remove_reader(listener);
    ::close(listener);
    BOOST_TEST(watchdog.cancel());
    BOOST_TEST(!timed_out);
    BOOST_TEST(s.empty());
    if (epoll) BOOST_TEST(epoll->event_capacity() > 64u);  // grew for the hang-up storm

    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    BOOST_TEST_MESSAGE(fmt::format(
        "{}: {} idle connections accepted in {:.0f} ms; loop iteration with them registered {:.0f} ns; "
        "{} clients x {} round trips in {:.1f} ms ({:.1f} us per round trip); {} hang-ups handled in {:.0f} ms",
        reactor::to_string(backend), kIdleConnections, ms(connect_time), iteration_ns, kActiveClients, kRounds,
        ms(active_time), ms(active_time) * 1000.0 / (kActiveClients * kRounds), kIdleConnections, ms(hangup_time)));
}
