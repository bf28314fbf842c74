// SPDX-License-Identifier: MIT
// Runs examples/16_slow_callback for real: without debug mode it reports
// nothing; with REACTOR_DEBUG=1 (or --debug) each round's blocking callback
// and the timer it made late are reported on stderr, one line each, naming
// the lines that scheduled them. Lower bounds only: a blocked loop can only
// be later than asked, never earlier.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/text_match.hpp"

using namespace std::chrono_literals;

namespace {

using reactor_test::Child;
using reactor_test::lines_of;
using reactor_test::Run;

// Runs slow_callback through env(1), which sets or unsets REACTOR_DEBUG.
Run run_with_env(const std::vector<std::string>& env_args, const std::vector<std::string>& args) {
    std::vector<std::string> argv = env_args;
    argv.push_back(reactor_test::example_path("slow_callback"));
    argv.insert(argv.end(), args.begin(), args.end());
    Child child("/usr/bin/env", argv);
    Run r;
    r.out = lines_of(child.read_all(20s));
    r.err = child.read_stderr(5s);
    r.code = child.wait(10s);
    return r;
}

void check_stdout(const Run& r, const std::string& mode_line) {
    BOOST_TEST(r.code == 0);
    BOOST_REQUIRE_MESSAGE(r.out.size() == 10u, r.err);
    BOOST_TEST(r.out[0] == "slow_callback: " + mode_line);
    BOOST_TEST(r.out[1] == "slow_callback: round 1: armed a 10 ms timer, now blocking the loop for 150 ms");
    BOOST_TEST(r.out[2] == "slow_callback: round 1: the 10 ms timer fired");
    BOOST_TEST(r.out[3] == "slow_callback: round 2: armed a 10 ms timer, now blocking the loop for 150 ms");
    BOOST_TEST(r.out[4] == "slow_callback: round 2: the 10 ms timer fired");
    BOOST_TEST(r.out[5] == "slow_callback: done; the loop's stats:");
    BOOST_TEST(r.out[6].starts_with("slow_callback: loop: "));
    BOOST_TEST(r.out[7].starts_with("slow_callback: loop pending: 0 ready, 0 timers"));
    BOOST_TEST(r.out[8].starts_with("slow_callback: loop lag over the last 2 timers: p50 "));
    BOOST_TEST(r.out[9].starts_with("slow_callback: loop time: "));
}

// Two rounds' reports: a slow callback (>= the block) then its late timer
// (>= the block minus the timer's 10 ms), each naming a line of the example.
void check_reports(const Run& r) {
    const std::vector<std::string> err = lines_of(r.err);
    BOOST_REQUIRE_MESSAGE(err.size() == 4u, r.err);
    const std::string slow(
        R"(reactor: slow callback: it ran for (\d+\.\d) ms \(threshold 100\.0 ms\) \(from .*slow_callback\.cpp:(\d+)\))");
    const std::string late(
        R"(reactor: late timer: it fired (\d+\.\d) ms after its deadline \(threshold 100\.0 ms; loop lag\) \(from .*slow_callback\.cpp:(\d+)\))");
    std::vector<std::string> slow_lines, late_lines;
    for (std::size_t i = 0; i < err.size(); ++i) {
        const auto m = reactor_test::full_match_groups(err[i], i % 2 == 0 ? slow : late);
        BOOST_REQUIRE_MESSAGE(m.has_value(), err[i]);
        BOOST_TEST(std::stod((*m)[1]) >= (i % 2 == 0 ? 150.0 : 140.0), err[i]);
        (i % 2 == 0 ? slow_lines : late_lines).push_back((*m)[2]);
    }
    // Round 1 is scheduled by main, round 2 by round 1's timer; both timers by one line.
    BOOST_TEST(slow_lines[0] != slow_lines[1]);
    BOOST_TEST(late_lines[0] == late_lines[1]);
}

const std::vector<std::string> kArgs{"--rounds", "2", "--block-ms", "150"};

}  // namespace

BOOST_AUTO_TEST_CASE(without_debug_mode_nothing_is_reported) {
    Run r = run_with_env({"-u", "REACTOR_DEBUG"}, kArgs);
    check_stdout(r, "debug mode off: nothing is reported (REACTOR_DEBUG=1 or --debug turns it on)");
    BOOST_TEST(r.out[9] == "slow_callback: loop time: not measured (debug mode is off; REACTOR_DEBUG=1 turns it on)");
    BOOST_TEST(r.err == "");
}

BOOST_AUTO_TEST_CASE(reactor_debug_1_reports_each_slow_callback_and_late_timer) {
    Run r = run_with_env({"REACTOR_DEBUG=1"}, kArgs);
    check_stdout(r, "debug mode on: slow callbacks and late timers are reported on stderr");
    BOOST_TEST(r.out[9].find("2 slow callbacks") != std::string::npos, r.out[9]);
    BOOST_TEST(r.out[9].find("2 late timers") != std::string::npos, r.out[9]);
    check_reports(r);
}

BOOST_AUTO_TEST_CASE(the_debug_flag_does_the_same) {
    Run r = run_with_env({"-u", "REACTOR_DEBUG"}, {"--rounds", "2", "--block-ms", "150", "--debug"});
    check_stdout(r, "debug mode on: slow callbacks and late timers are reported on stderr");
    check_reports(r);
}

BOOST_AUTO_TEST_CASE(help_and_bad_options) {
    Run help = reactor_test::run_example("slow_callback", {"--help"});
    BOOST_TEST(help.code == 0);
    BOOST_REQUIRE(!help.out.empty());
    BOOST_TEST(help.out[0].find("what debug mode reports") != std::string::npos);
    for (const std::vector<std::string>& bad : {std::vector<std::string>{"--block-ms", "0"},
                                                std::vector<std::string>{"--rounds", "x"},
                                                std::vector<std::string>{"--nope"}}) {
        Run r = reactor_test::run_example("slow_callback", bad);
        BOOST_TEST(r.code == 2, bad[0]);
        BOOST_TEST(r.err.find(bad[0]) != std::string::npos, r.err);
        BOOST_TEST(r.out.empty());
    }
}

BOOST_AUTO_TEST_CASE(ctrl_c_stops_it) {
    Run r = reactor_test::interrupt_after_first_line("slow_callback", {"--rounds", "100", "--block-ms", "50"});
    BOOST_TEST(r.code == 130);
    BOOST_REQUIRE(!r.out.empty());
    BOOST_TEST(r.out.back() == "slow_callback: interrupted");
}
