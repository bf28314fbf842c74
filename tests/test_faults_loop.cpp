// SPDX-License-Identifier: MIT
// The loop under a failing kernel: each system call the Scheduler and the
// callback sockets make is made to fail (tests/support/syscall_faults.hpp),
// once and for good, and the outcome checked: a clear error reaches the
// right owner, the loop keeps serving the rest, nothing spins, nothing is
// sticky, nothing is left behind. docs/faults.md is the table these cases
// keep true. Runs once per backend; cases about one backend's call skip the
// others with the reason.
#include <boost/test/unit_test.hpp>

#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <reactor/loop_group.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/group_listener.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/net/udp_socket.hpp>
#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/fds.hpp"
#include "support/net_util.hpp"
#include "support/syscall_faults.hpp"

namespace faults = reactor_test::faults;  // the fault-injection library (support/syscall_faults.hpp)

using namespace std::chrono_literals;
using faults::Call;
using reactor::Backend;
using reactor::Scheduler;
using reactor_test::backend_under_test;

namespace {

// Every wait in these cases is bounded by this, so a broken loop fails the
// case instead of hanging it; generous for a loaded machine.
constexpr auto kGuard = 20s;

// The call the backend under test waits in.
Call wait_call() {
    switch (backend_under_test()) {
    case Backend::select: return Call::select;
    case Backend::poll: return Call::poll;
    case Backend::epoll: return Call::epoll_wait;
    }
    return Call::select;
}

// What the exception handler received.
struct Reports {
    explicit Reports(Scheduler& s) {
        s.set_exception_handler([this](const reactor::ErrorContext& ctx) { lines.push_back(reactor::describe(ctx)); });
    }
    bool any_mentions(const std::string& text) const {
        for (const std::string& line : lines)
            if (line.find(text) != std::string::npos) return true;
        return false;
    }
    std::vector<std::string> lines;
};

// The number of the loop's wake-up eventfd, found in /proc/self/fd.
int eventfd_number() {
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        const auto target = std::filesystem::read_symlink(entry.path(), ec);
        if (!ec && target.string() == "anon_inode:[eventfd]") return std::stoi(entry.path().filename().string());
    }
    return -1;
}

// Every eventfd open in this process (each loop has one), in fd order.
std::vector<int> eventfd_numbers() {
    std::vector<int> found;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        const auto target = std::filesystem::read_symlink(entry.path(), ec);
        if (!ec && target.string() == "anon_inode:[eventfd]") found.push_back(std::stoi(entry.path().filename().string()));
    }
    std::sort(found.begin(), found.end());
    return found;
}

// The number the next socket, pipe or accepted connection will get.
int next_fd_number() {
    const int fd = ::dup(0);
    BOOST_REQUIRE(fd >= 0);
    ::close(fd);
    return fd;
}

// The number a Client's connection will get on the server's side: the
// client's own socket takes the lowest free number first, the accepted one
// the next.
int next_accepted_number() {
    const int client = ::dup(0);
    const int accepted = ::dup(0);
    BOOST_REQUIRE((client >= 0 && accepted >= 0));
    ::close(client);
    ::close(accepted);
    return accepted;
}

std::size_t open_fd_count() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// An echo server on 127.0.0.1 (port 0), for the socket cases.
reactor::ListenerPtr echo_server(Scheduler& s) {
    return reactor::Listener::listen(s, reactor::Address::parse("127.0.0.1", 0), [](const reactor::ConnectionPtr& c) {
        c->set_data_callback([](reactor::Connection& c, std::string_view data) { c.write(data); });
    });
}

// A blocking client in its own thread (the loop runs in the test's): sends
// `message` and returns what came back before EOF, a reset or its timeout;
// then wakes the loop, whose run_until is waiting for `done`.
struct Client {
    Client(Scheduler& s, std::uint16_t port, std::string message)
        : thread([this, &s, port, message] {
              const int fd = reactor_test::connect_blocking(port);
              if (fd < 0) {
                  result = "connect failed";
              } else {
                  // The first error the client sees, sending or receiving.
                  if (!reactor_test::send_all(fd, message)) error = errno;
                  ::shutdown(fd, SHUT_WR);
                  char buf[256];
                  ssize_t n;
                  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) result.append(buf, static_cast<std::size_t>(n));
                  if (n < 0 && error == 0) error = errno;
                  ::close(fd);
              }
              done = true;
              s.call_soon_threadsafe([] {});
          }) {}
    ~Client() { thread.join(); }
    std::string result;
    int error = 0;
    std::atomic<bool> done{false};
    std::thread thread;
};

}  // namespace

// ---------------------------------------------------------------- the selector's wait

