// SPDX-License-Identifier: MIT
// futures::spawn_process with real children (/bin/sh, /bin/cat, /bin/true,
// /bin/false, sleep), on every backend and with both exit watches (pidfd and
// SIGCHLD): statuses, pipes both ways beyond the pipe buffer, environment,
// /dev/null, missing programs and bad input, signals, children dropped early
// or outliving their Scheduler (never a zombie), many at once; the child's
// fds (0, 1, 2 and pass_fds only); failed system calls (EMFILE from pipe2
// and pidfd_open, ECHILD from waitpid) reported by name, nothing leaked.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <futures/errors.hpp>
#include <futures/process.hpp>
#include <futures/run.hpp>
#include <futures/task.hpp>
#include <futures/when_all.hpp>

#include "support/backends.hpp"
#include "support/exit_watches.hpp"
#include "support/fds.hpp"
#include "support/net_util.hpp"

using namespace std::chrono_literals;
using futures::ExitWatch;
using futures::ProcessOptions;
using futures::Stdio;
using reactor_test::on;
using reactor_test::sigchld_testable;
using reactor_test::watches;

namespace {

ProcessOptions with(ExitWatch watch) {
    ProcessOptions o;
    o.watch = watch;
    return o;
}

int status_of(reactor::Scheduler& sched, const futures::Process& p) {
    auto f = p.wait();
    BOOST_REQUIRE(futures::run_until(sched, f, 20s));
    return f.result();
}

// Everything a pipe stream gives until EOF.
std::string read_all(reactor::Scheduler& sched, futures::Stream s) {
    std::string all;
    for (;;) {
        auto f = s.read(1 << 20);
        BOOST_REQUIRE(futures::run_until(sched, f, 20s));
        if (f.result().empty()) return all;
        all += f.result();
    }
}

// Reaped: no such process any more (a zombie would still accept kill(pid, 0)).
bool gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// No child of this process is left, running or zombie.
// Looks without reaping (WNOWAIT): a waitpid(-1) here would reap a zombie
// that a reaper thread is about to wait for.
bool no_children() {
    siginfo_t info{};
    return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

// How many fds this process has open.
std::size_t open_fd_count() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// The numbers in `text`, one per line, in numeric order.
std::vector<int> sorted_numbers(const std::string& text) {
    std::istringstream in(text);
    std::vector<int> out;
    for (int n = 0; in >> n;) out.push_back(n);
    std::sort(out.begin(), out.end());
    return out;
}

// The child's open fds, as the shell sees them: `ls` lists the shell's fds
// (the trailing `true` keeps dash from exec'ing ls in its place, which would
// list the directory ls itself opened).
const std::string kListFds = "ls /proc/$$/fd; true";

// Makes every fd number up to a lowered RLIMIT_NOFILE taken, so that the next
// fd any call makes fails with EMFILE; give_back(n) frees n of them. Undone
// on destruction.
class FdsExhausted {
public:
    FdsExhausted() {
        BOOST_REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved_) == 0);
        int highest = 0;
        for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
            highest = std::max(highest, std::stoi(entry.path().filename().string()));
        rlimit lowered = saved_;
        lowered.rlim_cur = static_cast<rlim_t>(highest) + 8;
        BOOST_REQUIRE(lowered.rlim_cur <= saved_.rlim_cur);
        BOOST_REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);
        for (;;) {
            const int fd = ::fcntl(0, F_DUPFD_CLOEXEC, 0);
            if (fd < 0) {
                BOOST_REQUIRE(errno == EMFILE);
                break;
            }
            fillers_.push_back(fd);
        }
    }
    ~FdsExhausted() {
        for (int fd : fillers_) ::close(fd);
        ::setrlimit(RLIMIT_NOFILE, &saved_);
    }
    FdsExhausted(const FdsExhausted&) = delete;
    FdsExhausted& operator=(const FdsExhausted&) = delete;

    void give_back(std::size_t n) {
        BOOST_REQUIRE(n <= fillers_.size());
        for (; n > 0; --n) {
            ::close(fillers_.back());
            fillers_.pop_back();
        }
    }
    // Exactly n fds can be opened now (and are closed again).
    bool exactly_free(std::size_t n) const {
        std::vector<int> got;
        for (int fd; (fd = ::fcntl(0, F_DUPFD_CLOEXEC, 0)) >= 0;) got.push_back(fd);
        const bool emfile = errno == EMFILE;
        for (int fd : got) ::close(fd);
        return emfile && got.size() == n;
    }

