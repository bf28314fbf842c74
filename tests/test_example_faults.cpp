// SPDX-License-Identifier: MIT
// The examples when the kernel fails them: each program runs under
// `strace -f --inject` (system calls made to fail from the outside, no
// library seam needed) and must end as a program should, never in
// std::terminate (SIGABRT, exit status 134):
//  - the selector's wait failing for good makes Scheduler::run() throw; every
//    example then prints ONE line on stderr, "<program>: <what>", and exits 1
//    (examples/program.hpp);
//  - run_command whose wait for the child fails (wait4: ECHILD), and resolve
//    whose thread pool cannot start a thread (clone: EAGAIN), likewise;
//  - a server on several loops whose loop thread cannot start says which
//    loop, in that one line, before it announces anything;
//  - echo_server_streams counts a read error of its own as a failure, not as
//    a client's reset.
// Skipped, with the reason, where strace is missing or ptrace is not allowed
// (a container without CAP_SYS_PTRACE, Yama's ptrace_scope 3). Everything
// talks to 127.0.0.1 only. Runs once: each case picks the backend whose wait
// it breaks.
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "support/net_util.hpp"
#include "support/process.hpp"
#include "support/text_match.hpp"

using namespace std::chrono_literals;

namespace {

// strace's path, if it is installed and may trace here; else why not.
struct Strace {
    std::string path;
    std::string unusable;  // empty: usable
};

const Strace& strace() {
    static const Strace found = [] {
        Strace s;
        const char* env = std::getenv("PATH");
        std::istringstream dirs(env ? env : "/usr/bin:/bin");
        for (std::string dir; std::getline(dirs, dir, ':');)
            if (!dir.empty() && ::access((dir + "/strace").c_str(), X_OK) == 0) {
                s.path = dir + "/strace";
                break;
            }
        if (s.path.empty()) {
            s.unusable = "strace is not installed";
            return s;
        }
        reactor_test::Child probe(s.path, {"-f", "-o", "/dev/null", "true"});
        probe.close_stdin();
        std::string err = probe.read_stderr(10s);
        if (probe.wait(10s) != 0) s.unusable = "strace cannot trace here (ptrace refused?): " + err;
        return s;
    }();
    return found;
}

boost::unit_test::precondition needs_strace() {
    // Something captured, not a captureless lambda: see
    // reactor_test::needs_localhost() (a GCC 12 false positive). strace() is
    // called when the case is about to run, not at static initialisation.
    const char* skipped = "skipped: ";
    return boost::unit_test::precondition([skipped](boost::unit_test::test_unit_id) {
        boost::test_tools::assertion_result result(strace().unusable.empty());
        result.message() << skipped << strace().unusable;
        return result;
    });
}

// An example under strace, with `syscalls` failing with `error` from their
// `when`-th call on (strace's syntax: "3" is the third call only, "1+" every
// call). strace exits with its tracee's status, and dies of its signal (so
// 128 + 6 for SIGABRT).
// `trace_file`: where strace writes the calls it traced (default: nowhere).
reactor_test::Child under_strace(const std::string& syscalls, const std::string& error, const std::string& when,
                                const std::string& example, std::vector<std::string> args,
                                const std::string& trace_file = "/dev/null") {
    // LeakSanitizer cannot run under ptrace (it stops the process at exit
    // with a fatal error): in a sanitizer build the traced example runs
    // without it. Harmless elsewhere.
    std::vector<std::string> argv{"-f", "-o", trace_file, "-E", "ASAN_OPTIONS=detect_leaks=0",
                                  "-e", "trace=" + syscalls,
                                  "-e", "inject=" + syscalls + ":error=" + error + ":when=" + when,
                                  reactor_test::example_path(example)};
    argv.insert(argv.end(), args.begin(), args.end());
    return reactor_test::Child(strace().path, argv);
}

std::vector<std::string> stderr_lines(const std::string& err) { return reactor_test::lines_of(err); }

// The end every failing example must have: exit 1 (never 134: SIGABRT) and
// exactly one stderr line naming the program.
void expect_one_line_and_exit_1(int code, const std::string& program, const std::string& err) {
    BOOST_TEST(code != 128 + 6, program << " ended in SIGABRT; stderr: " << err);
    BOOST_TEST(code == 1, program << ": exit status " << code << "; stderr: " << err);
    const auto lines = stderr_lines(err);
    BOOST_TEST(lines.size() == 1u, program << ": stderr: " << err);
    if (!lines.empty()) BOOST_TEST(lines.front().starts_with(program + ": "), program << ": stderr: " << err);
}
void expect_one_line_and_exit_1(reactor_test::Child& child, const std::string& program, const std::string& err) {
    expect_one_line_and_exit_1(child.wait(30s), program, err);
}

// Every selector's wait: select runs pselect6, poll ppoll, epoll epoll_wait
// (epoll_pwait where libc prefers it). Each example keeps its own backend.
const std::string kSelectorWaits = "pselect6,ppoll,epoll_wait,epoll_pwait";

// "listening on 127.0.0.1:PORT (epoll)": the port.
std::uint16_t listening_port(reactor_test::Child& child, const std::string& program) {
    auto first = child.read_line(20s);
    BOOST_REQUIRE_MESSAGE(first.has_value(), program << " printed nothing");
    const auto m = reactor_test::full_match_groups(*first, R"(listening on 127\.0\.0\.1:(\d+) \(epoll\))");
    BOOST_REQUIRE(m.has_value());
    return static_cast<std::uint16_t>(std::stoi((*m)[1]));
}

// One echo exchange as a client: what came back (empty after a reset).
std::string echo_once(std::uint16_t port, const std::string& message) {
    const int fd = reactor_test::connect_blocking(port);
    if (fd < 0) return "connect failed";
    reactor_test::send_all(fd, message);
    ::shutdown(fd, SHUT_WR);
    std::string back = reactor_test::recv_all(fd);
    ::close(fd);
    return back;
}


}  // namespace