// A wait that fails now and then (ENOMEM, ENOBUFS) is reported and retried:
// the timers still fire, in order, and the loop ends as it would have.
BOOST_AUTO_TEST_CASE(transient_wait_failures_are_reported_and_retried) {
    for (int error : {ENOMEM, ENOBUFS}) {
        faults::Disarm disarm;
        Scheduler s(reactor_test::on(backend_under_test()));
        Reports reports(s);
        reactor_test::Pipe p;
        std::vector<int> fired;
        bool read = false;
        s.read_wait(p.r, [&] { read = true; });  // something to wait for: the selector is called
        for (int i = 1; i <= 3; ++i) s.call_later(i * 5ms, [&fired, i] { fired.push_back(i); });
        s.call_later(20ms, [&] { p.put(); });
        faults::arm(wait_call(), {.error = error, .after = 0, .times = 3});
        s.run();
        BOOST_TEST(faults::injected(wait_call()) == 3u);
        BOOST_TEST(fired == (std::vector<int>{1, 2, 3}));
        BOOST_TEST(read);
        BOOST_TEST(s.stats().selector_failures == 3u);
        BOOST_TEST_REQUIRE(!reports.lines.empty());
        // The first failure is reported at once; the next two within the second may be left out.
        BOOST_TEST(reports.lines.size() <= 3u);
        BOOST_TEST(reports.any_mentions(std::string(reactor::to_string(backend_under_test())) + " backend"));
        BOOST_TEST(reports.any_mentions("retrying"));
        BOOST_TEST(reports.any_mentions(std::strerror(error)));
        CHECK_EMPTY(s);
    }
}

// The same error for good: run() gives up with a std::system_error that
// names the backend, the call and the error, after Scheduler::kWaitFailureLimit
// tries (about a second), instead of spinning or aborting.
BOOST_AUTO_TEST_CASE(persistent_wait_failure_ends_run_with_a_clear_error) {
    faults::Disarm disarm;
    Scheduler s(reactor_test::on(backend_under_test()));
    Reports reports(s);
    reactor_test::Pipe p;
    s.read_wait(p.r, [] {});
    faults::arm(wait_call(), {.error = ENOMEM, .times = faults::kForever});
    const auto start = std::chrono::steady_clock::now();
    try {
        s.run();
        BOOST_FAIL("run() returned");
    } catch (const std::system_error& e) {
        const std::string what = e.what();
        BOOST_TEST_MESSAGE(what);
        BOOST_TEST(e.code().value() == ENOMEM);
        BOOST_TEST(what.find(std::string(reactor::to_string(backend_under_test())) + " backend") != std::string::npos);
        BOOST_TEST(what.find(backend_under_test() == Backend::epoll ? "epoll_wait" : reactor::to_string(backend_under_test())) != std::string::npos);
        BOOST_TEST(what.find("in a row") != std::string::npos);
    }
    BOOST_TEST(faults::injected(wait_call()) == Scheduler::kWaitFailureLimit);
    BOOST_TEST((std::chrono::steady_clock::now() - start < kGuard));
    faults::disarm_all();
    // The loop is whole: it serves again once the kernel does.
    p.put();
    s.run();
    CHECK_EMPTY(s);
}

// EBADF, EINVAL: the loop's own state is broken; retrying cannot help, so
// run() throws at the first one.
BOOST_AUTO_TEST_CASE(broken_state_errors_end_run_at_once) {
    for (int error : {EBADF, EINVAL}) {
        faults::Disarm disarm;
        Scheduler s(reactor_test::on(backend_under_test()));
        reactor_test::Pipe p;
        s.read_wait(p.r, [] {});
        faults::arm(wait_call(), {.error = error, .times = faults::kForever});
        if (backend_under_test() == Backend::select && error == EBADF) {
            // select's EBADF means "a watched fd was closed": the backend
            // looks for it, finds every fd open, and says so.
            BOOST_CHECK_EXCEPTION(s.run(), std::system_error, [](const std::system_error& e) {
                return std::string(e.what()).find("every watched fd is open") != std::string::npos;
            });
        } else {
            BOOST_CHECK_EXCEPTION(s.run(), std::system_error,
                                  [error](const std::system_error& e) { return e.code().value() == error; });
        }
        BOOST_TEST(faults::injected(wait_call()) == 1u);
        faults::disarm_all();
        p.put();
        s.run();
        CHECK_EMPTY(s);
    }
}

// ---------------------------------------------------------------- creating a loop