private:
    rlimit saved_{};
    std::vector<int> fillers_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(exit_codes_and_signals_are_encoded) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    for (ExitWatch watch : watches()) {
        BOOST_TEST(status_of(sched, futures::spawn_process(sched, {"/bin/true"}, with(watch))) == 0);
        BOOST_TEST(status_of(sched, futures::spawn_process(sched, {"false"}, with(watch))) == 1);  // from PATH
        auto seven = futures::spawn_process(sched, {"/bin/sh", "-c", "exit 7"}, with(watch));
        BOOST_TEST(!seven.exit_status().has_value());
        BOOST_TEST(status_of(sched, seven) == 7);
        BOOST_TEST(seven.exit_status().value() == 7);
        BOOST_TEST(status_of(sched, seven) == 7);  // again, at once
        BOOST_TEST(!seven.kill());                 // reaped: nothing is sent

        auto term = futures::spawn_process(sched, {"sleep", "30"}, with(watch));
        BOOST_TEST(term.terminate());
        BOOST_TEST(status_of(sched, term) == -SIGTERM);
        auto killed = futures::spawn_process(sched, {"sleep", "30"}, with(watch));
        auto first = killed.wait(), second = killed.wait();
        BOOST_TEST(killed.kill());
        BOOST_TEST(status_of(sched, killed) == -SIGKILL);
        BOOST_TEST(first.result() == -SIGKILL);
        BOOST_TEST(second.result() == -SIGKILL);
        auto odd = futures::spawn_process(sched, {"sleep", "30"}, with(watch));
        BOOST_CHECK_THROW(odd.send_signal(100000), std::invalid_argument);
        odd.kill();
        BOOST_TEST(status_of(sched, odd) == -SIGKILL);
    }
    BOOST_TEST(futures::exit_status_of(0x0100) == 1);  // WEXITSTATUS in the high byte
    BOOST_TEST(futures::exit_status_of(SIGKILL) == -SIGKILL);
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(stdout_and_stderr_pipes_and_the_environment) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    for (ExitWatch watch : watches()) {
        ProcessOptions o = with(watch);
        o.stdout_mode = o.stderr_mode = Stdio::pipe;
        o.environment = std::vector<std::string>{"GREETING=hi there", "EMPTY="};
        auto p = futures::spawn_process(
            sched, {"/bin/sh", "-c", "echo \"$GREETING|$EMPTY|${HOME-unset}\"; echo oops >&2; exit 3"}, o);
        BOOST_TEST(!p.stdin_pipe().valid());  // inherited
        BOOST_TEST(read_all(sched, p.stdout_pipe()) == "hi there||unset\n");
        BOOST_TEST(read_all(sched, p.stderr_pipe()) == "oops\n");
        BOOST_TEST(status_of(sched, p) == 3);
    }
}

BOOST_AUTO_TEST_CASE(cat_moves_megabytes_both_ways) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    for (ExitWatch watch : watches()) {
        ProcessOptions o = with(watch);
        o.stdin_mode = o.stdout_mode = Stdio::pipe;
        auto cat = futures::spawn_process(sched, {"/bin/cat"}, o);
        const std::string payload = reactor_test::random_bytes(4 * 1024 * 1024 + 3, 11);  // pipes hold 64 KiB
        auto in = cat.stdin_pipe();
        BOOST_TEST(in.write(payload));  // buffered: flows while stdout is read
        in.write_eof();
        const std::string echoed = read_all(sched, cat.stdout_pipe());
        BOOST_TEST(echoed.size() == payload.size());
        BOOST_TEST((echoed == payload));
        BOOST_TEST(status_of(sched, cat) == 0);
    }
}

