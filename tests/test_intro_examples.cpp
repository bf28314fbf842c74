// SPDX-License-Identifier: MIT
// The first steps of the examples series, run for real: hello (call_soon,
// call_later, cancel) and fd_waiters (one-shot read_wait, persistent
// add_reader) on the backend under test; and what every example's command
// line promises: --help, and a clear refusal of unknown options.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "support/backends.hpp"
#include "support/process.hpp"
#include "support/text_match.hpp"

using namespace std::chrono_literals;

namespace {

using reactor_test::lines_of;
using reactor_test::Run;

using reactor_test::run_example;

std::string backend_name() { return std::string(reactor::to_string(reactor_test::backend_under_test())); }

// Every program of the series (examples/README.md).
const std::vector<std::string> kExamples{"hello",       "fd_waiters", "countdown",   "chain",
                                         "tasks",       "toy_jobs",   "spawn_join",  "fetch_ms",
                                         "echo_server", "echo_client", "echo_server_streams",
                                         "chat_server", "http_hello"};

}  // namespace

BOOST_AUTO_TEST_CASE(hello_runs_soon_callbacks_then_timers_by_deadline_and_skips_the_cancelled_one) {
    Run r = run_example("hello", {"--speed", "50"});
    BOOST_TEST(r.code == 0);
    BOOST_REQUIRE_MESSAGE(r.out.size() == 6u, r.err);
    BOOST_TEST(r.out[0] == "main: three timers and one call_soon scheduled; one timer cancelled");
    BOOST_TEST(r.out[1] == "call_soon: hello, from the loop");
    BOOST_TEST(r.out[5] == "run() returned: nothing ready, nothing sleeping");
    // What is fixed: the call_soon scheduled by a callback runs after the one
    // that scheduled it, and the timers fire in deadline order, never early.
    // Whether that call_soon also beats the first timer depends on how long
    // the machine took to reach the loop (the timer may already be due on the
    // first pass), so its place among the timers is not asserted.
    const std::string nested = "call_soon, scheduled by a callback: runs on the next pass";
    std::vector<std::string> rest(r.out.begin() + 2, r.out.begin() + 5);
    auto at = std::find(rest.begin(), rest.end(), nested);
    BOOST_TEST_REQUIRE((at != rest.end()), "missing: " << nested);
    rest.erase(at);
    auto m = reactor_test::full_match_groups(rest[0],
                                             R"(call_later\(1 s\): the earliest deadline fires first, at (\d+\.\d\d) s)");
    BOOST_TEST_REQUIRE(m.has_value(), rest[0]);
    BOOST_TEST(std::stod((*m)[1]) >= 1.0);
    m = reactor_test::full_match_groups(rest[1], R"(call_later\(2 s\): world, at (\d+\.\d\d) s)");
    BOOST_TEST_REQUIRE(m.has_value(), rest[1]);
    BOOST_TEST(std::stod((*m)[1]) >= 2.0);
    BOOST_TEST(r.err.empty(), r.err);
}

BOOST_AUTO_TEST_CASE(fd_waiters_one_shot_hears_once_persistent_hears_until_removed) {
    // Each step is caused by the one before it, so the order is fixed.
    Run r = run_example("fd_waiters", {"--speed", "50", "--backend", backend_name()});
    BOOST_TEST(r.code == 0);
    BOOST_TEST(r.out == (std::vector<std::string>{
                            "read_wait: armed (one-shot)",
                            "writer: sent \"ping 1\"",
                            "read_wait: got \"ping 1\"; not armed again, so nobody listens now",
                            "writer: sent \"ping 2\"",
                            "add_reader: armed (persistent); \"ping 2\" waited in the pipe",
                            "add_reader: got \"ping 2\"",
                            "writer: sent \"ping 3\"",
                            "add_reader: got \"ping 3\"",
                            "writer: closed its end",
                            "add_reader: end of input: remove_reader, close",
                            "run() returned: no waiter and no timer left",
                        }),
               boost::test_tools::per_element());
    BOOST_TEST(r.err.empty(), r.err);
}

BOOST_AUTO_TEST_CASE(every_example_explains_itself_with_help) {
    for (const auto& name : kExamples) {
        Run help = run_example(name, {"--help"});
        BOOST_TEST(help.code == 0, name);
        std::string usage;
        for (const auto& line : help.out) usage += line + "\n";
        BOOST_TEST(usage.find("Usage: " + name + " [OPTIONS]") != std::string::npos, name << ":\n" << usage);
        BOOST_TEST(usage.find("--help") != std::string::npos, name);
        BOOST_TEST(help.err.empty(), name << ": " << help.err);
    }
}

BOOST_AUTO_TEST_CASE(every_example_reports_an_unknown_option_as_unknown) {
    // The old hand-written parser answered "--nope 1" with "needs a value"
    // when it came last, and only checked the name afterwards.
    for (const auto& name : kExamples) {
        for (const auto& args : {std::vector<std::string>{"--nope"}, std::vector<std::string>{"--nope", "1"},
                                 std::vector<std::string>{"--nope=1"}}) {
            Run r = run_example(name, args);
            BOOST_TEST(r.code == 2, name);
            BOOST_TEST(r.err.find(name + ": unknown option --nope") == 0u, name << ": " << r.err);
            BOOST_TEST(r.out.empty(), name);  // refused before doing anything
        }
        Run stray = run_example(name, {"stray"});
        BOOST_TEST(stray.code == 2, name);
        BOOST_TEST(stray.err.find(name + ": unexpected argument 'stray'") == 0u, name << ": " << stray.err);
    }
}

BOOST_AUTO_TEST_CASE(a_missing_or_malformed_value_names_the_option) {
    Run missing = run_example("hello", {"--speed"});
    BOOST_TEST(missing.code == 2);
    BOOST_TEST(missing.err.find("hello: --speed") == 0u, missing.err);
    for (const char* bad : {"fast", "0", "-1", "nan", "inf", "1e999"}) {
        Run r = run_example("hello", {"--speed", bad});
        BOOST_TEST(r.code == 2, bad);
        BOOST_TEST(r.err.find("hello: --speed: must be a positive number") == 0u, bad << ": " << r.err);
        BOOST_TEST(r.out.empty(), bad);
    }
    Run backend = run_example("fd_waiters", {"--backend", "kqueue"});
    BOOST_TEST(backend.code == 2);
    BOOST_TEST(backend.err.find("fd_waiters: --backend: kqueue not in {select,poll,epoll}") == 0u, backend.err);
}

// Ctrl-C: the run stops through the loop, the program says so on its last
// line and exits 130 (not killed by the signal: that would print nothing).
BOOST_AUTO_TEST_CASE(ctrl_c_stops_the_run_with_one_line_and_exit_130) {
    for (const std::string name : {"hello", "fd_waiters"}) {
        Run r = reactor_test::interrupt_after_first_line(name, {"--speed", "0.1"});  // surely before the end
        BOOST_TEST(r.code == 130, name);
        BOOST_REQUIRE(!r.out.empty());
        BOOST_TEST(r.out.back() == name + ": interrupted", name);
        BOOST_TEST(r.out.size() < 6u, name << ": ran on after SIGINT");
        BOOST_TEST(r.err == "", name);
    }
}