BOOST_AUTO_TEST_CASE(no_wakeup_eventfd_is_a_clear_error_at_construction) {
    faults::Disarm disarm;
    const std::size_t before = open_fd_count();
    faults::arm(Call::eventfd, {.error = EMFILE});
    BOOST_CHECK_EXCEPTION(Scheduler(reactor_test::on(backend_under_test())), std::system_error,
                          [](const std::system_error& e) {
                              return e.code().value() == EMFILE &&
                                     std::string(e.what()).find("wake-up eventfd") != std::string::npos;
                          });
    BOOST_TEST(open_fd_count() == before);  // the epoll fd, if any, was closed again
}

BOOST_AUTO_TEST_CASE(no_epoll_fd_is_a_clear_error_at_construction,
                     *reactor_test::only_on(Backend::epoll)) {
    faults::Disarm disarm;
    faults::arm(Call::epoll_create1, {.error = EMFILE});
    BOOST_CHECK_EXCEPTION(Scheduler(reactor_test::on(Backend::epoll)), std::system_error,
                          [](const std::system_error& e) {
                              return e.code().value() == EMFILE &&
                                     std::string(e.what()).find("epoll backend: epoll_create1") != std::string::npos;
                          });
}

// ---------------------------------------------------------------- the wake-up write

// One failed write to the wake-up eventfd (a post from another thread) is
// not sticky: the post is found at the loop's next iteration, and the next
// post wakes the loop as usual. A post writes only to a loop asleep in its
// selector, so the poster posts until one write has been tried (the loop
// fell asleep, idle, with nothing but a far guard timer to wake it): that
// write fails, and the next post's write must be tried, work, and bring
// every post in.
BOOST_AUTO_TEST_CASE(failed_wakeup_write_from_a_post_is_not_sticky) {
    faults::Disarm disarm;
    Scheduler s(reactor_test::on(backend_under_test()));
    const int wakeup = eventfd_number();
    BOOST_REQUIRE(wakeup >= 0);
    std::atomic<int> posts_run{0};
    std::atomic<int> posts_made{0};
    std::atomic<bool> poster_done{false};
    faults::arm(Call::write, {.error = EAGAIN, .after = 0, .times = 1, .fd = wakeup});
    constexpr int kMaxTries = 20'000;  // 1 ms apart: far beyond any loop falling asleep
    std::thread poster([&] {
        for (int i = 0; i < kMaxTries && faults::matched(Call::write) == 0; ++i) {
            ++posts_made;
            s.call_soon_threadsafe([&] { ++posts_run; });
            std::this_thread::sleep_for(1ms);
        }
        // The failed write left the loop asleep; this post must wake it.
        ++posts_made;
        s.call_soon_threadsafe([&] { ++posts_run; });
        poster_done = true;
    });
    const bool all_run =
        reactor_test::run_until(s, [&] { return poster_done && posts_run == posts_made; }, kGuard);
    poster.join();
    BOOST_TEST(all_run);
    BOOST_TEST(faults::injected(Call::write) == 1u);
    BOOST_TEST(faults::matched(Call::write) == 2u);
    BOOST_TEST(posts_run == posts_made);
    BOOST_TEST(s.stats().wakeup_failures == 1u);
    BOOST_TEST(s.stats().wakeup_writes == 1u);
    s.run();
    CHECK_EMPTY(s);
}

// The same from the signal handler: a SIGTERM whose wake-up write failed is
// not lost for good, and later signals still wake the loop (a server used to
// ignore SIGTERM for ever after one failure). A signal writes only to a loop
// asleep in its selector, so the sender signals until one write has been
// tried (the loop fell asleep, idle, with nothing but a far guard timer to
// wake it): that write fails, and the next signal's must wake the loop. The
// handler stops the loop only after the failure: a signal that came while
// the loop was awake proves nothing (it used to stop the loop before any
// write was tried, on a loaded machine).
BOOST_AUTO_TEST_CASE(failed_wakeup_write_from_a_signal_is_not_sticky) {
    faults::Disarm disarm;
    Scheduler s(reactor_test::on(backend_under_test()));
    const int wakeup = eventfd_number();
    BOOST_REQUIRE(wakeup >= 0);
    int handled = 0;
    s.add_signal_handler(SIGUSR1, [&] {
        ++handled;
        if (faults::injected(Call::write) == 1) s.stop();
    });
    faults::arm(Call::write, {.error = EIO, .after = 0, .times = 1, .fd = wakeup});
    std::thread sender([] {
        constexpr int kMaxTries = 10'000;  // 1 ms apart: far beyond any loop falling asleep
        for (int i = 0; i < kMaxTries && faults::matched(Call::write) == 0; ++i) {
            ::kill(::getpid(), SIGUSR1);  // until one's wake-up is tried, and fails
            std::this_thread::sleep_for(1ms);
        }
        ::kill(::getpid(), SIGUSR1);  // this one must wake the loop
    });
    auto guard = s.call_later(kGuard, [&] { s.stop(); });
    const auto start = std::chrono::steady_clock::now();
    s.run_forever();
    sender.join();
    guard.cancel();
    BOOST_TEST(faults::injected(Call::write) == 1u);
    BOOST_TEST(handled >= 1);
    BOOST_TEST((std::chrono::steady_clock::now() - start < kGuard / 2));
    BOOST_TEST(s.remove_signal_handler(SIGUSR1));
    s.run();
    CHECK_EMPTY(s);
}

