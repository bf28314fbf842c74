// SPDX-License-Identifier: MIT
// Runs examples/14_run_command for real and checks what it prints and how it
// exits: prefixed lines from both pipes, the child's status (or 128+signal),
// a missing program, a bad command line, its stdin passed through, and Ctrl-C
// terminating the child.
#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "support/process.hpp"
#include "support/text_match.hpp"

using namespace std::chrono_literals;
using reactor_test::Run;
using reactor_test::run_example;

namespace {

// "running PROG (pid N)" -> N, or -1.
int pid_in(const std::string& line) {
    const auto m = reactor_test::full_match_groups(line, R"(running \S+ \(pid (\d+)\))");
    return m ? std::stoi((*m)[1]) : -1;
}

}  // namespace

BOOST_AUTO_TEST_CASE(streams_both_pipes_and_exits_with_the_status) {
    Run r = run_example("run_command", {"--", "/bin/sh", "-c", "echo one; echo two >&2; echo three; printf tail; exit 3"});
    BOOST_TEST(r.code == 3);
    BOOST_REQUIRE_MESSAGE(r.out.size() == 6u, r.err);
    BOOST_TEST(pid_in(r.out[0]) > 0);
    // Each pipe's lines in order; the two pipes interleave as the child wrote them.
    std::vector<std::string> out_lines, err_lines;
    for (std::size_t i = 1; i + 1 < r.out.size(); ++i) (r.out[i].starts_with("out: ") ? out_lines : err_lines).push_back(r.out[i]);
    BOOST_TEST(out_lines == (std::vector<std::string>{"out: one", "out: three", "out: tail"}), boost::test_tools::per_element());
    BOOST_TEST(err_lines == (std::vector<std::string>{"err: two"}), boost::test_tools::per_element());
    BOOST_TEST(r.out.back() == "exited with status 3");
    BOOST_TEST(r.err == "");
}

BOOST_AUTO_TEST_CASE(a_long_output_keeps_every_line_in_order) {
    Run r = run_example("run_command", {"--", "/bin/sh", "-c", "seq 1 20000"});
    BOOST_TEST(r.code == 0);
    BOOST_REQUIRE_MESSAGE(r.out.size() == 20002u, r.err);
    for (int i = 1; i <= 20000; ++i)
        if (r.out[static_cast<std::size_t>(i)] != "out: " + std::to_string(i)) BOOST_FAIL("line " << i << ": " << r.out[static_cast<std::size_t>(i)]);
}

BOOST_AUTO_TEST_CASE(stdin_is_passed_through) {
    reactor_test::Child child(reactor_test::example_path("run_command"), {"--", "/bin/cat"});
    child.write_stdin("typed line\n");
    child.close_stdin();
    auto lines = reactor_test::lines_of(child.read_all(20s));
    BOOST_TEST(child.wait(10s) == 0);
    BOOST_REQUIRE(lines.size() == 3u);
    BOOST_TEST(lines[1] == "out: typed line");
}

BOOST_AUTO_TEST_CASE(a_signal_gives_128_plus_its_number) {
    Run r = run_example("run_command", {"--", "/bin/sh", "-c", "kill -9 $$"});
    BOOST_TEST(r.code == 128 + SIGKILL);
    BOOST_REQUIRE(!r.out.empty());
    BOOST_TEST(r.out.back() == "killed by signal 9 (KILL)");
}

BOOST_AUTO_TEST_CASE(a_missing_program_is_named) {
    Run r = run_example("run_command", {"--", "no_such_program_for_run_command", "arg"});
    BOOST_TEST(r.code == 127);
    BOOST_TEST(r.out.empty());
    BOOST_TEST(r.err.find("cannot run 'no_such_program_for_run_command'") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_CASE(help_and_bad_command_lines) {
    Run help = run_example("run_command", {"--help"});
    BOOST_TEST(help.code == 0);
    BOOST_REQUIRE(!help.out.empty());
    BOOST_TEST(help.out[0].find("line by line") != std::string::npos);
    Run none = run_example("run_command", {});
    BOOST_TEST(none.code == 2);
    BOOST_TEST(none.err.find("no command given") != std::string::npos, none.err);
    Run bogus = run_example("run_command", {"--bogus", "--", "/bin/true"});
    BOOST_TEST(bogus.code == 2);
    BOOST_TEST(bogus.err.find("--bogus") != std::string::npos, bogus.err);
}

BOOST_AUTO_TEST_CASE(ctrl_c_terminates_the_child_and_exits_130) {
    Run r = reactor_test::interrupt_after_first_line("run_command", {"--", "sleep", "30"});
    BOOST_TEST(r.code == 130);
    BOOST_REQUIRE_MESSAGE(r.out.size() == 2u, r.err);
    const int child = pid_in(r.out[0]);
    BOOST_TEST(child > 0);
    BOOST_TEST(r.out[1] == "run_command: interrupted");
    // run_command reaped it before exiting: no such process any more.
    BOOST_TEST((::kill(child, 0) != 0 && errno == ESRCH));
}