// EINVAL from the wait means the loop's own state is broken: run() throws.
// Every program of the series catches it in main (examples/program.hpp).
BOOST_AUTO_TEST_CASE(no_example_ends_in_sigabrt_when_the_selector_fails, *needs_strace()) {
    reactor_test::SilentListener nobody;  // somewhere for echo_client to connect
    std::vector<std::pair<std::string, std::vector<std::string>>> programs = {
        {"hello", {"--speed", "100"}},
        {"fd_waiters", {"--speed", "100"}},
        {"countdown", {"--speed", "100", "--port", "0"}},
        {"chain", {"--speed", "100"}},
        {"tasks", {"--speed", "100"}},
        {"toy_jobs", {"--speed", "100"}},
        {"spawn_join", {"--speed", "100"}},
        {"fetch_ms", {"--speed", "100"}},
        {"echo_client", {"--port", std::to_string(nobody.port), "--connections", "1", "--max-seconds", "30"}},
        {"echo_server", {"--port", "0", "--max-seconds", "30"}},
        {"echo_server_streams", {"--port", "0", "--max-seconds", "30"}},
        {"chat_server", {"--port", "0", "--max-seconds", "30"}},
        {"http_hello", {"--port", "0", "--max-seconds", "30"}},
        {"resolve", {"::1", "127.0.0.1"}},
        {"run_command", {"--", "/bin/true"}},
        {"pipeline", {"--speed", "100"}},
        {"slow_callback", {"--block-ms", "1", "--rounds", "1"}},
    };
    // The TLS programs, where the examples are built with reactor::tls: the
    // servers with a self-signed certificate made in memory (no files), the
    // client without verification; http_hello --tls-cert shares their path
    // (its bad files: tests/test_http_hello_tls.cpp).
    const std::vector<std::pair<std::string, std::vector<std::string>>> tls_programs = {
        {"https_hello", {"--port", "0", "--max-seconds", "30"}},
        {"tls_echo_server", {"--port", "0", "--max-seconds", "30"}},
        {"tls_echo_client",
         {"--port", std::to_string(nobody.port), "--insecure", "--connections", "1", "--max-seconds", "30"}},
    };
    for (const auto& p : tls_programs)
        if (::access(reactor_test::example_path(p.first).c_str(), X_OK) == 0) programs.push_back(p);
    // A program whose loop never had to wait (on a loaded machine every
    // timer of a timer-only example can be due before the first wait, and
    // the loop skips the selector then) had nothing injected: that is not
    // a failure, and strace's trace says so.
    const std::string trace = "/tmp/reactor_test_example_faults." + std::to_string(::getpid());
    for (const auto& [program, args] : programs) {
        reactor_test::Child child = under_strace(kSelectorWaits, "EINVAL", "1+", program, args, trace);
        child.close_stdin();
        child.read_all(30s);
        std::string err = child.read_stderr(10s);
        const int code = child.wait(30s);
        std::ifstream traced(trace);
        const std::string calls((std::istreambuf_iterator<char>(traced)), std::istreambuf_iterator<char>());
        if (code == 0 && calls.find("INJECTED") == std::string::npos) {
            BOOST_TEST_MESSAGE(program << ": its loop never waited, nothing was injected");
            continue;
        }
        expect_one_line_and_exit_1(code, program, err);
    }
    ::unlink(trace.c_str());
}