// A wake-up write that keeps failing, and nothing else to wake the loop: a
// post must not wait for the next post (there is none) or for the loop's far
// guard timer, but be taken within the loop's recheck interval. The poster
// posts until one write has been tried and failed (the loop asleep), then
// stops; every post must run long before the guard.
BOOST_AUTO_TEST_CASE(a_post_whose_wakeup_failed_runs_without_another_post) {
    faults::Disarm disarm;
    reactor::SchedulerOptions options = reactor_test::on(backend_under_test());
    options.wakeup_recheck_interval = 50ms;
    Scheduler s(options);
    const int wakeup = eventfd_number();
    BOOST_REQUIRE(wakeup >= 0);
    std::atomic<int> posts_run{0};
    std::atomic<int> posts_made{0};
    std::atomic<bool> poster_done{false};
    faults::arm(Call::write, {.error = EAGAIN, .times = faults::kForever, .fd = wakeup});
    std::thread poster([&] {
        constexpr int kMaxTries = 20'000;  // 1 ms apart: far beyond any loop falling asleep
        for (int i = 0; i < kMaxTries && faults::injected(Call::write) == 0; ++i) {
            ++posts_made;
            s.call_soon_threadsafe([&] { ++posts_run; });
            std::this_thread::sleep_for(1ms);
        }
        poster_done = true;  // and no post after the failure
    });
    const bool all_run =
        reactor_test::run_until(s, [&] { return poster_done && posts_run == posts_made; }, kGuard);
    poster.join();
    BOOST_TEST(all_run);
    BOOST_TEST(faults::injected(Call::write) >= 1u);
    BOOST_TEST(posts_run == posts_made);
    BOOST_TEST(s.stats().wakeup_failures >= 1u);
    faults::disarm_all();
    s.run();
    CHECK_EMPTY(s);
}

// The same for a signal, with the default recheck interval (a second): a
// SIGTERM whose wake-up write failed is handled even though no other signal,
// post or I/O comes (an idle server used to ignore it until a client came).
BOOST_AUTO_TEST_CASE(a_signal_whose_wakeup_failed_is_handled_without_another_signal) {
    faults::Disarm disarm;
    Scheduler s(reactor_test::on(backend_under_test()));
    const int wakeup = eventfd_number();
    BOOST_REQUIRE(wakeup >= 0);
    bool handled_after_failure = false;
    s.add_signal_handler(SIGUSR1, [&] {
        if (faults::injected(Call::write) == 0) return;  // came while the loop was awake: proves nothing
        handled_after_failure = true;
        s.stop();
    });
    faults::arm(Call::write, {.error = EAGAIN, .times = faults::kForever, .fd = wakeup});
    std::thread sender([] {
        constexpr int kMaxTries = 10'000;  // 1 ms apart: far beyond any loop falling asleep
        for (int i = 0; i < kMaxTries && faults::injected(Call::write) == 0; ++i) {
            ::kill(::getpid(), SIGUSR1);  // until one's wake-up is tried, and fails; then no more
            std::this_thread::sleep_for(1ms);
        }
    });
    bool guard_fired = false;
    auto guard = s.call_later(kGuard, [&] {
        guard_fired = true;
        s.stop();
    });
    s.run_forever();
    sender.join();
    guard.cancel();
    BOOST_TEST(faults::injected(Call::write) >= 1u);
    BOOST_TEST(handled_after_failure);
    BOOST_TEST(!guard_fired);
    faults::disarm_all();
    BOOST_TEST(s.remove_signal_handler(SIGUSR1));
    s.run();
    CHECK_EMPTY(s);
}

