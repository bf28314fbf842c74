// SPDX-License-Identifier: MIT
// chat_server --console, for real: the server runs as a child process on
// 127.0.0.1 (port 0) on the backend under test, its stdin a pipe this test
// writes to (or a file, /dev/null, a directory), with real clients over
// loopback. Lines typed on the console reach every client as
// "* server: <line>"; the end of input shuts the server down as SIGTERM does
// (drain, a second signal aborts, summary, exit 0); a stdin the console cannot
// stream is refused before anything listens; without --console, stdin is
// never touched.
#include <boost/test/unit_test.hpp>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/process.hpp"
#include "support/text_match.hpp"

using namespace std::chrono_literals;

namespace {

const std::string kBackend(reactor::to_string(reactor_test::backend_under_test()));

// chat_server on the backend under test, its stdin as `redirection` says
// (sh syntax, e.g. "< /dev/null"; empty: the Child's own stdin pipe).
reactor_test::Child start(std::vector<std::string> args, const std::string& redirection = "") {
    args.insert(args.end(), {"--port", "0", "--backend", kBackend, "--max-seconds", "60"});
    if (redirection.empty()) return reactor_test::Child(reactor_test::example_path("chat_server"), args);
    std::string script = "exec \"$0\"";
    for (const auto& a : args) script += " " + a;
    return reactor_test::Child("/bin/sh", {"-c", script + " " + redirection, reactor_test::example_path("chat_server")});
}

// "listening on 127.0.0.1:PORT (BACKEND)": checks BACKEND, returns PORT.
std::uint16_t port_of(reactor_test::Child& server) {
    auto first = server.read_line(10s);
    if (!first) BOOST_FAIL("chat_server printed nothing: " << server.read_stderr(1s));
    const auto m = reactor_test::full_match_groups(*first, R"(listening on 127\.0\.0\.1:(\d+) \((\w+)\))");
    BOOST_REQUIRE_MESSAGE(m.has_value(), *first);
    BOOST_TEST((*m)[2] == kBackend);
    return static_cast<std::uint16_t>(std::stoi((*m)[1]));
}

// Two clients in the room, greeted; each fd has a receive timeout.
struct TwoClients {
    explicit TwoClients(std::uint16_t port) {
        a = reactor_test::connect_blocking(port);
        BOOST_REQUIRE(a >= 0);
        BOOST_REQUIRE(reactor_test::recv_line(a) == "* you are #1; 0 other(s) here");
        b = reactor_test::connect_blocking(port);
        BOOST_REQUIRE(b >= 0);
        BOOST_REQUIRE(reactor_test::recv_line(b) == "* you are #2; 1 other(s) here");
        BOOST_REQUIRE(reactor_test::recv_line(a) == "* #2 joined");
    }
    ~TwoClients() {
        for (int fd : {a, b})
            if (fd >= 0) ::close(fd);
    }
    void close_both() {
        ::close(std::exchange(a, -1));
        ::close(std::exchange(b, -1));
    }
    int a = -1, b = -1;
};

void expect_line(reactor_test::Child& server, const std::string& expected) {
    BOOST_TEST(server.read_line(20s).value_or("<none>") == expected);
}

// The end of input starts the same drain as SIGTERM, saying why.
std::string end_line(int connections, int drain_seconds) {
    return fmt::format("chat_server: console: end of input: stopped accepting; draining {} connection(s) for up to {}s",
                       connections, drain_seconds);
}

}  // namespace

BOOST_AUTO_TEST_CASE(console_lines_reach_every_client_and_its_end_drains_the_server) {
    reactor_test::Child server = start({"--console", "--drain-seconds", "30"});
    const std::uint16_t port = port_of(server);
    TwoClients clients(port);
    server.write_stdin("hello, room\r\n");
    server.write_stdin("second ");
    server.write_stdin("line\n");
    for (int fd : {clients.a, clients.b}) {
        BOOST_TEST(reactor_test::recv_line(fd) == "* server: hello, room");
        BOOST_TEST(reactor_test::recv_line(fd) == "* server: second line");
    }
    // The clients still talk to each other as before.
    reactor_test::send_all(clients.a, "hi b\n");
    BOOST_TEST(reactor_test::recv_line(clients.b) == "#1: hi b");
    // A last line without '\n', then the end of input.
    server.write_stdin("bye");
    server.close_stdin();
    for (int fd : {clients.a, clients.b}) BOOST_TEST(reactor_test::recv_line(fd) == "* server: bye");
    expect_line(server, end_line(2, 30));
    BOOST_TEST(reactor_test::connect_blocking(port) == -1);  // no longer accepting
    // The drain waits for the clients: they leave, the server exits 0.
    clients.close_both();
    BOOST_TEST(server.read_all(20s) == "chat_server: 2 connections, 0 aborted\n");
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_TEST(server.read_stderr(1s) == "");
}

