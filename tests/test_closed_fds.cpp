// SPDX-License-Identifier: MIT
// Closing watched fds and reusing their numbers, through the Scheduler, on
// every backend (CTest runs this suite once per backend). The contract under
// test: the owner of an fd needs no rule. It may close a watched fd at any
// time (inside a callback, between run() calls, after remove_reader or
// without it) and reuse the number for a new file, whose waiters then fire;
// forget_fd() is never needed. A closed fd whose file lives on elsewhere is
// reported and dropped, even while the loop is busy; a number that was never
// open is refused at registration.
//
// Every case ends with the scheduler empty (CHECK_EMPTY), and every wait is
// bounded by a guard timer that stops the loop, so a broken backend fails
// instead of hanging.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/select.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/fds.hpp"
#include "support/net_util.hpp"

using namespace std::chrono_literals;
using reactor::Scheduler;
using reactor_test::Fd;
using reactor_test::Pipe;

namespace {

// Long enough for a loaded CI machine, short enough that a broken backend
// fails in reasonable time: the cases wait for an event, never for this.
constexpr auto kGuard = 10s;

// Every report goes here; the cases say which fds they expect.
struct Reports {
    explicit Reports(Scheduler& s) {
        s.set_exception_handler([this](const reactor::ErrorContext& ctx) {
            fds.push_back(ctx.fd);
            lines.push_back(reactor::describe(ctx));
        });
    }
    std::vector<int> fds;
    std::vector<std::string> lines;
};

// An fd number below FD_SETSIZE that is not open, far above the ones a test
// process uses (above the kernel's fd table, where select(2) used to ignore it).
int unopened_number() {
    for (int fd = FD_SETSIZE - 1; fd > 512; --fd) {
        if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) return fd;
    }
    BOOST_FAIL("no free fd number between 512 and FD_SETSIZE");
    return -1;
}

// A loop on the backend under test, recording every report.
struct Loop {
    Scheduler s{reactor_test::on(reactor_test::backend_under_test())};
    Reports reports{s};

    // The new file behind a reused number is watched: `fired` comes true,
    // nothing was reported, and nothing is left registered.
    void expect_new_file_fires(const bool& fired) {
        BOOST_TEST(reactor_test::run_until(s, [&] { return fired; }, kGuard));
        BOOST_TEST(reports.fds.empty());
        CHECK_EMPTY(s);
    }
};

}  // namespace

// ---------------------------------------------------------------- reused numbers

// The first report: a one-shot waiter fires, run() returns, the pipe
// is closed and a new pipe gets the same numbers.
BOOST_FIXTURE_TEST_CASE(number_reused_between_runs_after_a_one_shot_fired, Loop) {
    int number = -1;
    {
        Pipe a;
        a.put();
        bool fired = false;
        s.read_wait(a.r.get(), [&] { fired = true; });
        s.run();
        BOOST_TEST_REQUIRE(fired);
        number = a.r.get();
    }  // both ends closed: the numbers are free again
    Pipe b;
    BOOST_TEST_REQUIRE(b.r.get() == number);  // the lowest free number comes back
    bool new_file_fired = false;
    s.read_wait(b.r.get(), [&] { new_file_fired = true; });
    b.put();
    expect_new_file_fires(new_file_fired);
}

// A persistent reader's callback closes its fd (after remove_reader or
// without it), the number comes back at once as another file, and the
// callback registers a reader for that new file.
void close_and_reuse_inside_the_callback(Loop& loop, bool remove_first) {
    Scheduler& s = loop.s;
    Pipe a, b;
    const int number = a.r.get();
    bool new_file_fired = false;
    s.add_reader(number, [&] {
        if (remove_first) s.remove_reader(number);
        a.r.become(b.r);  // closes a's read end; `number` is now b's
        s.add_reader(number, [&] {
            new_file_fired = true;
            s.remove_reader(number);
        });
        b.put();
    });
    a.put();
    loop.expect_new_file_fires(new_file_fired);
}

BOOST_FIXTURE_TEST_CASE(number_closed_and_reused_inside_its_callback_without_remove, Loop) {
    close_and_reuse_inside_the_callback(*this, false);
}

BOOST_FIXTURE_TEST_CASE(number_closed_and_reused_inside_its_callback_after_remove, Loop) {
    close_and_reuse_inside_the_callback(*this, true);
}

// A one-shot waiter re-arms itself on the same number after the number was
// closed and reused by its own callback.
BOOST_FIXTURE_TEST_CASE(one_shot_rearmed_on_a_number_its_callback_reused, Loop) {
    Pipe a, b;
    const int number = a.r.get();
    bool new_file_fired = false;
    s.read_wait(number, [&] {
        a.r.become(b.r);
        s.read_wait(number, [&] { new_file_fired = true; });
        b.put();
    });
    a.put();
    expect_new_file_fires(new_file_fired);
}

// Registered and seen by the kernel, closed between runs without
// remove_reader, reused, registered again (replacing the old reader).
BOOST_FIXTURE_TEST_CASE(number_closed_between_runs_without_remove_and_reused, Loop) {
    Pipe a, b;
    const int number = a.r.get();
    int old_reader_calls = 0;
    s.add_reader(number, [&] { ++old_reader_calls; });
    s.call_soon([] {});
    s.run_once();  // the reader is registered with the kernel; nothing was readable
    a.r.become(b.r);
    bool new_file_fired = false;
    s.add_reader(number, [&] {
        new_file_fired = true;
        s.remove_reader(number);
    });
    b.put();
    BOOST_TEST(reactor_test::run_until(s, [&] { return new_file_fired; }, kGuard));
    BOOST_TEST(old_reader_calls == 0);
    BOOST_TEST(reports.fds.empty());
    CHECK_EMPTY(s);
}

