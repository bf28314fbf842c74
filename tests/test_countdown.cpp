// SPDX-License-Identifier: MIT
// The countdown demo (examples/03_countdown). Its logic, countdown.hpp, runs
// in-process on virtual time (reactor/testing/, docs/testing.md): the whole
// 20 s program in a few milliseconds, every line asserted with the virtual
// time it came at, its echo server answering a real TCP client on 127.0.0.1
// meanwhile. The built program itself is run only for what only it does:
// --help, refusing bad options, Ctrl-C, and a one-line countdown.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <reactor/net/address.hpp>
#include <reactor/testing/virtual_loop.hpp>

#include "../examples/03_countdown/countdown.hpp"
#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/net_util.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;

namespace {

using Lines = std::vector<std::string>;

// The demo on virtual time, its lines stamped with the virtual time they
// were said at ("2500 echo: ..."): the stamps are exact, so the test is too.
struct VirtualCountdown {
    explicit VirtualCountdown(countdown::Settings settings)
        : loop(reactor_test::backend_under_test()),
          demo(loop.sched, settings, [this](std::string_view line) { said(line); }, [this] { loop.sched.stop(); }) {}

    void said(std::string_view line) {
        lines.push_back(fmt::format("{} {}", loop.clock.elapsed() / 1ms, line));
        if (on_line) on_line(line);
    }

    reactor::testing::VirtualLoop loop;
    Lines lines;
    std::function<void(std::string_view)> on_line;
    countdown::Countdown demo;
};

// A TCP client of the echo server, run by the same loop: it sends, then reads
// with read_wait until `want` has arrived, then calls `then`.
struct EchoClient {
    explicit EchoClient(reactor::Scheduler& s) : sched(s) {}
    reactor::Scheduler& sched;
    int fd = -1;
    std::string got;

    void expect(std::string want, std::function<void()> then) {
        sched.read_wait(fd, [this, want = std::move(want), then = std::move(then)]() mutable {
            char buf[256];
            ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n > 0) got.append(buf, static_cast<std::size_t>(n));
            if (got.size() >= want.size() || n == 0) {
                BOOST_TEST(got == want);
                return then();
            }
            expect(std::move(want), std::move(then));
        });
    }
};

}  // namespace