// A connection handed to another loop of a group whose wake-up write fails
// (the issue's --loops 2 echo server: a client handed to the idle second
// loop got no echo until another client woke that loop) is served within the
// recheck interval. Clients connect one at a time, each answered before the
// next; round-robin gives loop 1 every second one. Whether loop 1 is asleep
// (so that a hand-off must write its eventfd) when a client comes is up to
// the machine's load, so clients keep coming, each of them answered, until
// at least one came while it slept (a bounded number).
BOOST_AUTO_TEST_CASE(a_connection_handed_to_a_loop_whose_wakeup_failed_is_served) {
    faults::Disarm disarm;
    std::vector<int> before_loop_1;
    reactor::LoopGroupOptions group_options;
    group_options.loops = 2;
    group_options.loop_options = [&](std::size_t i) {
        if (i == 1) before_loop_1 = eventfd_numbers();
        reactor::SchedulerOptions o = reactor_test::on(backend_under_test());
        o.wakeup_recheck_interval = 50ms;
        return o;
    };
    reactor::LoopGroup group(group_options);
    std::vector<int> loop_1_wakeup;
    for (int fd : eventfd_numbers())
        if (std::find(before_loop_1.begin(), before_loop_1.end(), fd) == before_loop_1.end()) loop_1_wakeup.push_back(fd);
    BOOST_REQUIRE(loop_1_wakeup.size() == 1u);
    reactor::GroupListener::Options options;
    options.spreading = reactor::Spreading::round_robin;
    auto listener = reactor::GroupListener::listen(
        group, reactor::Address::parse("127.0.0.1:0"), [](const reactor::ConnectionPtr& c, std::size_t loop) {
            c->set_data_callback([loop](reactor::Connection& c, std::string_view) { c.write(std::to_string(loop) + "\n"); });
        },
        options);
    group.start();
    faults::arm(Call::write, {.error = EAGAIN, .times = faults::kForever, .fd = loop_1_wakeup[0]});
    std::vector<std::size_t> answered;
    for (int i = 0; i < 200 && (i < 4 || faults::injected(Call::write) == 0); ++i) {
        const int fd = reactor_test::connect_blocking(listener->address().port());
        BOOST_REQUIRE(fd >= 0);
        timeval limit{static_cast<time_t>(kGuard.count()), 0};  // a lost hand-off fails here, not hangs
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
        BOOST_REQUIRE(::send(fd, "?", 1, MSG_NOSIGNAL) == 1);
        std::string answer;
        char c;
        while (::recv(fd, &c, 1, 0) == 1 && c != '\n') answer.push_back(c);
        ::close(fd);
        BOOST_REQUIRE_MESSAGE(!answer.empty(), "client " << i << " got no answer");
        answered.push_back(std::stoul(answer));
    }
    BOOST_TEST(std::count(answered.begin(), answered.end(), 1u) == static_cast<long>(answered.size() / 2));
    BOOST_TEST(faults::injected(Call::write) >= 1u);  // loop 1 was asleep when handed a client
    listener->close();
    group.stop();
}

// ---------------------------------------------------------------- registration (epoll_ctl)

// The kernel refuses to watch an accepted connection: the connection is
// aborted with the error as its close reason (the client sees a reset at
// once, not a hang), its fd is closed, and the next client is served.
BOOST_AUTO_TEST_CASE(unwatchable_connection_is_aborted_and_the_next_is_served,
                     *reactor_test::only_on(Backend::epoll)) {
    for (int error : {ENOMEM, ENOSPC}) {
        faults::Disarm disarm;
        Scheduler s(reactor_test::on(Backend::epoll));
        Reports reports(s);
        std::vector<reactor::CloseReason> reasons;
        auto listener = reactor::Listener::listen(s, reactor::Address::parse("127.0.0.1", 0),
                                                  [&](const reactor::ConnectionPtr& c) {
                                                      c->set_data_callback([](reactor::Connection& c, std::string_view d) { c.write(d); });
                                                      c->set_close_callback([&](reactor::Connection&, reactor::CloseReason r) { reasons.push_back(r); });
                                                  });
        s.call_soon([] {});
        s.run_once();  // the listener is registered with the kernel (not blocking: a callback is ready)
        const std::size_t fds_before = open_fd_count();
        faults::arm(Call::epoll_ctl, {.error = error, .times = faults::kForever, .fd = next_accepted_number()});
        {
            Client refused(s, listener->address().port(), "hello");
            BOOST_TEST(reactor_test::run_until(s, [&] { return refused.done && reasons.size() == 1; }, kGuard));
            BOOST_TEST(refused.result == "");
            BOOST_TEST((refused.error == ECONNRESET || refused.error == EPIPE));  // a reset, seen sending or receiving
        }
        BOOST_TEST_REQUIRE(reasons.size() == 1u);
        BOOST_TEST((reasons[0].kind == reactor::CloseKind::error));
        BOOST_TEST(reasons[0].error.value() == error);
        BOOST_TEST(open_fd_count() == fds_before);  // nothing leaked
        BOOST_TEST(reports.lines.empty());          // the owner heard it, not the exception handler
        faults::disarm_all();
        {
            Client served(s, listener->address().port(), "hello");
            BOOST_TEST(reactor_test::run_until(s, [&] { return served.done && reasons.size() == 2; }, kGuard));
            BOOST_TEST(served.result == "hello");
        }
        listener->close();
        s.run();
        CHECK_EMPTY(s);
    }
}