// A server with clients: the failure still ends it with one line and exit 1.
BOOST_AUTO_TEST_CASE(a_server_whose_selector_fails_with_a_client_connected_exits_1, *needs_strace()) {
    // The wait fails from its 4th call on: after the listen, the accept and the client's first bytes.
    reactor_test::Child child = under_strace("epoll_wait,epoll_pwait", "EINVAL", "4+", "echo_server",
                                            {"--port", "0", "--max-seconds", "30"});
    int fd = reactor_test::connect_blocking(listening_port(child, "echo_server"));
    BOOST_REQUIRE(fd >= 0);
    reactor_test::send_all(fd, "hello\n");
    child.read_all(30s);
    std::string err = child.read_stderr(10s);
    expect_one_line_and_exit_1(child, "echo_server", err);
    ::close(fd);
}

// Reaping the child fails: the exit future fails, and main says so.
BOOST_AUTO_TEST_CASE(run_command_whose_wait_for_the_child_fails_exits_1, *needs_strace()) {
    reactor_test::Child child = under_strace("wait4", "ECHILD", "1+", "run_command", {"--", "/bin/echo", "hi"});
    child.close_stdin();
    std::string out = child.read_all(30s);
    std::string err = child.read_stderr(10s);
    expect_one_line_and_exit_1(child, "run_command", err);
    BOOST_TEST(out.find("out: hi\n") != std::string::npos, out);  // the output still came through
}

// The pool cannot start a thread: the lookup's future fails, and main says so.
BOOST_AUTO_TEST_CASE(resolve_whose_pool_cannot_start_a_thread_exits_1, *needs_strace()) {
    reactor_test::Child child = under_strace("clone,clone3", "EAGAIN", "1+", "resolve", {"::1", "127.0.0.1"});
    child.close_stdin();
    child.read_all(30s);
    std::string err = child.read_stderr(10s);
    expect_one_line_and_exit_1(child, "resolve", err);
}

// recv fails on the server's side: a failure of ours, said on stderr and
// counted as such; the client did not reset anything.
BOOST_AUTO_TEST_CASE(echo_server_streams_counts_its_own_read_error_as_a_failure, *needs_strace()) {
    reactor_test::Child child = under_strace("recvfrom", "EIO", "1", "echo_server_streams",
                                            {"--port", "0", "--exit-after", "1", "--max-seconds", "30"});
    int fd = reactor_test::connect_blocking(listening_port(child, "echo_server_streams"));
    BOOST_REQUIRE(fd >= 0);
    reactor_test::send_all(fd, "hello\n");
    reactor_test::recv_all(fd);  // until the server ends the connection
    ::close(fd);
    std::string out = child.read_all(30s);
    std::string err = child.read_stderr(10s);
    BOOST_TEST(child.wait(30s) == 0, err);
    BOOST_TEST(out.find(", 0 reset by the client, 0 timed out, 1 failed\n") != std::string::npos, out);
    BOOST_TEST(err.starts_with("echo_server_streams: client 127.0.0.1:"), err);
    BOOST_TEST(stderr_lines(err).size() == 1u, err);
}