BOOST_AUTO_TEST_CASE(dev_null_gives_eof_and_swallows_output) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    ProcessOptions o;
    o.stdin_mode = Stdio::null;
    o.stdout_mode = Stdio::null;
    o.stderr_mode = Stdio::pipe;
    // cat ends at once (EOF on stdin); its output would fail loudly if stdout were closed.
    auto p = futures::spawn_process(sched, {"/bin/sh", "-c", "cat && echo gone || echo failed >&2"}, o);
    BOOST_TEST(read_all(sched, p.stderr_pipe()) == "");
    BOOST_TEST(status_of(sched, p) == 0);
}

BOOST_AUTO_TEST_CASE(writing_to_a_child_that_left_is_a_reset_not_a_sigpipe) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    ProcessOptions o;
    o.stdin_mode = Stdio::pipe;
    auto p = futures::spawn_process(sched, {"/bin/true"}, o);
    BOOST_TEST(status_of(sched, p) == 0);
    auto in = p.stdin_pipe();
    in.write(std::string(1024 * 1024, 'x'));
    auto drained = in.drain();
    BOOST_REQUIRE(futures::run_until(sched, drained, 20s));
    try {
        drained.result();
        BOOST_FAIL("writing to a pipe nobody reads must fail");
    } catch (const std::system_error& e) {
        BOOST_TEST(e.code().value() == EPIPE);
    }
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused_with_a_clear_error) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    for (ExitWatch watch : watches()) {
        try {
            (void)futures::spawn_process(sched, {"no_such_program_for_reactor_tests", "x"}, with(watch));
            BOOST_FAIL("a missing program must throw");
        } catch (const std::system_error& e) {
            BOOST_TEST(e.code().value() == ENOENT);
            BOOST_TEST(std::string(e.what()).find("'no_such_program_for_reactor_tests'") != std::string::npos, e.what());
        }
        try {
            (void)futures::spawn_process(sched, {"/nonexistent/dir/prog"}, with(watch));
            BOOST_FAIL("a missing path must throw");
        } catch (const std::system_error& e) {
            BOOST_TEST(std::string(e.what()).find("/nonexistent/dir/prog") != std::string::npos, e.what());
        }
        try {
            (void)futures::spawn_process(sched, {"/etc"}, with(watch));  // a directory
            BOOST_FAIL("a directory is not a program");
        } catch (const std::system_error& e) {
            BOOST_TEST(e.code().value() == EACCES);
        }
    }
    BOOST_CHECK_THROW((void)futures::spawn_process(sched, {}), std::invalid_argument);
    BOOST_CHECK_THROW((void)futures::spawn_process(sched, {""}), std::invalid_argument);
    BOOST_CHECK_THROW((void)futures::spawn_process(sched, {"/bin/true", std::string("a\0b", 3)}), std::invalid_argument);
    ProcessOptions bad_env;
    bad_env.environment = std::vector<std::string>{"NO_EQUALS_SIGN"};
    BOOST_CHECK_THROW((void)futures::spawn_process(sched, {"/bin/true"}, bad_env), std::invalid_argument);
    ProcessOptions bad_mode;
    bad_mode.stdout_mode = static_cast<Stdio>(42);
    BOOST_CHECK_THROW((void)futures::spawn_process(sched, {"/bin/true"}, bad_mode), std::invalid_argument);
    BOOST_CHECK_THROW((void)futures::Process().pid(), futures::InvalidStateError);
    // Nothing was started, nothing is held (SIGCHLD included).
    BOOST_TEST(sched.signal_handler_count() == 0u);
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(a_dropped_process_is_still_reaped) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    for (ExitWatch watch : watches()) {
        pid_t quick = futures::spawn_process(sched, {"/bin/sh", "-c", "exit 0"}, with(watch)).pid();
        pid_t slow = futures::spawn_process(sched, {"sleep", "30"}, with(watch)).pid();
        BOOST_REQUIRE(::kill(slow, SIGKILL) == 0);  // nobody holds its Process any more
        sched.run();  // a watched child is work: run() returns once both are reaped
        int status = 0;
        BOOST_TEST(::waitpid(quick, &status, WNOHANG) == -1);
        BOOST_TEST(errno == ECHILD);
        BOOST_TEST(::waitpid(slow, &status, WNOHANG) == -1);
        BOOST_TEST(errno == ECHILD);
        BOOST_TEST(sched.empty());
    }
    BOOST_TEST(sched.signal_handler_count() == 0u);  // SIGCHLD given back
}