// The kernel refuses to watch the listening socket itself: the listener
// stops listening and says why, through its error callback (or else the
// exception handler) and failure(), instead of claiming to listen and never
// accepting.
BOOST_AUTO_TEST_CASE(unwatchable_listener_reports_itself_failed,
                     *reactor_test::only_on(Backend::epoll)) {
    faults::Disarm disarm;
    Scheduler s(reactor_test::on(Backend::epoll));
    Reports reports(s);
    const int number = next_fd_number();
    faults::arm(Call::epoll_ctl, {.error = ENOSPC, .times = faults::kForever, .fd = number});
    auto listener = echo_server(s);
    BOOST_REQUIRE(listener->fd() == number);
    std::vector<std::string> errors;
    listener->set_error_callback([&](reactor::Listener& l, std::error_code ec, std::string_view what) {
        BOOST_TEST(!l.is_listening());
        errors.push_back(std::string(what) + ": " + ec.message());
    });
    s.run();  // ends: the listener closed itself
    BOOST_TEST(!listener->is_listening());
    BOOST_TEST(listener->failure().value() == ENOSPC);
    BOOST_TEST_REQUIRE(errors.size() == 1u);
    BOOST_TEST(errors[0].find("stopped listening") != std::string::npos);
    BOOST_TEST(reports.lines.empty());  // the callback heard it
    CHECK_EMPTY(s);

    // Without an error callback, the exception handler hears it.
    const int again = next_fd_number();
    faults::arm(Call::epoll_ctl, {.error = ENOMEM, .times = faults::kForever, .fd = again});
    auto second = echo_server(s);
    BOOST_REQUIRE(second->fd() == again);
    s.run();
    BOOST_TEST(!second->is_listening());
    BOOST_TEST(second->failure().value() == ENOMEM);
    BOOST_TEST_REQUIRE(reports.lines.size() == 1u);
    BOOST_TEST(reports.any_mentions("cannot watch the listening socket; stopped listening"));
    BOOST_TEST(reports.any_mentions(std::strerror(ENOMEM)));
    CHECK_EMPTY(s);
}

// A raw fd waiter (no owner) that cannot be watched is dropped and reported
// through the exception handler, naming the fd and the error.
BOOST_AUTO_TEST_CASE(unwatchable_raw_waiter_is_reported,
                     *reactor_test::only_on(Backend::epoll)) {
    faults::Disarm disarm;
    Scheduler s(reactor_test::on(Backend::epoll));
    Reports reports(s);
    reactor_test::Pipe p;
    faults::arm(Call::epoll_ctl, {.error = ENOMEM, .times = 1, .fd = p.r});
    bool called = false;
    s.add_reader(p.r, [&] { called = true; });
    s.run();  // the waiter is dropped at the first wait: nothing is left
    BOOST_TEST(!called);
    BOOST_TEST_REQUIRE(reports.lines.size() == 1u);
    BOOST_TEST(reports.any_mentions("fd " + std::to_string(p.r.get()) + " cannot be watched"));
    BOOST_TEST(reports.any_mentions(std::strerror(ENOMEM)));
    CHECK_EMPTY(s);
}

// ---------------------------------------------------------------- accept, recv, send

// The listener out of fds: accepting pauses and resumes, the error callback
// hears it, and the client waiting in the backlog is served after the pause.
BOOST_AUTO_TEST_CASE(accept_failures_pause_accepting_and_lose_no_client) {
    for (int error : {EMFILE, ENFILE, ENOBUFS, ENOMEM}) {
        faults::Disarm disarm;
        Scheduler s(reactor_test::on(backend_under_test()));
        auto listener = echo_server(s);
        std::vector<int> errors;
        listener->set_error_callback([&](reactor::Listener&, std::error_code ec, std::string_view) { errors.push_back(ec.value()); });
        faults::arm(Call::accept4, {.error = error, .times = 2, .fd = listener->fd()});
        {
            Client client(s, listener->address().port(), "through the backlog");
            BOOST_TEST(reactor_test::run_until(s, [&] { return client.done.load(); }, kGuard));
            BOOST_TEST(client.result == "through the backlog");
        }
        BOOST_TEST(faults::injected(Call::accept4) == 2u);
        BOOST_TEST(errors == (std::vector<int>{error, error}));
        BOOST_TEST(listener->accept_failures() == 2u);
        listener->close();
        s.run();
        CHECK_EMPTY(s);
    }
}