// The whole program in virtual time: "Down n" every 4 s, "Up i" every 1 s,
// equal deadlines in the order they were scheduled ("Down 5" was scheduled
// before "Up 4"), and the echo exchange between "Up 2" and "Up 3". While the
// client's bytes are in flight a TimeHold keeps virtual time still, so its
// lines come at 2.5 s and 3.5 s on every run.
BOOST_AUTO_TEST_CASE(the_twenty_second_demo_runs_in_virtual_time_line_by_line) {
    VirtualCountdown v({.from = 6, .speed = 1, .port = 0});
    auto& sched = v.loop.sched;
    EchoClient client(sched);
    reactor::testing::TimeHold hold;
    std::string me;  // the client's address, as the server names it
    v.on_line = [&](std::string_view line) {
        if (line.ends_with(" disconnected")) hold.release();  // the exchange is over
    };
    sched.call_at(reactor::testing::VirtualClock::kStart + 2500ms, [&] {
        hold = v.loop.hold_time();
        client.fd = reactor_test::connect_blocking(v.demo.port());
        BOOST_REQUIRE(client.fd >= 0);
        // "spl" then "it\n": without this, Nagle keeps "it\n" back until the
        // server's delayed ACK of "spl" (the hold would wait for it, for real).
        int one = 1;
        BOOST_REQUIRE(::setsockopt(client.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
        me = reactor::Address::local_of(client.fd).to_string();
        BOOST_REQUIRE(reactor_test::send_all(client.fd, "hello\nworld\r\n"));
        client.expect("Got: hello\nGot: world\n", [&] {
            // Half a line: no answer until the rest comes, a second later.
            BOOST_REQUIRE(reactor_test::send_all(client.fd, "spl"));
            hold.release();
        });
    });
    sched.call_at(reactor::testing::VirtualClock::kStart + 3500ms, [&] {
        hold = v.loop.hold_time();
        BOOST_REQUIRE(reactor_test::send_all(client.fd, "it\n"));
        client.expect("Got: hello\nGot: world\nGot: split\n", [&] { ::close(client.fd); });
    });
    v.demo.start();
    sched.run();

    Lines expected{fmt::format("0 listening on 127.0.0.1:{}", v.demo.port()), "0 Down 6", "0 Up 0", "1000 Up 1",
                   "2000 Up 2", fmt::format("2500 echo: connection from {}", me),
                   fmt::format("2500 echo: {} sent 'hello'", me), fmt::format("2500 echo: {} sent 'world'", me),
                   "3000 Up 3", fmt::format("3500 echo: {} sent 'split'", me),
                   fmt::format("3500 echo: {} disconnected", me)};
    for (int down = 5, up = 4; down >= 1; --down) {
        expected.push_back(fmt::format("{} Down {}", (6 - down) * 4000, down));
        for (int i = 0; i < 4 && down > 1; ++i, ++up) expected.push_back(fmt::format("{} Up {}", up * 1000, up));
    }
    expected.push_back("20000 countdown finished; closing the echo server");
    BOOST_TEST(v.lines == expected, boost::test_tools::per_element());
    BOOST_TEST((v.loop.clock.elapsed() == 20s));
    CHECK_EMPTY(sched);
}

// --speed divides every delay, exactly; --from sets the length.
BOOST_AUTO_TEST_CASE(speed_and_from_scale_the_schedule_exactly) {
    VirtualCountdown v({.from = 2, .speed = 4, .port = 0});
    v.demo.start();
    v.loop.sched.run();
    BOOST_TEST(v.lines == (Lines{fmt::format("0 listening on 127.0.0.1:{}", v.demo.port()), "0 Down 2", "0 Up 0",
                                 "250 Up 1", "500 Up 2", "750 Up 3", "1000 Down 1",
                                 "1000 countdown finished; closing the echo server"}),
               boost::test_tools::per_element());
    CHECK_EMPTY(v.loop.sched);
}

BOOST_AUTO_TEST_CASE(bad_settings_and_a_taken_port_are_refused_clearly) {
    reactor::testing::VirtualLoop loop(reactor_test::backend_under_test());
    auto make = [&](countdown::Settings s) { countdown::Countdown demo(loop.sched, s, [](std::string_view) {}, nullptr); };
    auto says = [](const std::string& text) {
        return [text](const std::exception& e) { return std::string(e.what()) == text; };
    };
    BOOST_CHECK_EXCEPTION(make({.from = 0}), std::invalid_argument, says("from must be 1 or more, not 0"));
    BOOST_CHECK_EXCEPTION(make({.speed = 0}), std::invalid_argument, says("speed must be finite and > 0, not 0"));
    BOOST_CHECK_EXCEPTION(make({.speed = NAN}), std::invalid_argument, says("speed must be finite and > 0, not nan"));
    countdown::Countdown first(loop.sched, {}, [](std::string_view) {}, nullptr);
    BOOST_CHECK_EXCEPTION(
        make({.port = first.port()}), std::runtime_error,
        says(fmt::format("cannot listen on 127.0.0.1:{}: Address already in use", first.port())));
}

// ---- the program itself: quick runs only ----

BOOST_AUTO_TEST_CASE(the_program_counts_down_from_one_and_exits_zero) {
    const std::string backend(reactor::to_string(reactor_test::backend_under_test()));
    reactor_test::Run r = reactor_test::run_example("countdown", {"--from", "1", "--backend", backend});
    BOOST_TEST(r.code == 0);
    BOOST_REQUIRE(r.out.size() == 3u);
    BOOST_TEST(r.out[0].starts_with("listening on 127.0.0.1:"));
    BOOST_TEST(r.out[1] == "Down 1");
    BOOST_TEST(r.out[2] == "countdown finished; closing the echo server");
    BOOST_TEST(r.err == "");
}

BOOST_AUTO_TEST_CASE(help_explains_the_options_and_exits_zero) {
    reactor_test::Child child(reactor_test::example_path("countdown"), {"--help"});
    std::string out = child.read_all(5s);
    BOOST_TEST(child.wait(5s) == 0);
    for (const char* word : {"--port", "--from", "--speed", "--backend", "Down", "Up", "Got:"})
        BOOST_TEST(out.find(word) != std::string::npos, word);
}

BOOST_AUTO_TEST_CASE(bad_options_are_rejected_clearly) {
    for (const std::vector<std::string>& args : {std::vector<std::string>{"--speed", "fast"}, {"--speed", "nan"},
                                                  {"--from", "0"}, {"--port", "70000"}, {"--backend", "kqueue"}}) {
        reactor_test::Child child(reactor_test::example_path("countdown"), args);
        std::string err = child.read_stderr(5s);
        BOOST_TEST(child.wait(5s) == 2, args[0]);
        BOOST_TEST(err.find("countdown: " + args[0]) == 0u, err);  // names the option
        BOOST_TEST(child.read_all(1s).empty(), args[0]);  // nothing started
    }
}

BOOST_AUTO_TEST_CASE(ctrl_c_stops_the_countdown_with_one_line_and_exit_130) {
    reactor_test::Run r = reactor_test::interrupt_after_first_line("countdown", {"--port", "0"});
    BOOST_TEST(r.code == 130);
    BOOST_REQUIRE(!r.out.empty());
    BOOST_TEST(r.out.front().starts_with("listening on 127.0.0.1:"));
    BOOST_TEST(r.out.back() == "countdown: interrupted");
    BOOST_TEST(r.err == "");
}
