// SPDX-License-Identifier: MIT
// docs/processes.md: child processes (spawn_process, pipes as streams, exit
// status, signals, reaping) and streams over pipes and the standard streams.
// Real children (/bin/sh, /bin/cat, sleep); every case ends by itself.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <system_error>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <futures/futures.hpp>
#include <futures/process.hpp>
#include <reactor/net/pipe.hpp>
#include <reactor/scheduler.hpp>

using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(processes_run_a_command) {
    // [snippet:run_a_command]
    reactor::Scheduler sched;
    futures::ProcessOptions options;
    options.stdout_mode = futures::Stdio::pipe;  // stdin and stderr: inherited
    futures::Process child =
        futures::spawn_process(sched, {"/bin/sh", "-c", "echo hello; echo world; exit 3"}, options);

    futures::Stream out = child.stdout_pipe();
    std::string first = futures::run_until_complete(sched, out.read_until("\n"));   // "hello\n"
    std::string second = futures::run_until_complete(sched, out.read_until("\n"));  // "world\n"
    int status = futures::run_until_complete(sched, child.wait());                  // 3
    // [end-snippet:run_a_command]
    BOOST_TEST(first == "hello\n");
    BOOST_TEST(second == "world\n");
    BOOST_TEST(status == 3);
    BOOST_TEST(child.exit_status().value() == 3);
}

BOOST_AUTO_TEST_CASE(processes_both_ways) {
    reactor::Scheduler sched;
    // [snippet:both_ways]
    futures::ProcessOptions options;
    options.stdin_mode = options.stdout_mode = futures::Stdio::pipe;
    options.environment = std::vector<std::string>{"LC_ALL=C"};  // its whole environment
    futures::Process sort = futures::spawn_process(sched, {"sort"}, options);  // found in PATH

    futures::Stream in = sort.stdin_pipe();
    in.write("pear\napple\nfig\n");  // buffered; flows while the loop runs
    in.write_eof();                  // sort sees EOF once the bytes are out

    std::string sorted;
    for (;;) {
        std::string chunk = futures::run_until_complete(sched, sort.stdout_pipe().read());
        if (chunk.empty()) break;  // EOF: sort closed its stdout
        sorted += chunk;
    }
    // [end-snippet:both_ways]
    BOOST_TEST(sorted == "apple\nfig\npear\n");
    BOOST_TEST(futures::run_until_complete(sched, sort.wait()) == 0);
}

BOOST_AUTO_TEST_CASE(processes_signals_and_status) {
    reactor::Scheduler sched;
    // [snippet:signals]
    futures::Process sleeper = futures::spawn_process(sched, {"sleep", "30"});
    futures::Future<int> status = sleeper.wait();
    sleeper.terminate();                     // SIGTERM (kill(): SIGKILL)
    futures::run_until(sched, status);
    // status.result() == -SIGTERM: a signal N is reported as -N
    bool sent = sleeper.kill();              // false: reaped, so nothing is sent
    // [end-snippet:signals]
    BOOST_TEST(status.result() == -SIGTERM);
    BOOST_TEST(!sent);
}

BOOST_AUTO_TEST_CASE(processes_missing_program) {
    reactor::Scheduler sched;
    std::string message;
    int code = 0;
    // [snippet:missing_program]
    try {
        futures::Process p = futures::spawn_process(sched, {"no-such-program", "--flag"});
    } catch (const std::system_error& e) {
        // e.code() == ENOENT; e.what():
        // "spawn_process: cannot run 'no-such-program': No such file or directory"
        message = e.what();
        code = e.code().value();
    }
    // [end-snippet:missing_program]
    BOOST_TEST(code == ENOENT);
    BOOST_TEST(message == "spawn_process: cannot run 'no-such-program': No such file or directory");
}

BOOST_AUTO_TEST_CASE(processes_dropped_early) {
    reactor::Scheduler sched;
    // [snippet:dropped]
    int pid = futures::spawn_process(sched, {"/bin/sh", "-c", "sleep 0.05"}).pid();  // handle dropped at once
    sched.run();  // returns once the child has exited and been reaped
    // [end-snippet:dropped]
    int raw = 0;
    BOOST_TEST(::waitpid(pid, &raw, WNOHANG) == -1);
    BOOST_TEST(errno == ECHILD);  // nothing left to reap: no zombie
}

BOOST_AUTO_TEST_CASE(processes_pipes_and_stdio) {
    reactor::Scheduler sched;
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);  // stands in for a piped stdin
    const int input_fd = fds[0];
    BOOST_REQUIRE(::write(fds[1], "typed\n", 6) == 6);
    ::close(fds[1]);
    // [snippet:pipes]
    // A pipe inside the program: what goes into write_end comes out of read_end.
    auto [read_end, write_end] = futures::open_pipe(sched);
    write_end.write("through the pipe\n");
    write_end.write_eof();
    std::string piped = futures::run_until_complete(sched, read_end.read_until("\n"));

    // Lines from stdin (input_fd would be STDIN_FILENO): a pipe or a terminal.
    futures::Stream in = futures::open_stdio(sched, input_fd);
    std::string line = futures::run_until_complete(sched, in.read_until("\n"));
    // [end-snippet:pipes]
    BOOST_TEST(piped == "through the pipe\n");
    BOOST_TEST(line == "typed\n");
    in.close();
    futures::run_until(sched, in.wait_closed());
    ::close(input_fd);
}