// A receive that fails closes that connection with the error as its reason;
// the listener and the other connections go on.
BOOST_AUTO_TEST_CASE(receive_failure_closes_only_that_connection) {
    for (int error : {EIO, ENOMEM, ECONNRESET}) {
        faults::Disarm disarm;
        Scheduler s(reactor_test::on(backend_under_test()));
        std::vector<reactor::CloseReason> reasons;
        reactor::ConnectionPtr first;
        auto listener = reactor::Listener::listen(s, reactor::Address::parse("127.0.0.1", 0),
                                                  [&](const reactor::ConnectionPtr& c) {
                                                      if (!first) first = c;
                                                      c->set_data_callback([](reactor::Connection& c, std::string_view d) { c.write(d); });
                                                      c->set_close_callback([&](reactor::Connection&, reactor::CloseReason r) { reasons.push_back(r); });
                                                  });
        const int victim = reactor_test::connect_blocking(listener->address().port());
        BOOST_TEST(reactor_test::run_until(s, [&] { return first != nullptr; }, kGuard));
        faults::arm(Call::recv, {.error = error, .times = 1, .fd = first->fd()});
        reactor_test::send_all(victim, "x");
        BOOST_TEST(reactor_test::run_until(s, [&] { return reasons.size() == 1; }, kGuard));
        BOOST_TEST_REQUIRE(reasons.size() == 1u);
        BOOST_TEST(reasons[0].error.value() == error);
        BOOST_TEST((reasons[0].kind == (error == ECONNRESET ? reactor::CloseKind::reset : reactor::CloseKind::error)));
        ::close(victim);
        {
            Client other(s, listener->address().port(), "still serving");
            BOOST_TEST(reactor_test::run_until(s, [&] { return other.done.load(); }, kGuard));
            BOOST_TEST(other.result == "still serving");
        }
        first.reset();
        listener->close();
        s.run();
        CHECK_EMPTY(s);
    }
}

// A send that fails (other than EAGAIN) closes that connection with the
// error; what it had buffered is dropped, as a reset would drop it.
BOOST_AUTO_TEST_CASE(send_failure_closes_only_that_connection) {
    faults::Disarm disarm;
    Scheduler s(reactor_test::on(backend_under_test()));
    std::vector<reactor::CloseReason> reasons;
    auto listener = reactor::Listener::listen(s, reactor::Address::parse("127.0.0.1", 0),
                                              [&](const reactor::ConnectionPtr& c) {
                                                  c->set_data_callback([](reactor::Connection& c, std::string_view d) { c.write(d); });
                                                  c->set_close_callback([&](reactor::Connection&, reactor::CloseReason r) { reasons.push_back(r); });
                                              });
    // Whichever of send and writev the connection uses for a short echo
    // fails: both are armed for its fd.
    const int accepted = next_accepted_number();
    faults::arm(Call::send, {.error = EIO, .times = faults::kForever, .fd = accepted});
    faults::arm(Call::writev, {.error = EIO, .times = faults::kForever, .fd = accepted});
    {
        Client victim(s, listener->address().port(), "lost");
        BOOST_TEST(reactor_test::run_until(s, [&] { return victim.done && reasons.size() == 1; }, kGuard));
        BOOST_TEST(victim.result == "");
    }
    BOOST_TEST(faults::injected(Call::send) + faults::injected(Call::writev) >= 1u);
    BOOST_TEST_REQUIRE(reasons.size() == 1u);
    BOOST_TEST((reasons[0].kind == reactor::CloseKind::error));
    BOOST_TEST((reasons[0].error == std::errc::io_error));
    faults::disarm_all();
    {
        Client other(s, listener->address().port(), "still serving");
        BOOST_TEST(reactor_test::run_until(s, [&] { return other.done.load(); }, kGuard));
        BOOST_TEST(other.result == "still serving");
    }
    listener->close();
    s.run();
    CHECK_EMPTY(s);
}