BOOST_AUTO_TEST_CASE(a_child_outliving_its_scheduler_is_reaped_by_a_thread) {
    for (ExitWatch watch : watches()) {
        pid_t pid = -1;
        {
            reactor::Scheduler sched(on(reactor_test::backend_under_test()));
            auto p = futures::spawn_process(sched, {"sleep", "30"}, with(watch));
            pid = p.pid();
        }
        BOOST_TEST(::kill(pid, 0) == 0);  // left running
        BOOST_REQUIRE(::kill(pid, SIGKILL) == 0);
        for (int i = 0; i < 2000 && !gone(pid); ++i) std::this_thread::sleep_for(5ms);
        BOOST_TEST(gone(pid));
    }
}

BOOST_AUTO_TEST_CASE(many_children_at_once) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    for (ExitWatch watch : watches()) {
        std::vector<futures::Future<int>> statuses;
        std::vector<futures::Process> children;
        for (int i = 0; i < 60; ++i) {
            ProcessOptions o = with(watch);
            o.stdout_mode = Stdio::pipe;
            children.push_back(futures::spawn_process(sched, {"/bin/sh", "-c", "echo $0; exit $0", std::to_string(i)}, o));
            statuses.push_back(children.back().wait());
        }
        auto all = futures::when_all(statuses);
        BOOST_REQUIRE(futures::run_until(sched, all, 60s));
        for (int i = 0; i < 60; ++i) {
            BOOST_TEST(all.result()[static_cast<std::size_t>(i)] == i);
            BOOST_TEST(read_all(sched, children[static_cast<std::size_t>(i)].stdout_pipe()) == std::to_string(i) + "\n");
        }
    }
}

BOOST_AUTO_TEST_CASE(sigchld_belongs_to_one_scheduler_and_other_children_are_left_alone) {
    if (!sigchld_testable()) {
        BOOST_TEST_MESSAGE("not run: select under ThreadSanitizer");
        return;
    }
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    reactor::Scheduler other(on(reactor_test::backend_under_test()));
    // A child of the program that the library must not reap.
    pid_t mine = ::fork();
    BOOST_REQUIRE(mine >= 0);
    if (mine == 0) ::_exit(5);
    auto p = futures::spawn_process(sched, {"sleep", "30"}, with(ExitWatch::sigchld));
    BOOST_CHECK_THROW((void)futures::spawn_process(other, {"/bin/true"}, with(ExitWatch::sigchld)), std::logic_error);
    auto q = futures::spawn_process(other, {"/bin/true"}, with(ExitWatch::pidfd));  // unaffected
    p.kill();
    BOOST_TEST(status_of(sched, p) == -SIGKILL);
    BOOST_TEST(status_of(other, q) == 0);
    // Released once idle: the other Scheduler may take it now.
    BOOST_TEST(status_of(other, futures::spawn_process(other, {"/bin/true"}, with(ExitWatch::sigchld))) == 0);
    int status = 0;
    BOOST_TEST(::waitpid(mine, &status, 0) == mine);  // still ours to reap
    BOOST_TEST(WEXITSTATUS(status) == 5);
}

BOOST_AUTO_TEST_CASE(the_child_has_only_fds_0_1_2_even_when_the_parent_leaks_some) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    // Two fds without close-on-exec, as a careless library or a shell leaves them.
    int ends[2];
    BOOST_REQUIRE(::pipe(ends) == 0);
    reactor_test::Fd leaky_r(ends[0]), leaky_w(ends[1]);
    reactor_test::Fd leaky_dup(::dup(leaky_r));
    BOOST_REQUIRE(leaky_dup >= 0);
    for (ExitWatch watch : watches()) {
        ProcessOptions o = with(watch);
        o.stdout_mode = Stdio::pipe;
        auto p = futures::spawn_process(sched, {"/bin/sh", "-c", kListFds}, o);
        BOOST_TEST(sorted_numbers(read_all(sched, p.stdout_pipe())) == (std::vector<int>{0, 1, 2}),
                   boost::test_tools::per_element());
        BOOST_TEST(status_of(sched, p) == 0);
    }
}