BOOST_AUTO_TEST_CASE(a_signal_after_the_console_ended_aborts_as_a_second_signal) {
    reactor_test::Child server = start({"--console", "--drain-seconds", "30"});
    TwoClients clients(port_of(server));
    server.close_stdin();
    expect_line(server, end_line(2, 30));
    ::kill(server.pid(), SIGINT);
    expect_line(server, "chat_server: SIGINT again: aborting 2 connection(s)");
    BOOST_TEST(server.read_all(20s) == "chat_server: 2 connections, 2 aborted\n");
    BOOST_TEST(server.wait(10s) == 0);
}

BOOST_AUTO_TEST_CASE(console_lines_longer_than_max_line_are_not_sent) {
    reactor_test::Child server = start({"--console", "--max-line", "10", "--drain-seconds", "0"});
    TwoClients clients(port_of(server));
    // 11 bytes (within the stream's limit, refused by length), 100 bytes
    // (past it: skipped to its end), then one that fits exactly.
    server.write_stdin("0123456789A\n" + std::string(100, 'x') + "\n0123456789\n");
    for (int fd : {clients.a, clients.b}) BOOST_TEST(reactor_test::recv_line(fd) == "* server: 0123456789");
    server.close_stdin();
    expect_line(server, end_line(2, 0));
    server.read_all(20s);
    BOOST_TEST(server.wait(10s) == 0);
    const std::string note = "chat_server: console: a line longer than 10 bytes, not sent\n";
    BOOST_TEST(server.read_stderr(1s) == note + note);
}

BOOST_AUTO_TEST_CASE(console_on_dev_null_ends_at_once) {
    // /dev/null streams on every backend (epoll cannot watch it; the loop
    // counts it always ready): its end of input comes first thing.
    reactor_test::Child server = start({"--console"}, "< /dev/null");
    port_of(server);
    expect_line(server, end_line(0, 5));
    BOOST_TEST(server.read_all(20s) == "chat_server: 0 connections, 0 aborted\n");
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_TEST(server.read_stderr(1s) == "");
}

BOOST_AUTO_TEST_CASE(console_refuses_a_stdin_it_cannot_stream_before_listening) {
    char name[] = "/tmp/chat_console_test_XXXXXX";
    const int fd = ::mkstemp(name);
    BOOST_REQUIRE(fd >= 0);
    ::close(fd);
    for (const auto& [redirection, type] : {std::pair<std::string, std::string>{std::string("< ") + name, "a regular file"},
                                            {"< /tmp", "a directory"}}) {
        reactor_test::Child server = start({"--console"}, redirection);
        const std::string err = server.read_stderr(10s);
        BOOST_TEST(server.wait(10s) == 1, redirection);
        BOOST_TEST(err.starts_with("chat_server: --console needs stdin to be a terminal or a pipe: "), err);
        BOOST_TEST(err.find(type) != std::string::npos, err);
        BOOST_TEST(reactor_test::lines_of(err).size() == 1u, err);
        BOOST_TEST(server.read_all(1s) == "", redirection);  // never listened
    }
    ::unlink(name);
}

// The server's stdin is a pipe whose read end this test shares: what the
// server did to it (its flags, its bytes) shows here.
BOOST_AUTO_TEST_CASE(stdin_is_left_alone_without_console_and_given_back_with_it) {
    for (const bool console : {false, true}) {
        int pipe_fds[2];
        BOOST_REQUIRE(::pipe(pipe_fds) == 0);  // inherited: no close-on-exec
        const int reader = pipe_fds[0], writer = pipe_fds[1];
        std::vector<std::string> args{"--exit-after", "1"};
        if (console) args.push_back("--console");
        reactor_test::Child server = start(args, fmt::format("0<&{0} {0}<&- {1}>&-", reader, writer));
        const std::uint16_t port = port_of(server);
        int client = reactor_test::connect_blocking(port);
        BOOST_REQUIRE(client >= 0);
        BOOST_TEST(reactor_test::recv_line(client) == "* you are #1; 0 other(s) here");  // in the room
        BOOST_TEST(::write(writer, "typed\n", 6) == 6);
        if (console) {
            BOOST_TEST(reactor_test::recv_line(client) == "* server: typed");
            // The console's stream made the shared description non-blocking.
            BOOST_TEST((::fcntl(reader, F_GETFL) & O_NONBLOCK) != 0);
        }
        ::close(client);  // --exit-after 1: the server ends with its one client
        server.read_all(20s);
        BOOST_TEST(server.wait(10s) == 0, console);
        // Blocking again, as found; without --console nothing was read.
        BOOST_TEST((::fcntl(reader, F_GETFL) & O_NONBLOCK) == 0, console);
        if (!console) {
            char buf[16] = {};
            BOOST_TEST(::read(reader, buf, sizeof buf) == 6);
            BOOST_TEST(std::string(buf, 6) == "typed\n");
        }
        ::close(reader);
        ::close(writer);
    }
}
