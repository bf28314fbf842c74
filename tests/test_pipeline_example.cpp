// SPDX-License-Identifier: MIT
// Runs examples/15_pipeline (pipeline) for real and checks what it prints:
// the exact interleaving of producer and consumer (the consumer's work timer
// is the only timer, so the order does not depend on timing), the queue never
// over its bound, the producer throttled, --help, bad options, and Ctrl-C.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/text_match.hpp"

namespace {

using reactor_test::Run;
using reactor_test::run_example;
using Lines = std::vector<std::string>;

}  // namespace

BOOST_AUTO_TEST_CASE(a_full_queue_makes_the_producer_wait_for_the_consumer) {
    Run r = run_example("pipeline", {"--items", "6", "--capacity", "2", "--speed", "100"});
    BOOST_TEST(r.code == 0);
    BOOST_TEST(r.err.empty(), r.err);
    BOOST_REQUIRE_MESSAGE(r.out.size() == 25u, r.err);
    BOOST_TEST(r.out.front() == "pipeline: 6 items through a queue of 2, 0.005s of work each");
    const Lines middle(r.out.begin() + 1, r.out.end() - 1);
    // Items 1-3 go in at once (the consumer took item 1 straight away); from
    // then on each put waits until the consumer finishes an item and takes
    // the next, so the queue never holds more than 2.
    BOOST_TEST(middle == (Lines{"producer: item 1 queued (0/2)",
                                "consumer: working on item 1",
                                "producer: item 2 queued (1/2)",
                                "producer: item 3 queued (2/2)",
                                "producer: item 4 waits, the queue is full (2/2)",
                                "consumer: item 1 done",
                                "producer: item 4 queued (2/2)",
                                "producer: item 5 waits, the queue is full (2/2)",
                                "consumer: working on item 2",
                                "consumer: item 2 done",
                                "producer: item 5 queued (2/2)",
                                "producer: item 6 waits, the queue is full (2/2)",
                                "consumer: working on item 3",
                                "consumer: item 3 done",
                                "producer: item 6 queued (2/2)",
                                "producer: all 6 items made; closing the queue",
                                "consumer: working on item 4",
                                "consumer: item 4 done",
                                "consumer: working on item 5",
                                "consumer: item 5 done",
                                "consumer: working on item 6",
                                "consumer: item 6 done",
                                "consumer: the queue is closed and empty; stopping"}),
               boost::test_tools::per_element());
    const std::string& last = r.out.back();
    const auto m = reactor_test::full_match_groups(
        last, R"(pipeline: 6 items processed in (\d+\.\d\d)s; the producer waited 3 times for room)");
    BOOST_REQUIRE_MESSAGE(m.has_value(), last);
    BOOST_TEST(std::stod((*m)[1]) >= 0.03);  // six items of 5 ms each, one after the other: never less
}

BOOST_AUTO_TEST_CASE(a_queue_as_large_as_the_work_never_makes_the_producer_wait) {
    Run r = run_example("pipeline", {"--items", "4", "--capacity", "4", "--speed", "100"});
    BOOST_TEST(r.code == 0);
    BOOST_REQUIRE(!r.out.empty());
    BOOST_TEST(r.out.back().find("the producer waited 0 times for room") != std::string::npos, r.out.back());
    for (const auto& line : r.out) BOOST_TEST(line.find("waits") == std::string::npos, line);
}

BOOST_AUTO_TEST_CASE(help_and_bad_options) {
    Run help = run_example("pipeline", {"--help"});
    BOOST_TEST(help.code == 0);
    BOOST_REQUIRE(!help.out.empty());
    BOOST_TEST(help.out.front().find("A producer puts items into a bounded queue") == 0u, help.out.front());
    bool usage = false;
    for (const auto& line : help.out) usage = usage || line.find("Usage: pipeline") == 0;
    BOOST_TEST(usage);
    for (const std::vector<std::string>& bad : {std::vector<std::string>{"--capacity", "0"},
                                                std::vector<std::string>{"--items", "0"},
                                                std::vector<std::string>{"--speed", "nan"},
                                                std::vector<std::string>{"--work", "-1"},
                                                std::vector<std::string>{"extra"}}) {
        Run r = run_example("pipeline", bad);
        BOOST_TEST(r.code == 2, bad.front());
        BOOST_TEST(r.err.find("pipeline: ") == 0u, r.err);
        BOOST_TEST(r.out.empty(), bad.front());
    }
}

BOOST_AUTO_TEST_CASE(ctrl_c_stops_the_run_with_one_line_and_exit_130) {
    // Slowed down (5 s of work per item), so the signal surely comes before the end.
    Run r = reactor_test::interrupt_after_first_line("pipeline", {"--speed", "0.1"});
    BOOST_TEST(r.code == 130);
    BOOST_REQUIRE(!r.out.empty());
    BOOST_TEST(r.out.back() == "pipeline: interrupted");
    BOOST_TEST(r.err.empty(), r.err);
}