BOOST_AUTO_TEST_CASE(pass_fds_keeps_chosen_fds_open_at_their_numbers) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    for (ExitWatch watch : watches()) {
        int ends[2];
        BOOST_REQUIRE(::pipe2(ends, O_CLOEXEC) == 0);
        reactor_test::Fd r(ends[0]), w(ends[1]);
        BOOST_REQUIRE(::write(w, "secret", 6) == 6);
        w.close();  // the child reads to EOF
        // A leaky fd below the passed one and another above it: both closed
        // in the child, through the gap and through closefrom.
        reactor_test::Fd leaky_low(::dup(r));
        BOOST_REQUIRE(leaky_low >= 0);
        reactor_test::Fd passed(::fcntl(r, F_DUPFD_CLOEXEC, leaky_low + 3));  // close-on-exec here
        BOOST_REQUIRE(passed >= 0);
        reactor_test::Fd leaky_high(::fcntl(r, F_DUPFD, passed + 3));
        BOOST_REQUIRE(leaky_high >= 0);

        ProcessOptions o = with(watch);
        o.stdout_mode = Stdio::pipe;
        o.pass_fds = {passed.get(), passed.get()};  // a repeat is harmless
        auto p = futures::spawn_process(
            sched, {"/bin/sh", "-c", kListFds + "; echo ---; cat /proc/self/fd/$0", std::to_string(passed.get())}, o);
        const std::string out = read_all(sched, p.stdout_pipe());
        const auto split = out.find("---\n");
        BOOST_REQUIRE(split != std::string::npos);
        BOOST_TEST(sorted_numbers(out.substr(0, split)) == (std::vector<int>{0, 1, 2, passed.get()}),
                   boost::test_tools::per_element());
        BOOST_TEST(out.substr(split + 4) == "secret");  // readable there
        BOOST_TEST(status_of(sched, p) == 0);
        BOOST_TEST(::fcntl(passed, F_GETFD) == FD_CLOEXEC);  // unchanged here
    }
}

BOOST_AUTO_TEST_CASE(pass_fds_refuses_standard_streams_and_closed_fds) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    ProcessOptions std_stream;
    std_stream.pass_fds = {1};
    BOOST_CHECK_THROW((void)futures::spawn_process(sched, {"/bin/true"}, std_stream), std::invalid_argument);
    int closed = ::dup(0);
    BOOST_REQUIRE(closed >= 0);
    ::close(closed);
    ProcessOptions not_open;
    not_open.pass_fds = {closed};
    try {
        (void)futures::spawn_process(sched, {"/bin/true"}, not_open);
        BOOST_FAIL("a closed fd cannot be passed");
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find("is not open") != std::string::npos, e.what());
    }
    ProcessOptions bad_marks;
    bad_marks.stdout_mode = Stdio::pipe;
    bad_marks.stream.connection.low_water = bad_marks.stream.connection.high_water + 1;
    BOOST_CHECK_THROW((void)futures::spawn_process(sched, {"/bin/true"}, bad_marks), std::invalid_argument);
    BOOST_TEST(no_children());  // checked before anything started
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(a_child_reaped_elsewhere_fails_wait_naming_waitpid) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    for (ExitWatch watch : watches()) {
        auto p = futures::spawn_process(sched, {"/bin/true"}, with(watch));
        auto f = p.wait();
        int status = 0;
        BOOST_REQUIRE(::waitpid(p.pid(), &status, 0) == p.pid());  // someone else reaps it first
        BOOST_REQUIRE(futures::run_until(sched, f, 20s));
        try {
            f.result();
            BOOST_FAIL("wait() must fail");
        } catch (const std::system_error& e) {
            BOOST_TEST(e.code().value() == ECHILD);
            BOOST_TEST(std::string(e.what()).find("waitpid") != std::string::npos, e.what());
        }
        BOOST_TEST(!p.exit_status().has_value());
        BOOST_CHECK_THROW(p.wait().result(), std::system_error);  // later calls too, at once
        BOOST_TEST(!p.kill());
        sched.run();
        BOOST_TEST(sched.empty());
    }
    BOOST_TEST(sched.signal_handler_count() == 0u);
}

