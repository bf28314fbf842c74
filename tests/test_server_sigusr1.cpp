// SPDX-License-Identifier: MIT
// kill -USR1 on every example server (echo_server, echo_server_streams,
// chat_server, http_hello, and http_hello serving HTTPS), run for real on
// 127.0.0.1 with the backend under test: each prints its loop's stats as one
// block of stdout lines (reactor::format_stats, every line prefixed with the
// server's name), keeps serving, and still ends cleanly on SIGTERM.
#include <boost/test/unit_test.hpp>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <filesystem>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/outside_program.hpp"
#include "support/process.hpp"
#include "support/text_match.hpp"

using namespace std::chrono_literals;

namespace {

std::vector<std::string> with_common_args(std::vector<std::string> more) {
    std::vector<std::string> args{"--port", "0", "--max-seconds", "60", "--backend",
                                  std::string(reactor::to_string(reactor_test::backend_under_test()))};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

struct Server {
    reactor_test::Child child;
    std::uint16_t port = 0;

    explicit Server(const std::string& name, std::vector<std::string> more = {})
        : child(reactor_test::example_path(name), with_common_args(std::move(more))) {
        auto first = child.read_line(10s);
        BOOST_REQUIRE_MESSAGE(first.has_value(), name << " printed nothing");
        const auto m = reactor_test::full_match_groups(*first, R"(listening on 127\.0\.0\.1:(\d+) \(\w+\))");
        BOOST_REQUIRE_MESSAGE(m.has_value(), *first);
        port = static_cast<std::uint16_t>(std::stoi((*m)[1]));
    }
};

// One exchange in the server's protocol: the connection is accepted and served.
bool exchange(const std::string& name, int fd) {
    if (name == "chat_server") return reactor_test::recv_line(fd).starts_with("* you are #");
    if (name == "http_hello") {
        if (!reactor_test::send_all(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")) return false;
        std::string got;
        while (got.find("Hello, world!") == std::string::npos) {
            char buf[4096];
            ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) return false;
            got.append(buf, static_cast<std::size_t>(n));
        }
        return true;
    }
    const std::string ping = "ping\n";
    return reactor_test::send_all(fd, ping) && reactor_test::recv_exactly(fd, ping.size()) == ping;
}

struct Snapshot {
    unsigned long iterations = 0, callbacks = 0, readers = 0, signal_handlers = 0, tasks = 0;
};

// Sends SIGUSR1 and reads the block it prints.
Snapshot stats_on_sigusr1(Server& server, const std::string& name) {
    BOOST_REQUIRE(::kill(server.child.pid(), SIGUSR1) == 0);
    std::vector<std::string> block;
    for (int i = 0; i < 4; ++i) {
        auto line = server.child.read_line(10s);
        BOOST_REQUIRE_MESSAGE(line.has_value(), name << " printed no stats on SIGUSR1");
        block.push_back(*line);
    }
    const std::string p = name + R"(: loop)";
    Snapshot s;
    auto m = reactor_test::full_match_groups(
        block[0], p + R"(: (\d+) iterations, (\d+) callbacks run, \d+ timers fired, \d+ fd events, )"
                      R"(\d+ selector waits)");
    BOOST_REQUIRE_MESSAGE(m.has_value(), block[0]);
    s.iterations = std::stoul((*m)[1]);
    s.callbacks = std::stoul((*m)[2]);
    m = reactor_test::full_match_groups(block[1], p + R"( pending: \d+ ready, \d+ timers, (\d+) readers, \d+ )"
                                                      R"(writers, 0 posted, (\d+) signal handlers)");
    BOOST_REQUIRE_MESSAGE(m.has_value(), block[1]);
    s.readers = std::stoul((*m)[1]);
    s.signal_handlers = std::stoul((*m)[2]);
    BOOST_TEST(block[2].starts_with(name + ": loop lag"), block[2]);
    BOOST_TEST(block[3].starts_with(name + ": loop time: "), block[3]);
    // Then the live tasks: a count, and one line per task naming its spawn site.
    auto count_line = server.child.read_line(10s);
    BOOST_REQUIRE(count_line.has_value());
    m = reactor_test::full_match_groups(*count_line, name + R"(: (\d+) live task\(s\))");
    BOOST_REQUIRE_MESSAGE(m.has_value(), *count_line);
    s.tasks = std::stoul((*m)[1]);
    for (unsigned long i = 0; i < s.tasks; ++i) {
        auto line = server.child.read_line(10s);
        BOOST_REQUIRE(line.has_value());
        BOOST_TEST(line->starts_with(name + ":   task spawned at "), *line);
        BOOST_TEST(line->find("state ") != std::string::npos, *line);
    }
    return s;
}

const std::vector<std::string> kServers{"echo_server", "echo_server_streams", "chat_server", "http_hello"};

}  // namespace

BOOST_AUTO_TEST_CASE(every_server_prints_its_loop_stats_and_carries_on) {
    for (const std::string& name : kServers) {
        BOOST_TEST_CONTEXT(name) {
            Server server(name);
            int fd = reactor_test::connect_blocking(server.port);
            BOOST_REQUIRE(fd >= 0);
            BOOST_REQUIRE(exchange(name, fd));

            const Snapshot first = stats_on_sigusr1(server, name);
            BOOST_TEST(first.readers >= 2u);          // the listener and the client
            BOOST_TEST(first.signal_handlers == 3u);  // SIGINT, SIGTERM, SIGUSR1
            BOOST_TEST(first.callbacks > 0u);
            // The streams server runs a task per client (one is connected);
            // the callback servers run none.
            if (name == "echo_server_streams") {
                BOOST_TEST(first.tasks >= 1u);
            } else {
                BOOST_TEST(first.tasks == 0u);
            }

            // Still serving; the next snapshot has counted on.
            if (name != "chat_server") BOOST_REQUIRE(exchange(name, fd));
            const Snapshot second = stats_on_sigusr1(server, name);
            BOOST_TEST(second.iterations > first.iterations);
            BOOST_TEST(second.callbacks > first.callbacks);

            ::close(fd);
            BOOST_REQUIRE(::kill(server.child.pid(), SIGTERM) == 0);
            server.child.read_all(30s);
            BOOST_TEST(server.child.wait(10s) == 0);
            BOOST_TEST(server.child.read_stderr(1s) == "");
        }
    }
}

// http_hello --tls-cert: the same stats. A plain TCP client that has not
// begun its handshake holds a connection (a reader); a curl request queued
// behind it proves both were accepted, and that the server serves on.
BOOST_AUTO_TEST_CASE(the_https_server_prints_its_loop_stats_and_carries_on, *reactor_test::needs_program("curl")
                     * reactor_test::needs_program("openssl")) {
    const std::string dir = "/tmp/reactor_test_sigusr1_tls." + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const std::string cert = dir + "/cert.pem", key = dir + "/key.pem";
    reactor_test::Child openssl(*reactor_test::find_program("openssl"),
                                {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                 "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost", "-addext",
                                 "subjectAltName=DNS:localhost,IP:127.0.0.1"});
    openssl.close_stdin();
    openssl.read_all(30s);
    BOOST_REQUIRE(openssl.wait(30s) == 0);
    auto curl_k = [](std::uint16_t port) {
        reactor_test::Child c(*reactor_test::find_program("curl"),
                              {"-sS", "-k", "--noproxy", "*", "--max-time", "20",
                               "https://127.0.0.1:" + std::to_string(port) + "/"});
        c.close_stdin();
        std::string out = c.read_all(25s);
        return c.wait(10s) == 0 && out == "Hello, world!";
    };
    const std::string name = "http_hello";
    Server server(name, {"--tls-cert", cert, "--tls-key", key});
    int fd = reactor_test::connect_blocking(server.port);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(curl_k(server.port));
    const Snapshot first = stats_on_sigusr1(server, name);
    BOOST_TEST(first.readers >= 2u);  // the listener and the client that has not said a word
    BOOST_TEST(first.signal_handlers == 3u);
    BOOST_TEST(first.tasks == 0u);
    BOOST_REQUIRE(curl_k(server.port));
    const Snapshot second = stats_on_sigusr1(server, name);
    BOOST_TEST(second.iterations > first.iterations);
    BOOST_TEST(second.callbacks > first.callbacks);
    ::close(fd);
    BOOST_REQUIRE(::kill(server.child.pid(), SIGTERM) == 0);
    server.child.read_all(30s);
    BOOST_TEST(server.child.wait(10s) == 0);
    BOOST_TEST(server.child.read_stderr(1s) == "");
    std::filesystem::remove_all(dir);
}
