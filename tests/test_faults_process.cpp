// SPDX-License-Identifier: MIT
// Subprocesses under a failing kernel: each system call spawn_process and
// the exit watches make (pipe2, pidfd_open, posix_spawn/posix_spawnp,
// waitpid, epoll_ctl for the pidfd) is made to fail
// (tests/support/syscall_faults.hpp) and the outcome checked: a clear error
// to the right owner (std::system_error from spawn_process naming the call or
// the program, or the wait() future failing with one naming waitpid), no fd
// leaked, no child left unreaped, the loop still serving (a spawn afterwards
// works). docs/faults.md has the table these cases keep true. Runs once per
// backend, and with both exit watches (pidfd and SIGCHLD) where both apply.
//
// Order matters for one thing: a pidfd_open refused with ENOSYS, EPERM or
// EACCES is remembered for the rest of the process (every later spawn then
// uses SIGCHLD). The cases that inject those run their scenario in a forked
// child process (in_a_fresh_process), so this process keeps using pidfds.
//
// The last cases are about reactor::ThreadPool, not processes: a worker
// thread that cannot be started (pthread_create EAGAIN); and about the fault
// library itself: the errno names REACTOR_FAULTS reads.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <futures/executor.hpp>
#include <futures/process.hpp>
#include <futures/run.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/thread_pool.hpp>

#include "support/backends.hpp"
#include "support/exit_watches.hpp"
#include "support/source_dir.hpp"
#include "support/check_empty.hpp"
#include "support/syscall_faults.hpp"
#include "support/text_match.hpp"

namespace faults = reactor_test::faults;  // the fault-injection library (support/syscall_faults.hpp)

using namespace std::chrono_literals;
using faults::Call;
using futures::ExitWatch;
using futures::ProcessOptions;
using futures::Stdio;
using reactor::Backend;
using reactor::Scheduler;
using reactor_test::backend_under_test;
using reactor_test::on;
using reactor_test::sigchld_testable;
using reactor_test::watches;