BOOST_AUTO_TEST_CASE(emfile_from_pipe2_and_pidfd_open_is_reported_by_name_and_nothing_leaks) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    ProcessOptions piped;
    piped.stdout_mode = Stdio::pipe;
    {
        FdsExhausted fds;
        try {
            (void)futures::spawn_process(sched, {"/bin/true"}, piped);
            BOOST_FAIL("pipe2 must fail");
        } catch (const std::system_error& e) {
            BOOST_TEST(e.code().value() == EMFILE);
            BOOST_TEST(std::string(e.what()).find("spawn_process: pipe2") != std::string::npos, e.what());
        }
        BOOST_TEST(fds.exactly_free(0));
        // No pipes (the child's ends, closed after the spawn, would make room
        // for the pidfd): the child starts, pidfd_open fails, so the child is
        // killed and reaped.
        for (ExitWatch watch : {ExitWatch::automatic, ExitWatch::pidfd}) {
            try {
                (void)futures::spawn_process(sched, {"sleep", "30"}, with(watch));
                BOOST_FAIL("pidfd_open must fail");
            } catch (const std::system_error& e) {
                BOOST_TEST(e.code().value() == EMFILE);
                BOOST_TEST(std::string(e.what()).find("spawn_process: pidfd_open") != std::string::npos, e.what());
            }
            BOOST_TEST(fds.exactly_free(0));
            BOOST_TEST(no_children());
        }
        // Room for one pipe, none for another: the first one's ends are closed.
        fds.give_back(2);
        ProcessOptions two_pipes = piped;
        two_pipes.stderr_mode = Stdio::pipe;
        BOOST_CHECK_THROW((void)futures::spawn_process(sched, {"/bin/true"}, two_pipes), std::system_error);
        BOOST_TEST(fds.exactly_free(2));
    }
    BOOST_TEST(sched.empty());
    BOOST_TEST(status_of(sched, futures::spawn_process(sched, {"/bin/true"}, piped)) == 0);  // fine again
}

// The SIGCHLD watch holds work through the loop (Scheduler::hold_work), not
// through an fd: with every fd of the process in use, a child without pipes
// is still spawned, watched and reaped.
BOOST_AUTO_TEST_CASE(the_sigchld_watch_needs_no_fd) {
    if (!sigchld_testable()) {
        BOOST_TEST_MESSAGE("not run: select under ThreadSanitizer");
        return;
    }
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    {
        FdsExhausted fds;
        BOOST_TEST(status_of(sched, futures::spawn_process(sched, {"/bin/true"}, with(ExitWatch::sigchld))) == 0);
        BOOST_TEST(fds.exactly_free(0));
        BOOST_TEST(no_children());
        BOOST_TEST(sched.signal_handler_count() == 0u);  // SIGCHLD given back once no child is watched
    }
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(close_hands_a_running_child_to_a_reaper_and_leaves_an_empty_loop) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    std::vector<std::string> reports;
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    for (ExitWatch watch : watches()) {
        const std::size_t fds_before = open_fd_count();
        auto p = futures::spawn_process(sched, {"sleep", "30"}, with(watch));
        auto status = p.wait();
        BOOST_TEST(!sched.close().empty());  // the watch and the wait() future
        BOOST_TEST(status.cancelled());
        BOOST_TEST(sched.live().empty());
        BOOST_TEST(sched.signal_handler_count() == 0u);  // SIGCHLD given back
        BOOST_TEST(open_fd_count() == fds_before);  // the pidfd is closed; the SIGCHLD watch has none

        BOOST_TEST(::kill(p.pid(), 0) == 0);  // not killed
        reports.clear();
        BOOST_TEST(sched.close().empty());  // nothing left to report
        BOOST_TEST(reports.empty());
        BOOST_REQUIRE(::kill(p.pid(), SIGKILL) == 0);
        for (int i = 0; i < 2000 && !gone(p.pid()); ++i) std::this_thread::sleep_for(5ms);
        BOOST_TEST(gone(p.pid()));  // reaped by the thread
        // The loop works again afterwards, with the same watch.
        BOOST_TEST(status_of(sched, futures::spawn_process(sched, {"/bin/sh", "-c", "exit 4"}, with(watch))) == 4);
    }
}
