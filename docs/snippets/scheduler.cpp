// SPDX-License-Identifier: MIT
// docs/scheduler.md: timers, periodic timers, signals, run_for, fd waiters,
// choosing a backend, errors, closing fds.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <fmt/format.h>
#include <reactor/scheduler.hpp>

using namespace std::chrono_literals;

namespace {

struct Pipe {
    int read_fd = -1, write_fd = -1;
    Pipe() {
        int fds[2];
        if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
        read_fd = fds[0];
        write_fd = fds[1];
    }
    ~Pipe() {
        if (read_fd >= 0) ::close(read_fd);
        if (write_fd >= 0) ::close(write_fd);
    }
};

// [snippet:backend]
int serve(std::string_view name) {
    std::optional<reactor::Backend> backend = reactor::parse_backend(name);  // "select", "poll", "epoll"
    if (!backend) {
        fmt::print(stderr, "unknown backend {}\n", name);
        return 2;
    }
    reactor::Scheduler::Options options;
    options.backend = *backend;
    reactor::Scheduler sched(std::move(options));
    // ... register work, then sched.run()
    // [end-snippet:backend]
    return sched.selector().name() == name ? 0 : 1;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(scheduler_md)

BOOST_AUTO_TEST_CASE(timers) {
    // [snippet:timers]
    reactor::Scheduler sched;
    std::vector<std::string> log;

    sched.call_later(10ms, [&] { log.push_back("a"); });  // any std::chrono duration
    reactor::TimePoint t = sched.now() + 20ms;
    sched.call_at(t, [&] { log.push_back("b"); });
    sched.call_at(t, [&] { log.push_back("c"); });  // the same deadline: in the order scheduled
    reactor::Handle h = sched.call_soon([&] { log.push_back("never"); });
    bool was_pending = h.cancel();  // true: the callback and its captures are gone
    sched.run();
    // log == {"a", "b", "c"}
    // [end-snippet:timers]

    BOOST_TEST(was_pending);
    BOOST_TEST(log == (std::vector<std::string>{"a", "b", "c"}), boost::test_tools::per_element());
    BOOST_TEST((sched.now() >= t));
}

BOOST_AUTO_TEST_CASE(one_shot_and_persistent_waiters) {
    Pipe p;
    BOOST_REQUIRE(::write(p.write_fd, "abcd", 4) == 4);
    reactor::Scheduler sched;
    const int fd = p.read_fd;

    // [snippet:fd_waiters]
    std::string got;
    // One-shot: removed before it runs; to hear the fd again, register again.
    std::function<void()> read_one = [&] {
        char c;
        if (::read(fd, &c, 1) == 1) got += c;
        if (got.size() < 2) sched.read_wait(fd, read_one);
    };
    sched.read_wait(fd, read_one);
    sched.run();  // got == "ab"

    // Persistent: runs on every readiness until removed.
    sched.add_reader(fd, [&] {
        char c;
        if (::read(fd, &c, 1) == 1) got += c;
        if (got.size() == 4) sched.remove_reader(fd);
    });
    sched.run();  // got == "abcd"
    // [end-snippet:fd_waiters]

    BOOST_TEST(got == "abcd");
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(parse_backend) {
    BOOST_TEST(serve("select") == 0);
    BOOST_TEST(serve("poll") == 0);
    BOOST_TEST(serve("epoll") == 0);
    BOOST_TEST(serve("kqueue") == 2);
}

BOOST_AUTO_TEST_CASE(exception_handler) {
    // [snippet:exception_handler]
    reactor::Scheduler sched;
    std::vector<std::string> errors;
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { errors.push_back(reactor::describe(ctx)); });
    sched.call_soon([] { throw std::runtime_error("boom"); });
    bool carried_on = false;
    sched.call_soon([&] { carried_on = true; });
    sched.run();
    // errors == {"reactor: exception in callback (from docs/snippets/scheduler.cpp:LINE): boom"}, carried_on
    // [end-snippet:exception_handler]

    BOOST_TEST_REQUIRE(errors.size() == 1u);
    BOOST_TEST(errors[0].starts_with("reactor: exception in callback (from "));
    BOOST_TEST(errors[0].find("docs/snippets/scheduler.cpp:") != std::string::npos);
    BOOST_TEST(errors[0].ends_with("): boom"));
    BOOST_TEST(carried_on);
}

BOOST_AUTO_TEST_CASE(closing_a_watched_fd) {
    auto p = std::make_unique<Pipe>();
    reactor::Scheduler sched;  // select: reports at its next wait
    std::vector<reactor::ErrorContext> reports;
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx); });
    const int fd = p->read_fd;

    // [snippet:close_fd]
    bool ran = false;
    sched.read_wait(fd, [&] { ran = true; });
    ::close(fd);  // no remove_reader first: allowed, on every backend
    sched.run();  // the waiter is dropped and reported (ErrorContext::fd == fd); run() returns
    // [end-snippet:close_fd]
    p->read_fd = -1;

    BOOST_TEST(!ran);
    BOOST_TEST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(reports[0].fd == fd);
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(periodic_timer) {
    reactor::Scheduler sched;
    // [snippet:periodic]
    int ticks = 0;
    reactor::Handle tick;
    tick = sched.call_every(
        5ms,
        [&] {
            if (++ticks == 3) tick.cancel();  // cancelling from inside the callback is fine
        },
        reactor::Periodic::fixed_rate);  // or fixed_delay: no default, the choice is yours
    sched.run();  // ticks == 3: an armed periodic timer is work, a cancelled one is not
    // [end-snippet:periodic]

    BOOST_TEST(ticks == 3);
    BOOST_TEST(!tick.is_pending());
    BOOST_TEST(sched.empty());
    BOOST_CHECK_THROW(sched.call_every(0ms, [] {}, reactor::Periodic::fixed_delay), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(signal_handler) {
    reactor::Scheduler sched;
    // What `kill -TERM <pid>` would do, once the loop runs.
    sched.call_soon([] { BOOST_TEST(::kill(::getpid(), SIGTERM) == 0); });
    // If the handler never ran, this ends the case, and `terms` fails it.
    reactor::Handle guard = sched.call_later(10s, [&] { sched.stop(); });
    // [snippet:signals]
    int terms = 0;
    sched.add_signal_handler(SIGTERM, [&] {  // runs on the loop thread, never in signal context
        ++terms;
        sched.stop();
    });
    sched.run_forever();  // a signal handler is not work: run() would return at once
    sched.remove_signal_handler(SIGTERM);  // the previous disposition is back
    // [end-snippet:signals]
    guard.cancel();

    BOOST_TEST(terms == 1);
    BOOST_TEST(sched.signal_handler_count() == 0u);
    BOOST_CHECK_THROW(sched.add_signal_handler(SIGKILL, [] {}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(run_for) {
    reactor::Scheduler sched;
    // [snippet:run_for]
    reactor::Handle later = sched.call_later(1h, [] {});
    reactor::RunStatus a = sched.run_for(10ms);  // timed_out: the timer is still due in an hour
    later.cancel();
    reactor::RunStatus b = sched.run_for(1h);    // idle: nothing left, it returns at once
    sched.call_soon([&] { sched.stop(); });
    reactor::RunStatus c = sched.run_for(1h);    // stopped
    // [end-snippet:run_for]

    BOOST_TEST((a == reactor::RunStatus::timed_out));
    BOOST_TEST((b == reactor::RunStatus::idle));
    BOOST_TEST((c == reactor::RunStatus::stopped));
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(close_and_live) {
    std::vector<std::string> reports;
    // [snippet:close]
    reactor::Scheduler sched;
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    sched.call_later(1h, [] {});  // forgotten: still alive when the program ends
    std::vector<reactor::LiveItem> alive = sched.live();  // one timer, "created at app.cpp:LINE"
    sched.close();
    // reports == {"still alive at close: timer (due in 3600.000 s) created at app.cpp:LINE",
    //             "close: 1 item(s) were still alive: ..."}; sched is empty, and may run again
    // [end-snippet:close]

    BOOST_TEST(alive.size() == 1u);
    BOOST_TEST((alive[0].kind == reactor::LiveItem::Kind::timer));
    BOOST_REQUIRE(reports.size() == 2u);
    BOOST_TEST(reports[0].find("still alive at close: timer (due in 3600.000 s) created at") == 0u);
    BOOST_TEST(reports[1].find("close: 1 item(s) were still alive") == 0u);
    BOOST_TEST(sched.empty());
    BOOST_TEST(sched.live().empty());
}

BOOST_AUTO_TEST_SUITE_END()