// The kernel refuses to watch a connecting socket: the connect callback
// hears the error (it used to be dropped silently with the waiter that held
// the connect, and the callback never ran); with a second address, that one
// is tried and connects.
BOOST_AUTO_TEST_CASE(unwatchable_connecting_socket_fails_the_connect,
                     *reactor_test::only_on(Backend::epoll)) {
    faults::Disarm disarm;
    Scheduler s(reactor_test::on(Backend::epoll));
    Reports reports(s);
    auto listener = echo_server(s);
    std::vector<std::error_code> outcomes;
    std::vector<reactor::ConnectionPtr> connections;
    auto record = [&](reactor::ConnectionPtr c, std::error_code error) {
        outcomes.push_back(error);
        if (c) connections.push_back(std::move(c));
    };
    faults::arm(Call::epoll_ctl, {.error = ENOMEM, .times = 1, .fd = next_fd_number()});
    reactor::connect(s, listener->address(), record);
    BOOST_TEST(reactor_test::run_until(s, [&] { return outcomes.size() == 1; }, kGuard));
    BOOST_TEST_REQUIRE(outcomes.size() == 1u);
    BOOST_TEST(outcomes[0].value() == ENOMEM);
    BOOST_TEST(connections.empty());
    // Two addresses: the first cannot be watched, the second connects.
    faults::arm(Call::epoll_ctl, {.error = ENOSPC, .times = 1, .fd = next_fd_number()});
    reactor::connect(s, std::vector<reactor::Address>{listener->address(), listener->address()}, record);
    BOOST_TEST(reactor_test::run_until(s, [&] { return outcomes.size() == 2; }, kGuard));
    BOOST_TEST_REQUIRE(outcomes.size() == 2u);
    BOOST_TEST(!outcomes[1]);
    BOOST_TEST(connections.size() == 1u);
    BOOST_TEST(reports.lines.empty());
    for (auto& c : connections) c->close();
    listener->close();
    s.run();
    CHECK_EMPTY(s);
}

// The kernel refuses to watch a UDP socket: its error callback hears it and
// the socket closes, instead of staying open and deaf.
BOOST_AUTO_TEST_CASE(unwatchable_udp_socket_reports_and_closes, *reactor_test::only_on(Backend::epoll)) {
    faults::Disarm disarm;
    Scheduler s(reactor_test::on(Backend::epoll));
    Reports reports(s);
    faults::arm(Call::epoll_ctl, {.error = ENOMEM, .times = 1, .fd = next_fd_number()});
    auto sock = reactor::UdpSocket::bind(s, reactor::Address::parse("127.0.0.1", 0));
    std::vector<int> errors;
    sock->set_error_callback([&](reactor::UdpSocket&, std::error_code ec, const reactor::Address&) { errors.push_back(ec.value()); });
    s.run();  // ends: the socket closed itself
    BOOST_TEST(errors == (std::vector<int>{ENOMEM}));
    BOOST_TEST(!sock->is_open());
    BOOST_TEST(reports.lines.empty());
    CHECK_EMPTY(s);
}

// ---------------------------------------------------------------- a loop group's threads

// A loop's thread cannot be started (pthread_create EAGAIN: out of memory or
// of threads; injected, as root ignores RLIMIT_NPROC). start() and run()
// throw std::system_error EAGAIN naming the loop, once the loops already
// started have ended (their threads joined: nothing hangs). Under run(),
// loop 0 has run nothing: a server's "listening on", scheduled there before
// run(), is never said.
BOOST_AUTO_TEST_CASE(a_loop_group_that_cannot_start_a_thread_names_the_loop) {
    faults::Disarm disarm;
    reactor::LoopGroupOptions options;
    options.loops = 3;
    options.loop_options = [](std::size_t) { return reactor_test::on(backend_under_test()); };
    for (const bool under_run : {false, true}) {
        for (const int started : {0, 1}) {
            BOOST_TEST_CONTEXT((under_run ? "run()" : "start()") << ", " << started << " threads started") {
                reactor::LoopGroup group(options);
                bool loop0_ran = false;
                group.loop(0).call_soon([&loop0_ran] { loop0_ran = true; });
                faults::arm(Call::pthread_create, {.error = EAGAIN, .after = started, .times = 1});
                // Under run(), loop 0 is the caller's: threads start at loop 1.
                const std::size_t first_threaded = under_run ? 1 : 0;
                const std::size_t failed = first_threaded + static_cast<std::size_t>(started);
                try {
                    if (under_run) {
                        group.run();
                    } else {
                        group.start();
                    }
                    BOOST_ERROR("the group must not start");
                } catch (const std::system_error& e) {
                    BOOST_TEST(e.code().value() == EAGAIN, e.what());
                    const std::string expected = "reactor: LoopGroup: cannot start the thread of loop " +
                                                 std::to_string(failed) + " (3 loops): " + std::strerror(EAGAIN);
                    BOOST_TEST(std::string(e.what()) == expected);
                }
                BOOST_TEST(faults::injected(Call::pthread_create) == 1u);
                faults::disarm(Call::pthread_create);
                // The loops that did start have ended: they refuse posts.
                for (std::size_t i = first_threaded; i < failed; ++i)
                    BOOST_TEST(!group.loop(i).try_call_soon_threadsafe([] {}), "loop " << i << " still runs");
                if (under_run) BOOST_TEST(!loop0_ran);
            }
        }
    }
}
