// Runs the real countdown example (examples/03_countdown) at high speed and
// talks to its echo server over TCP on 127.0.0.1.
#define BOOST_TEST_MODULE countdown
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <regex>
#include <string>
#include <vector>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;

namespace {

std::vector<std::string> lines_matching(const std::string& text, const std::regex& re) {
    std::vector<std::string> out;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) out.push_back(it->str());
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(counts_down_counts_up_and_echoes_over_tcp) {
    // --speed 20: the 20 s program takes about 1 s.
    const std::string backend(reactor::to_string(reactor_test::backend_under_test()));
    testsupport::Child child(testsupport::example_path("countdown"),
                             {"--port", "0", "--speed", "20", "--backend", backend});
    auto first = child.read_line(5s);
    BOOST_REQUIRE(first);
    std::smatch m;
    BOOST_REQUIRE_MESSAGE(std::regex_match(*first, m, std::regex(R"(listening on 127\.0\.0\.1:(\d+))")), *first);
    int fd = nettest::connect_blocking(static_cast<std::uint16_t>(std::stoi(m[1])));
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(nettest::send_all(fd, "hello\nworld\r\n"));
    BOOST_TEST(nettest::recv_line(fd) == "Got: hello");
    BOOST_TEST(nettest::recv_line(fd) == "Got: world");
    // A message split across two writes is answered once it is complete.
    BOOST_REQUIRE(nettest::send_all(fd, "spl"));
    ::usleep(10'000);
    BOOST_REQUIRE(nettest::send_all(fd, "it\n"));
    BOOST_TEST(nettest::recv_line(fd) == "Got: split");
    ::close(fd);

    std::string out = *first + "\n" + child.read_all(10s);
    BOOST_TEST(child.wait(5s) == 0);

    auto downs = lines_matching(out, std::regex(R"(Down \d+)"));
    BOOST_TEST(downs == (std::vector<std::string>{"Down 6", "Down 5", "Down 4", "Down 3", "Down 2", "Down 1"}),
               boost::test_tools::per_element());
    // The two timer chains drift against each other on a loaded machine, so
    // how many "Up" lines fit before "Down 1" stops the loop is not fixed:
    // assert the bounds and the order, never the exact count.
    auto ups = lines_matching(out, std::regex(R"(Up \d+)"));
    BOOST_TEST_REQUIRE(ups.size() >= 1u);
    BOOST_TEST(ups.size() <= 20u);  // the countup stops itself after "Up 19"
    for (std::size_t i = 0; i < ups.size(); ++i) BOOST_TEST(ups[i] == "Up " + std::to_string(i));
    // Concurrency, not sequence: counting up starts before the countdown's
    // second step ("Down 6" and "Up 0" are both scheduled before the loop runs).
    BOOST_TEST(out.find("Down 6") < out.find("Up 0"));
    BOOST_TEST(out.find("Up 0") < out.find("Down 5"));
    BOOST_TEST(out.find("echo: 127.0.0.1:") != std::string::npos);
    BOOST_TEST(out.find("Down 1") < out.find("countdown finished"));
}

BOOST_AUTO_TEST_CASE(help_explains_the_options_and_exits_zero) {
    testsupport::Child child(testsupport::example_path("countdown"), {"--help"});
    std::string out = child.read_all(5s);
    BOOST_TEST(child.wait(5s) == 0);
    for (const char* word : {"--port", "--from", "--speed", "--backend", "Down", "Up", "Got:"})
        BOOST_TEST(out.find(word) != std::string::npos, word);
}

BOOST_AUTO_TEST_CASE(bad_options_are_rejected_clearly) {
    for (const std::vector<std::string>& args : {std::vector<std::string>{"--speed", "fast"}, {"--speed", "nan"},
                                                  {"--from", "0"}, {"--port", "70000"}, {"--backend", "kqueue"}}) {
        testsupport::Child child(testsupport::example_path("countdown"), args);
        std::string err = child.read_stderr(5s);
        BOOST_TEST(child.wait(5s) == 2, args[0]);
        BOOST_TEST(err.find("countdown: " + args[0]) == 0u, err);  // names the option
        BOOST_TEST(child.read_all(1s).empty(), args[0]);  // nothing started
    }
}

BOOST_AUTO_TEST_CASE(ctrl_c_stops_the_countdown_with_one_line_and_exit_130) {
    testsupport::Run r = testsupport::interrupt_after_first_line("countdown", {"--port", "0"});
    BOOST_TEST(r.code == 130);
    BOOST_REQUIRE(!r.out.empty());
    BOOST_TEST(r.out.front().starts_with("listening on 127.0.0.1:"));
    BOOST_TEST(r.out.back() == "countdown: interrupted");
    BOOST_TEST(r.err == "");
}