// ---------------------------------------------------------------- closed, file alive elsewhere

namespace {

// A persistent reader's fd is closed while a dup keeps its file open and
// readable: on epoll the kernel keeps reporting it. It must be reported through
// the exception handler within about a second, its waiter dropped, and never
// called once the number is closed, while the loop stays busy with other work the whole time:
// with callbacks always ready (the selector never blocks) or with another fd
// always readable (it blocks, but returns at once).
void closed_duplicated_fd_is_reported_while_busy(bool busy_with_callbacks) {
    Loop loop;
    Scheduler& s = loop.s;
    Reports& reports = loop.reports;
    Pipe p, busy;
    Fd keep(::dup(p.r.get()));
    BOOST_TEST_REQUIRE(keep.get() >= 0);
    const int number = p.r.get();
    p.put();  // the file stays readable for the whole test
    busy.put();

    bool reported = false, closed = false;
    int calls_after_close = 0, busy_rounds_after_report = 0;
    s.add_reader(number, [&] {
        if (closed) ++calls_after_close;
    });
    // The busy work goes on until 100 rounds after the report.
    auto busy_round = [&] {
        if (reported) ++busy_rounds_after_report;
        return busy_rounds_after_report < 100;
    };
    std::function<void()> spin = [&] {
        if (busy_round()) s.call_soon(spin);
    };
    if (busy_with_callbacks) {
        s.call_soon(spin);
    } else {
        s.add_reader(busy.r.get(), [&] {
            if (!busy_round()) s.remove_reader(busy.r.get());
        });
    }
    s.call_soon([] {});
    s.run_once();  // registered with the kernel

    const auto closed_at = std::chrono::steady_clock::now();
    p.r.close();  // no remove_reader, no forget_fd: `keep` holds the file open
    closed = true;
    std::chrono::steady_clock::duration took{};
    BOOST_TEST_REQUIRE(reactor_test::run_until(s, [&] {
        if (!reported && !reports.fds.empty()) {
            reported = true;
            took = std::chrono::steady_clock::now() - closed_at;
        }
        return busy_rounds_after_report >= 100;
    }, kGuard));
    BOOST_TEST_MESSAGE("reported after " << std::chrono::duration<double>(took).count() << " s");
    BOOST_TEST_REQUIRE(reports.fds.size() == 1u);
    BOOST_TEST(reports.fds[0] == number);
    BOOST_TEST(reports.lines[0].find("closed") != std::string::npos);
    // "About a second" on an idle machine; the bound leaves room for a loaded one.
    BOOST_TEST((took < 5s));
    // Never called for the closed number, not even before the report (epoll
    // used to call it a million times in that second), and no stale event
    // reaches anyone after it.
    BOOST_TEST(calls_after_close == 0);
    s.run();
    CHECK_EMPTY(s);
}

}  // namespace

BOOST_AUTO_TEST_CASE(closed_fd_whose_file_lives_on_is_reported_while_callbacks_keep_the_loop_busy) {
    closed_duplicated_fd_is_reported_while_busy(true);
}

BOOST_AUTO_TEST_CASE(closed_fd_whose_file_lives_on_is_reported_while_another_fd_keeps_the_loop_busy) {
    closed_duplicated_fd_is_reported_while_busy(false);
}

// ---------------------------------------------------------------- numbers that are not open

// Never open: refused at registration, on every backend (select used to
// ignore a number above the process's fd table, so its waiter never fired).
BOOST_AUTO_TEST_CASE(number_never_open_is_refused_at_registration) {
    Scheduler s(reactor_test::on(reactor_test::backend_under_test()));
    auto says_not_open = [](const std::invalid_argument& e) {
        return std::string(e.what()).find("not open") != std::string::npos;
    };
    const int high = unopened_number();
    BOOST_CHECK_EXCEPTION(s.read_wait(high, [] {}), std::invalid_argument, says_not_open);
    BOOST_CHECK_EXCEPTION(s.add_writer(high, [] {}), std::invalid_argument, says_not_open);
    int low = -1;
    {
        Pipe gone;
        low = gone.r.get();
    }
    BOOST_CHECK_EXCEPTION(s.add_reader(low, [] {}), std::invalid_argument, says_not_open);
    BOOST_TEST(s.waiter_count() == 0u);
    CHECK_EMPTY(s);
}

// Open once (the loop watched it), closed, then registered again: not refused
// (a number seen open is not re-checked on every registration) but reported
// at the next wait, its waiter dropped unrun.
BOOST_FIXTURE_TEST_CASE(number_closed_after_use_and_registered_again_is_reported, Loop) {
    int number = -1;
    {
        Pipe p;
        p.put();
        bool fired = false;
        s.read_wait(p.r.get(), [&] { fired = true; });
        s.run();
        BOOST_TEST_REQUIRE(fired);
        number = p.r.get();
    }
    bool ran = false;
    s.read_wait(number, [&] { ran = true; });
    BOOST_TEST(reactor_test::run_until(s, [&] { return !reports.fds.empty(); }, kGuard));
    BOOST_TEST_REQUIRE(reports.fds.size() == 1u);
    BOOST_TEST(reports.fds[0] == number);
    BOOST_TEST(!ran);
    s.run();
    CHECK_EMPTY(s);
}