namespace {

// Every wait in these cases is bounded by this, so a broken watch fails the
// case instead of hanging it; generous for a loaded machine.
constexpr auto kGuard = 20s;

const char* name(ExitWatch watch) {
    switch (watch) {
    case ExitWatch::automatic: return "automatic";
    case ExitWatch::pidfd: return "pidfd";
    case ExitWatch::sigchld: return "sigchld";
    }
    return "?";
}

ProcessOptions with(ExitWatch watch) {
    ProcessOptions o;
    o.watch = watch;
    return o;
}

// Every standard stream a pipe: the most fds spawn_process makes.
ProcessOptions all_pipes(ExitWatch watch) {
    ProcessOptions o = with(watch);
    o.stdin_mode = o.stdout_mode = o.stderr_mode = Stdio::pipe;
    return o;
}

// Reaped: no such process any more (a zombie would still accept kill(pid, 0)).
bool gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// No child of this process is left, running or zombie. Looks without
// reaping (WNOWAIT): a waitpid(-1) here would itself reap a zombie that a
// reaper thread is about to wait for, and that thread's waitpid would then
// come later, perhaps into the next case's armed fault. (waitid is not
// among the calls the fault library fails.)
bool no_children() {
    siginfo_t info{};
    return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

// Waits (bounded) for a child reaped by a background thread.
bool no_children_soon() {
    const auto end = std::chrono::steady_clock::now() + kGuard;
    while (!no_children()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(2ms);
    }
    return true;
}

std::size_t open_fd_count() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// The number the next fd made will get.
int next_fd_number() {
    const int fd = ::dup(0);
    BOOST_REQUIRE(fd >= 0);
    ::close(fd);
    return fd;
}

bool mentions(const std::exception& e, const std::string& text) {
    return std::string(e.what()).find(text) != std::string::npos;
}

// What status_of gives for a wait() that did not complete within kGuard, and
// what exit_status() gives for no status: no exit status encodes to either.
constexpr int kNoStatus = -1000;

// The child's exit status, waited for (bounded).
int status_of(Scheduler& sched, const futures::Process& p) {
    auto f = p.wait();
    if (!futures::run_until(sched, f, kGuard)) return kNoStatus;
    return f.result();
}

int exit_status(const futures::Process& p) { return p.exit_status().value_or(kNoStatus); }

// What the exception handler received.
struct Reports {
    explicit Reports(Scheduler& s) {
        s.set_exception_handler([this](const reactor::ErrorContext& ctx) { lines.push_back(reactor::describe(ctx)); });
    }
    std::vector<std::string> lines;
};

// spawn_process(sched, argv, options) must throw std::system_error with
// `error`, its message containing `text`.
void expect_spawn_error(Scheduler& sched, const std::vector<std::string>& argv, const ProcessOptions& options,
                        int error, const std::string& text) {
    try {
        (void)futures::spawn_process(sched, argv, options);
        BOOST_ERROR("spawn_process must fail with " << std::strerror(error));
    } catch (const std::system_error& e) {
        BOOST_TEST(e.code().value() == error, e.what());
        BOOST_TEST(mentions(e, text), e.what() << " (expected to mention '" << text << "')");
    }
}

// The process is left as it was: no fd, no child, nothing on the loop.
void expect_nothing_left(Scheduler& sched, std::size_t fds_before) {
    BOOST_TEST(open_fd_count() == fds_before);
    BOOST_TEST(no_children());
    BOOST_TEST(sched.signal_handler_count() == 0u);  // SIGCHLD given back
    BOOST_TEST(sched.empty());
}

// Runs `scenario` in a forked child process and fails the case with what it
// reports (an empty string: all went well). For what must not stay in this
// process (a pidfd_open refusal is remembered process-wide). The scenario
// reports through `check`, not Boost.Test, and ends with _exit.
using Check = std::function<void(bool ok, const std::string& what)>;
void in_a_fresh_process(const std::function<void(const Check&)>& scenario) {
    int ends[2];
    BOOST_REQUIRE(::pipe2(ends, O_CLOEXEC) == 0);
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(ends[0]);
        std::string failures;
        try {
            scenario([&](bool ok, const std::string& what) {
                if (!ok) failures += what + "\n";
            });
        } catch (const std::exception& e) {
            failures += std::string("exception: ") + e.what() + "\n";
        }
        faults::disarm_all();
        if (failures.empty()) failures = "ok";
        (void)!::write(ends[1], failures.data(), failures.size());
        ::_exit(0);
    }
    ::close(ends[1]);
    std::string report;
    char buf[512];
    for (ssize_t n; (n = ::read(ends[0], buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        BOOST_REQUIRE(n > 0);
        report.append(buf, static_cast<std::size_t>(n));
    }
    ::close(ends[0]);
    int status = 0;
    BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(report == "ok", "in the forked process:\n" << report);
}

// A pidfd_open refused with `error` (ENOSYS: a kernel before 5.3; EPERM,
// EACCES: a seccomp filter): spawn_process falls back to the SIGCHLD watch,
// still reports the right exit status (a code, a signal), remembers the
// refusal (pidfd_open is not called again; ExitWatch::pidfd then throws
// naming it), and leaves nothing behind. `after_a_pidfd_spawn`: pidfd_open
// worked once before (the refusal comes at the child's pidfd_open), else it
// is refused at the first probe.
void pidfd_refusal_scenario(int error, bool after_a_pidfd_spawn, const Check& check) {
    const std::size_t fds_before = open_fd_count();
    {
        Scheduler sched(on(backend_under_test()));
        Reports reports(sched);
        if (after_a_pidfd_spawn) {
            auto p = futures::spawn_process(sched, {"/bin/true"});
            check(sched.signal_handler_count() == 0u, "the first spawn watches through a pidfd");
            check(status_of(sched, p) == 0, "/bin/true exits with 0");
        }
        faults::arm(Call::pidfd_open, {.error = error, .times = 1});
        auto p = futures::spawn_process(sched, {"/bin/sh", "-c", "exit 7"});
        check(faults::injected(Call::pidfd_open) == 1, "pidfd_open was refused once");
        faults::disarm(Call::pidfd_open);
        check(sched.signal_handler_count() == 1u, "SIGCHLD is watched instead");
        check(status_of(sched, p) == 7, "the exit code comes through the SIGCHLD watch");
        check(sched.signal_handler_count() == 0u, "SIGCHLD is given back once the child is reaped");

        // Remembered: pidfd_open is not tried again (it would fail with EMFILE here).
        faults::arm(Call::pidfd_open, {.error = EMFILE, .times = faults::kForever});
        auto sleeper = futures::spawn_process(sched, {"sleep", "30"}, all_pipes(ExitWatch::automatic));
        check(faults::matched(Call::pidfd_open) == 0, "pidfd_open is not called after a refusal");
        check(sleeper.kill(), "the child can be killed");
        check(status_of(sched, sleeper) == -SIGKILL, "a signal comes through the SIGCHLD watch");
        faults::disarm(Call::pidfd_open);
        try {
            (void)futures::spawn_process(sched, {"/bin/true"}, with(ExitWatch::pidfd));
            check(false, "a forced pidfd watch must throw after a refusal");
        } catch (const std::system_error& e) {
            check(e.code().value() == error, std::string("the refusal's errno: ") + e.what());
            check(mentions(e, "pidfd_open"), std::string("names pidfd_open: ") + e.what());
        }
        check(no_children(), "no child left");
        check(reports.lines.empty(), "nothing reported to the exception handler");
        check(sched.signal_handler_count() == 0u, "SIGCHLD given back");
        sched.run();
        check(sched.empty(), "an empty loop");
    }
    check(open_fd_count() == fds_before, "no fd leaked");
}

}  // namespace

// ---------------------------------------------------------------- pidfd_open refused (first)

// First in the file: pidfd_open has not been probed yet in this process, so
// the forked process meets the refusal at the probe (the other refusal cases
// meet it at the child's own pidfd_open, after a spawn that used a pidfd).
BOOST_AUTO_TEST_CASE(pidfd_open_enosys_at_the_first_spawn_falls_back_to_sigchld) {
    if (!sigchld_testable()) {
        BOOST_TEST_MESSAGE("not run: select under ThreadSanitizer");
        return;
    }
    in_a_fresh_process([](const Check& check) { pidfd_refusal_scenario(ENOSYS, false, check); });
}

BOOST_AUTO_TEST_CASE(pidfd_open_refused_after_working_falls_back_to_sigchld) {
    if (!sigchld_testable()) {
        BOOST_TEST_MESSAGE("not run: select under ThreadSanitizer");
        return;
    }
    for (int error : {ENOSYS, EPERM, EACCES}) {
        BOOST_TEST_CONTEXT(std::strerror(error)) {
            in_a_fresh_process([error](const Check& check) { pidfd_refusal_scenario(error, true, check); });
        }
    }
    BOOST_TEST(no_children());
}

// ---------------------------------------------------------------- pipe2

// The stdin, stdout or stderr pipe cannot be made (EMFILE, ENFILE): a
// std::system_error naming pipe2, the pipes made before it closed, nothing
// started, SIGCHLD given back (the SIGCHLD watch itself makes no pipe: it
// holds work through the loop). The next spawn works.
BOOST_AUTO_TEST_CASE(pipe2_failing_is_reported_and_closes_what_was_made) {
    faults::Disarm disarm;
    for (ExitWatch watch : watches()) {
        for (int error : {EMFILE, ENFILE}) {
            const int pipes = 3;
            for (int after = 0; after < pipes; ++after) {
                BOOST_TEST_CONTEXT(name(watch) << ", " << std::strerror(error) << ", pipe2 #" << after + 1) {
                    const std::size_t fds_before = open_fd_count();
                    {
                        Scheduler sched(on(backend_under_test()));
                        const std::size_t fds_with_loop = open_fd_count();
                        faults::arm(Call::pipe2, {.error = error, .after = after, .times = 1});
                        expect_spawn_error(sched, {"sleep", "30"}, all_pipes(watch), error, "spawn_process: pipe2");
                        BOOST_TEST(faults::injected(Call::pipe2) == 1u);
                        faults::disarm(Call::pipe2);
                        expect_nothing_left(sched, fds_with_loop);
                        // The loop still serves: cat echoes through its pipes.
                        auto cat = futures::spawn_process(sched, {"cat"}, all_pipes(watch));
                        cat.stdin_pipe().write("again");
                        cat.stdin_pipe().write_eof();
                        auto line = cat.stdout_pipe().read_until("again");
                        BOOST_TEST_REQUIRE(futures::run_until(sched, line, kGuard));
                        BOOST_TEST(line.result() == "again");
                        BOOST_TEST(status_of(sched, cat) == 0);
                        cat = {};
                        sched.run();
                        CHECK_EMPTY(sched);
                    }
                    BOOST_TEST(open_fd_count() == fds_before);
                }
            }
        }
    }
}

// ---------------------------------------------------------------- pidfd_open failing

// pidfd_open failing for a reason that says nothing about the kernel
// (EMFILE, ENFILE, ENOMEM): a std::system_error naming pidfd_open, the
// child (already started) killed and reaped before spawn_process returns,
// the pipes closed; the failure is not remembered (the next spawn uses a
// pidfd again). With waitpid failing in that kill-and-reap too: EINTR is
// retried, EINVAL hands the child to a reaper thread; no zombie either way.
BOOST_AUTO_TEST_CASE(pidfd_open_failing_kills_and_reaps_the_child) {
    faults::Disarm disarm;
    Scheduler sched(on(backend_under_test()));
    Reports reports(sched);
    BOOST_TEST(status_of(sched, futures::spawn_process(sched, {"/bin/true"})) == 0);  // pidfd_open probed: it works
    const std::size_t fds_before = open_fd_count();
    for (ExitWatch watch : {ExitWatch::automatic, ExitWatch::pidfd}) {
        for (int error : {EMFILE, ENFILE, ENOMEM}) {
            for (int wait_error : {0, EINTR, EINVAL}) {
                BOOST_TEST_CONTEXT(name(watch) << ", " << std::strerror(error) << ", waitpid "
                                               << (wait_error ? std::strerror(wait_error) : "works")) {
                    BOOST_REQUIRE(no_children());
                    faults::arm(Call::pidfd_open, {.error = error, .times = 1});
                    if (wait_error != 0) faults::arm(Call::waitpid, {.error = wait_error, .times = 1});
                    expect_spawn_error(sched, {"sleep", "30"}, all_pipes(watch), error, "spawn_process: pidfd_open");
                    BOOST_TEST(faults::injected(Call::pidfd_open) == 1u);
                    if (wait_error != 0) BOOST_TEST(faults::injected(Call::waitpid) == 1u);
                    faults::disarm_all();
                    if (wait_error == EINVAL) {
                        BOOST_TEST(no_children_soon());  // the reaper thread
                    } else {
                        BOOST_TEST(no_children());  // reaped before spawn_process returned
                    }
                    expect_nothing_left(sched, fds_before);
                }
            }
        }
    }
    // Not remembered: the next child is watched through a pidfd again.
    auto p = futures::spawn_process(sched, {"/bin/sh", "-c", "exit 5"});
    BOOST_TEST(sched.signal_handler_count() == 0u);
    BOOST_TEST(status_of(sched, p) == 5);
    BOOST_TEST(reports.lines.empty());
    p = {};
    sched.run();
    CHECK_EMPTY(sched);
}

// ---------------------------------------------------------------- posix_spawn

// The kernel cannot start the child (ENOMEM, EAGAIN: out of memory, or of
// processes): a std::system_error naming the program, with that errno;
// nothing was started, every pipe is closed, SIGCHLD given back; the next
// spawn works. Through posix_spawn (a path) and posix_spawnp (a name).
BOOST_AUTO_TEST_CASE(posix_spawn_failing_names_the_program_and_leaves_nothing) {
    faults::Disarm disarm;
    Scheduler sched(on(backend_under_test()));
    Reports reports(sched);
    for (ExitWatch watch : watches()) {
        // The SIGCHLD watch keeps its keep-alive pipe once made: make it first.
        BOOST_TEST(status_of(sched, futures::spawn_process(sched, {"/bin/true"}, with(watch))) == 0);
        const std::size_t fds_before = open_fd_count();
        for (int error : {ENOMEM, EAGAIN}) {
            for (const std::string program : {"/bin/true", "true"}) {
                BOOST_TEST_CONTEXT(name(watch) << ", " << std::strerror(error) << ", " << program) {
                    faults::arm(Call::posix_spawn, {.error = error, .times = 1});
                    expect_spawn_error(sched, {program, "--flag"}, all_pipes(watch), error,
                                       "spawn_process: cannot run '" + program + "'");
                    BOOST_TEST(faults::injected(Call::posix_spawn) == 1u);
                    faults::disarm(Call::posix_spawn);
                    expect_nothing_left(sched, fds_before);
                }
            }
        }
        auto p = futures::spawn_process(sched, {"/bin/sh", "-c", "exit 9"}, all_pipes(watch));
        BOOST_TEST(status_of(sched, p) == 9);
    }
    BOOST_TEST(reports.lines.empty());
    sched.run();
    CHECK_EMPTY(sched);
}

// ---------------------------------------------------------------- waitpid

// waitpid failing when the watch reaps the child:
//  - EINTR is retried (a WNOHANG waitpid should never see it, but the watch
//    does not take it for a failure): wait() gets the right status;
//  - ECHILD ("someone else reaped it") fails wait() with a std::system_error
//    naming waitpid; the watch does not wait for it again. (An injected
//    ECHILD is a lie the kernel would not tell: the child is in fact still a
//    zombie here, and the test reaps it. With a real ECHILD there is
//    nothing left to reap.)
//  - any other errno (EINVAL) fails wait() the same way, and the child is
//    reaped by a background thread: no zombie.
// The child waits for EOF on its stdin, so the fault is armed before it can
// exit and after the SIGCHLD watch's first look.
BOOST_AUTO_TEST_CASE(waitpid_failing_fails_wait_naming_waitpid_and_leaves_no_zombie) {
    faults::Disarm disarm;
    Scheduler sched(on(backend_under_test()));
    Reports reports(sched);
    for (ExitWatch watch : watches()) {
        for (int error : {EINTR, ECHILD, EINVAL}) {
            BOOST_TEST_CONTEXT(name(watch) << ", " << std::strerror(error)) {
                BOOST_REQUIRE(no_children());
                ProcessOptions options = with(watch);
                options.stdin_mode = Stdio::pipe;
                auto p = futures::spawn_process(sched, {"/bin/sh", "-c", "read x; exit 3"}, options);
                const pid_t pid = p.pid();
                auto status = p.wait();
                sched.run_for(0s);  // the SIGCHLD watch's first look, before the fault
                BOOST_REQUIRE(!status.done());
                faults::arm(Call::waitpid, {.error = error, .times = 1});
                p.stdin_pipe().write_eof();  // the child exits
                BOOST_TEST_REQUIRE(futures::run_until(sched, status, kGuard));
                BOOST_TEST(faults::injected(Call::waitpid) == 1u);
                faults::disarm(Call::waitpid);
                if (error == EINTR) {
                    BOOST_TEST(status.result() == 3);
                    BOOST_TEST(exit_status(p) == 3);
                } else {
                    try {
                        (void)status.result();
                        BOOST_ERROR("wait() must fail");
                    } catch (const std::system_error& e) {
                        BOOST_TEST(e.code().value() == error);
                        BOOST_TEST(mentions(e, "waitpid"), e.what());
                    }
                    BOOST_TEST(!p.exit_status().has_value());
                    BOOST_CHECK_THROW((void)p.wait().result(), std::system_error);  // later calls too, at once
                    BOOST_TEST(!p.kill());  // never signals a pid it no longer watches
                }
                if (error == ECHILD) {
                    int raw = 0;
                    BOOST_TEST(::waitpid(pid, &raw, 0) == pid);  // the zombie the lie left (see above)
                }
                BOOST_TEST(no_children_soon());
                BOOST_TEST(gone(pid));
                BOOST_TEST(sched.signal_handler_count() == 0u);
                p = {};
                sched.run();
                BOOST_TEST(sched.empty());
            }
        }
    }
    BOOST_TEST(reports.lines.empty());
    // Still serving.
    BOOST_TEST(status_of(sched, futures::spawn_process(sched, {"/bin/true"})) == 0);
    sched.run();
    CHECK_EMPTY(sched);
}

// ---------------------------------------------------------------- epoll_ctl for the pidfd

// epoll cannot watch the child's pidfd (epoll_ctl ENOMEM, ENOSPC: at the
// loop's next wait, after spawn_process returned): the watch, the pidfd's
// FdOwner, hears it, closes the pidfd and polls the child with waitpid on a
// timer instead, so nothing is lost: wait() gets the real status (an exit
// code, a signal), nothing goes to the exception handler, run() still waits
// for the child, close() still hands it to a reaper thread, and the loop is
// empty afterwards.
BOOST_AUTO_TEST_CASE(unwatchable_pidfd_falls_back_to_polling, *reactor_test::only_on(Backend::epoll)) {
    faults::Disarm disarm;
    Scheduler sched(on(Backend::epoll));
    Reports reports(sched);
    BOOST_TEST(status_of(sched, futures::spawn_process(sched, {"/bin/true"})) == 0);  // pidfd_open probed
    const std::size_t fds_before = open_fd_count();
    for (int error : {ENOMEM, ENOSPC}) {
        BOOST_TEST_CONTEXT(std::strerror(error)) {
            // A child that exits at once.
            faults::arm(Call::epoll_ctl, {.error = error, .times = 1, .fd = next_fd_number()});
            auto quick = futures::spawn_process(sched, {"/bin/sh", "-c", "exit 6"});
            BOOST_TEST(status_of(sched, quick) == 6);
            BOOST_TEST(faults::injected(Call::epoll_ctl) == 1u);
            BOOST_TEST(open_fd_count() == fds_before);

            // A child that runs on: polled until it is killed.
            faults::arm(Call::epoll_ctl, {.error = error, .times = 1, .fd = next_fd_number()});
            auto sleeper = futures::spawn_process(sched, {"sleep", "30"});
            auto status = sleeper.wait();
            sched.run_for(60ms);
            BOOST_TEST(faults::injected(Call::epoll_ctl) == 1u);
            BOOST_TEST(!status.done());
            BOOST_TEST(open_fd_count() == fds_before);  // the pidfd is closed
            BOOST_TEST(sched.timer_count() == 1u);      // the poll
            BOOST_TEST(sched.waiter_count() == 0u);
            BOOST_TEST(sleeper.kill());
            BOOST_TEST_REQUIRE(futures::run_until(sched, status, kGuard));
            BOOST_TEST(status.result() == -SIGKILL);

            // run() waits for a polled child as for a watched one.
            faults::arm(Call::epoll_ctl, {.error = error, .times = 1, .fd = next_fd_number()});
            auto short_one = futures::spawn_process(sched, {"sleep", "0.1"});
            sched.run();
            BOOST_TEST(faults::injected(Call::epoll_ctl) == 1u);
            BOOST_TEST(exit_status(short_one) == 0);
            BOOST_TEST(no_children());
        }
    }
    BOOST_TEST(reports.lines.empty());

    // close() while polling: the timer goes, the child goes to a reaper thread.
    faults::arm(Call::epoll_ctl, {.error = ENOMEM, .times = 1, .fd = next_fd_number()});
    auto orphan = futures::spawn_process(sched, {"sleep", "30"});
    auto status = orphan.wait();
    sched.run_for(20ms);
    BOOST_TEST(faults::injected(Call::epoll_ctl) == 1u);
    BOOST_TEST(!sched.close().empty());  // the poll timer and the wait() future
    BOOST_TEST(status.cancelled());
    BOOST_TEST(sched.live().empty());
    BOOST_TEST(::kill(orphan.pid(), 0) == 0);  // not killed
    BOOST_REQUIRE(::kill(orphan.pid(), SIGKILL) == 0);
    BOOST_TEST(no_children_soon());  // reaped by the thread
    BOOST_TEST(open_fd_count() == fds_before);

    // Still serving, through a pidfd.
    auto p = futures::spawn_process(sched, {"/bin/sh", "-c", "exit 2"});
    BOOST_TEST(status_of(sched, p) == 2);
    p = {};
    orphan = {};
    sched.run();
    CHECK_EMPTY(sched);
}

// ---------------------------------------------------------------- the thread pool

// A worker thread cannot be started (pthread_create EAGAIN: out of memory or
// of threads; root ignores RLIMIT_NPROC, so it is injected). The ThreadPool
// constructor throws std::system_error EAGAIN, having joined the workers it
// had started (it returns: nothing hangs); run_in_executor on the default
// pool, made on first use, fails its future with the same error, and works
// once threads can be started again.
BOOST_AUTO_TEST_CASE(a_thread_pool_that_cannot_start_a_thread_throws_and_hangs_nothing) {
    faults::Disarm disarm;
    Scheduler sched(on(backend_under_test()));
    for (int started : {0, 1, 3}) {
        BOOST_TEST_CONTEXT(started << " workers started") {
            faults::arm(Call::pthread_create, {.error = EAGAIN, .after = started, .times = 1});
            try {
                reactor::ThreadPool pool(4);
                BOOST_ERROR("the ThreadPool constructor must throw");
            } catch (const std::system_error& e) {
                BOOST_TEST(e.code().value() == EAGAIN, e.what());
                BOOST_TEST(std::string(e.what()).find("ThreadPool: cannot start worker thread " +
                                                      std::to_string(started + 1) + " of 4") != std::string::npos,
                           e.what());
            }
            BOOST_TEST(faults::injected(Call::pthread_create) == 1u);
            faults::disarm(Call::pthread_create);
        }
    }
    // The default pool, made on first use, cannot start: the future fails
    // with the error (the call itself does not throw).
    faults::arm(Call::pthread_create, {.error = EAGAIN, .times = faults::kForever});
    auto failed = futures::run_in_executor(sched, [] { return 1; });
    BOOST_TEST_REQUIRE(futures::run_until(sched, failed, kGuard));
    BOOST_CHECK_EXCEPTION((void)failed.result(), std::system_error,
                          [](const std::system_error& e) { return e.code().value() == EAGAIN; });
    faults::disarm(Call::pthread_create);
    auto f = futures::run_in_executor(sched, [] { return 42; });
    BOOST_TEST_REQUIRE(futures::run_until(sched, f, kGuard));
    BOOST_TEST(f.result() == 42);
    sched.run();
    CHECK_EMPTY(sched);
}

// ---------------------------------------------------------------- the fault library's REACTOR_FAULTS

namespace {

// This suite's own program, run again with REACTOR_FAULTS=`spec` and nothing
// else to do (--list_content): the fault library, linked in, reads the spec
// when it is loaded, before main. (This program, not /bin/true under
// LD_PRELOAD: in a sanitizer build the library needs the sanitizer's runtime
// loaded first.) Its exit status and its stderr.
struct Run {
    int status = kNoStatus;
    std::string err;
};
Run run_with_faults(Scheduler& sched, const std::string& spec) {
    ProcessOptions o;
    o.stdout_mode = Stdio::null;
    o.stderr_mode = Stdio::pipe;
    o.environment = std::vector<std::string>{std::string(faults::kEnvironment) + "=" + spec};
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    auto p = futures::spawn_process(sched, {self, "--list_content"}, o);
    Run run;
    for (;;) {
        auto chunk = p.stderr_pipe().read();
        if (!futures::run_until(sched, chunk, kGuard)) break;
        const std::string got = chunk.result();
        if (got.empty()) break;
        run.err += got;
    }
    run.status = status_of(sched, p);
    return run;
}

// Every errno name written in a row of docs/faults.md's tables ("`ENOMEM`"),
// read from the source tree.
std::set<std::string> errno_names_in_the_fault_table() {
    const std::filesystem::path doc = reactor_test::source_dir() / "docs/faults.md";
    std::ifstream in(doc);
    BOOST_REQUIRE_MESSAGE(in, "cannot read " << doc);
    std::set<std::string> names;
    for (std::string line; std::getline(in, line);) {
        if (!line.starts_with("|")) continue;
        for (const auto& m : reactor_test::all_matches(line, "`(E[A-Z0-9]+)`")) names.insert(m[1]);
    }
    return names;
}

}  // namespace

// Every errno name the guide's rows use can be given to REACTOR_FAULTS, so a
// user can make any row happen to their own program; and each means its
// errno (glibc's names, with the second names of shared values).
BOOST_AUTO_TEST_CASE(reactor_faults_accepts_every_errno_name_the_guide_uses) {
    const std::set<std::string> names = errno_names_in_the_fault_table();
    // The guide's table was read: the names once refused are in it.
    BOOST_TEST(names.count("ECONNABORTED") == 1u);
    BOOST_TEST(names.count("ENOENT") == 1u);
    std::string spec;
    for (const std::string& n : names) {
        const int value = faults::errno_value(n);
        BOOST_TEST(value != 0, n << " is unknown");
        if (value != 0) BOOST_TEST(::strerrorname_np(value) == n);
        // Armed on a call --list_content never makes.
        spec += (spec.empty() ? "" : ",") + ("pidfd_open:" + n);
    }
    BOOST_TEST(faults::errno_value("EWOULDBLOCK") == EWOULDBLOCK);
    BOOST_TEST(faults::errno_value("ENOTSUP") == ENOTSUP);
    BOOST_TEST(faults::errno_value("EDEADLOCK") == EDEADLOCK);
    Scheduler sched(on(backend_under_test()));
    const Run run = run_with_faults(sched, spec);
    BOOST_TEST(run.status == 0, spec << ": " << run.err);
    BOOST_TEST(run.err.find(faults::kEnvironment) == std::string::npos, run.err);
    sched.run();
    CHECK_EMPTY(sched);
}

// A name glibc does not know is refused before the program starts, with a
// line saying which spec and which name, and exit status 125.
BOOST_AUTO_TEST_CASE(reactor_faults_refuses_an_unknown_errno_name_clearly) {
    BOOST_TEST(faults::errno_value("ENOTANERRNO") == 0);
    BOOST_TEST(faults::errno_value("") == 0);
    BOOST_TEST(faults::errno_value("econnaborted") == 0);  // the names are written as errno(3) writes them
    Scheduler sched(on(backend_under_test()));
    const Run run = run_with_faults(sched, "accept4:ECONNABORTED,accept4:ENOTANERRNO:times=2");
    BOOST_TEST(run.status == 125);
    BOOST_TEST(run.err == "REACTOR_FAULTS: 'accept4:ENOTANERRNO:times=2': unknown errno name 'ENOTANERRNO' (one of "
                          "errno(3)'s, such as ENOMEM)\n");
    sched.run();
    CHECK_EMPTY(sched);
}