// A transient failure of the wait (ENOMEM on its 3rd call) is ridden out:
// one line on stderr says it is retried, the client is served, and the
// server ends as asked, with status 0.
BOOST_AUTO_TEST_CASE(a_server_rides_out_a_transient_selector_failure, *needs_strace()) {
    reactor_test::Child child = under_strace("epoll_wait,epoll_pwait", "ENOMEM", "3", "echo_server",
                                            {"--port", "0", "--exit-after", "1", "--max-seconds", "30"});
    const std::uint16_t port = listening_port(child, "echo_server");
    BOOST_TEST(echo_once(port, "still here\n") == "still here\n");
    std::string out = child.read_all(30s);
    std::string err = child.read_stderr(10s);
    BOOST_TEST(child.wait(30s) == 0, err);
    BOOST_TEST(out.find("echo_server: 1 connections") != std::string::npos, out);
    BOOST_TEST(err.find("epoll backend: epoll_wait: Cannot allocate memory; retrying") != std::string::npos, err);
}

// The kernel refuses to watch the first accepted connection (epoll_ctl's
// 3rd call, after the wake-up fd and the listener): that client sees a
// reset at once, not a hang, and the next client is served.
BOOST_AUTO_TEST_CASE(an_unwatchable_connection_is_reset_and_the_next_served, *needs_strace()) {
    reactor_test::Child child = under_strace("epoll_ctl", "ENOMEM", "3", "echo_server",
                                            {"--port", "0", "--exit-after", "2", "--max-seconds", "30"});
    const std::uint16_t port = listening_port(child, "echo_server");
    const auto start = std::chrono::steady_clock::now();
    BOOST_TEST(echo_once(port, "refused\n") == "");
    BOOST_TEST((std::chrono::steady_clock::now() - start < 10s));  // a reset, not the client's 10 s timeout
    BOOST_TEST(echo_once(port, "served\n") == "served\n");
    std::string out = child.read_all(30s);
    std::string err = child.read_stderr(10s);
    BOOST_TEST(child.wait(30s) == 0, err);
    BOOST_TEST(out.find("echo_server: 2 connections") != std::string::npos, out);
}

// The kernel refuses to watch the listening socket (epoll_ctl's 2nd call):
// the server says so in one line and exits 1, instead of claiming to listen
// and never accepting.
BOOST_AUTO_TEST_CASE(a_server_whose_listener_cannot_be_watched_exits_1, *needs_strace()) {
    reactor_test::Child child = under_strace("epoll_ctl", "ENOSPC", "2", "echo_server",
                                            {"--port", "0", "--max-seconds", "30"});
    child.read_all(30s);
    std::string err = child.read_stderr(10s);
    BOOST_TEST(child.wait(30s) == 1, err);
    BOOST_TEST(stderr_lines(err).size() == 1u, err);
    BOOST_TEST(err.find("cannot watch the listening socket") != std::string::npos, err);
}

// A server on several loops whose second loop's thread cannot be started
// (clone: EAGAIN, out of memory or of threads): one stderr line says which
// loop and why, exit 1, and nothing was announced: no "listening on" for a
// server that never served.
BOOST_AUTO_TEST_CASE(a_group_server_whose_loop_cannot_start_says_which_before_announcing, *needs_strace()) {
    for (const std::string program : {"echo_server", "echo_server_streams", "chat_server", "http_hello"}) {
        BOOST_TEST_CONTEXT(program) {
            reactor_test::Child child = under_strace("clone,clone3", "EAGAIN", "1+", program,
                                                    {"--port", "0", "--loops", "2", "--max-seconds", "30"});
            child.close_stdin();
            const std::string out = child.read_all(30s);
            const std::string err = child.read_stderr(10s);
            expect_one_line_and_exit_1(child, program, err);
            BOOST_TEST(err == program + ": reactor: LoopGroup: cannot start the thread of loop 1 (2 loops): "
                                        "Resource temporarily unavailable\n");
            BOOST_TEST(out == "");
        }
    }
}
