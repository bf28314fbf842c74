// SPDX-License-Identifier: MIT
// The network examples (examples/09_echo_server to 12_http_hello), run for
// real: echo_server, echo_server_streams, chat_server, http_hello and
// echo_client as child processes on 127.0.0.1, on every backend. Each server
// is started with --exit-after, so it must also end on its own, cleanly, or
// stopped by a real SIGTERM or SIGINT (graceful drain, abort past it, a second
// signal), and --idle-timeout ending silent connections, even a flood of
// them that uses every fd the server may open. http_hello's own behaviour is
// in test_http_hello.cpp.
#include <boost/test/unit_test.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/process.hpp"
#include "support/tcp_echo.hpp"
#include "support/text_match.hpp"

using namespace std::chrono_literals;

namespace net_examples_test {

// Starts an example server on the backend under test and reads its port
// from the first stdout line, which also names that backend.
struct Server {
    reactor_test::Child child;
    std::uint16_t port = 0;

    Server(const std::string& name, reactor::Backend backend, std::vector<std::string> args)
        : child(reactor_test::example_path(name), with_backend(std::move(args), backend)) {
        port = read_first_line(child, name, std::string(reactor::to_string(backend)));
    }

    static std::vector<std::string> with_backend(std::vector<std::string> args, reactor::Backend backend) {
        args.insert(args.end(), {"--port", "0", "--backend", std::string(reactor::to_string(backend))});
        return args;
    }

    // "listening on 127.0.0.1:PORT (BACKEND)": checks BACKEND, returns PORT.
    static std::uint16_t read_first_line(reactor_test::Child& child, const std::string& name, const std::string& backend) {
        auto first = child.read_line(10s);
        BOOST_REQUIRE_MESSAGE(first.has_value(), name << " printed nothing");
        const auto m = reactor_test::full_match_groups(*first, R"(listening on 127\.0\.0\.1:(\d+) \((\w+)\))");
        BOOST_REQUIRE_MESSAGE(m.has_value(), name << ": first line: " << *first);
        BOOST_TEST((*m)[2] == backend, name);
        return static_cast<std::uint16_t>(std::stoi((*m)[1]));
    }
};

// Reads one complete HTTP response (head, plus a Content-Length body unless
// it answers HEAD) from a blocking socket; "" if the peer closes or the read
// times out first. Bytes after it stay in `leftover` (pipelining).
std::string read_response(int fd, std::string& leftover, bool has_body = true) {
    char buf[4096];
    for (;;) {
        auto head_end = leftover.find("\r\n\r\n");
        if (head_end != std::string::npos) {
            std::string head = leftover.substr(0, head_end);
            std::size_t length = 0;
            if (has_body) {
                if (const auto m = reactor_test::partial_match_groups(head, "Content-Length: (\\d+)"))
                    length = std::stoul((*m)[1]);
            }
            if (leftover.size() >= head_end + 4 + length) {
                std::string response = leftover.substr(0, head_end + 4 + length);
                leftover.erase(0, head_end + 4 + length);
                return response;
            }
        }
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return "";
        leftover.append(buf, static_cast<std::size_t>(n));
    }
}

// ---- shutdown on signals ----

// Proves a connection is still served: one exchange, in the server's protocol.
bool served(const std::string& name, int fd) {
    if (name == "http_hello") {
        std::string leftover;
        return reactor_test::send_all(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") &&
               read_response(fd, leftover).ends_with("Hello, world!");
    }
    const std::string ping = "still there?\n";
    return reactor_test::send_all(fd, ping) && reactor_test::recv_exactly(fd, ping.size()) == ping;
}

// The servers served() speaks to; chat_server has its own case.
const std::vector<std::string> kAnswering{"echo_server", "echo_server_streams", "http_hello"};
const std::vector<std::string> kAll{"echo_server", "echo_server_streams", "http_hello", "chat_server"};

// A connection the server has surely accepted (it answered, or greeted).
int accepted_connection(const std::string& name, std::uint16_t port) {
    int fd = reactor_test::connect_blocking(port);
    BOOST_REQUIRE(fd >= 0);
    if (name == "chat_server")
        BOOST_REQUIRE(reactor_test::recv_line(fd).starts_with("* you are #"));
    else
        BOOST_REQUIRE_MESSAGE(served(name, fd), name);
    return fd;
}

// True once the server has closed or reset `fd`; false if it stays open
// (recv timed out: connect_blocking sets a receive timeout).
bool ended_by_server(int fd) {
    char buf[4096];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) continue;  // what was on its way before the end
        if (n < 0 && errno == EINTR) continue;
        return n == 0 || errno != EAGAIN;
    }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The line a server prints on the first signal, e.g. "echo_server: SIGTERM:
// stopped accepting; draining 1 connection(s) for up to 30s".
void expect_drain_line(Server& server, const std::string& name, const std::string& signal, int open) {
    auto line = server.child.read_line(10s);
    BOOST_REQUIRE_MESSAGE(line.has_value(), name << " said nothing on " << signal);
    BOOST_TEST(line->starts_with(name + ": " + signal + ": stopped accepting; draining " + std::to_string(open) + " "),
               *line);
}

// After the last line: the summary, exit 0, nothing on stderr.
std::string expect_summary_and_exit_0(Server& server, const std::string& name) {
    std::string rest = server.child.read_all(30s);
    BOOST_TEST(server.child.wait(10s) == 0, name);
    BOOST_TEST((rest.starts_with(name + ": ") || rest.find("\n" + name + ": ") != std::string::npos), rest);
    BOOST_TEST(rest.ends_with("\n"), rest);
    BOOST_TEST(server.child.read_stderr(1s) == "", name);
    return rest;
}

}  // namespace net_examples_test

using namespace net_examples_test;

BOOST_AUTO_TEST_CASE(echo_server_binary_returns_every_byte_in_order) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // 20 verified clients in this process, plus the echo_client example with
    // 10 more: the server stops accepting after those 30 and then exits.
    Server server("echo_server", backend, {"--exit-after", "30", "--max-seconds", "60"});
    reactor::Scheduler sched(reactor_test::on(backend));
    const std::string pool = reactor_test::random_bytes(1 << 16, 9);
    std::vector<std::unique_ptr<reactor_test::LoadClient>> clients;
    for (int i = 0; i < 20; ++i)
        clients.push_back(std::make_unique<reactor_test::LoadClient>(sched, server.port, 77 + i, 200, pool, 2048));
    reactor_test::Child load(reactor_test::example_path("echo_client"),
                            {"--port", std::to_string(server.port), "--connections", "10", "--messages", "300",
                             "--size", "1000", "--window", "3", "--backend", std::string(reactor::to_string(backend))});
    sched.run();
    for (auto& c : clients) {
        BOOST_TEST(c->failure == "");
        BOOST_TEST(c->completed == 200);
    }
    BOOST_TEST(sched.empty());
    std::string load_out = load.read_all(30s);
    BOOST_TEST(load.wait(30s) == 0, load_out);
    BOOST_TEST(load_out.find(": OK (0 failed)") != std::string::npos, load_out);
    std::string rest = server.child.read_all(30s);
    BOOST_TEST(server.child.wait(10s) == 0);
    BOOST_TEST(rest.find("echo_server: 30 connections") != std::string::npos, rest);
}

// The first line names the address and the backend the loop really runs.
// Started without --backend, a server runs epoll on Linux: with select it
// would stop accepting near a thousand clients.
BOOST_AUTO_TEST_CASE(servers_name_their_backend_on_the_first_line_and_default_to_epoll) {
#ifdef __linux__
    const std::string by_default = "epoll";
#else
    const std::string by_default = "poll";
#endif
    const std::string chosen(reactor::to_string(reactor_test::backend_under_test()));
    for (const char* name : {"echo_server", "echo_server_streams", "chat_server"}) {
        for (const std::string& backend : {chosen, std::string()}) {
            std::vector<std::string> args{"--port", "0", "--exit-after", "1", "--max-seconds", "60"};
            if (!backend.empty()) args.insert(args.end(), {"--backend", backend});
            reactor_test::Child child(reactor_test::example_path(name), args);
            const std::uint16_t port = Server::read_first_line(child, name, backend.empty() ? by_default : backend);
            int fd = reactor_test::connect_blocking(port);  // the one client --exit-after waits for
            BOOST_TEST(fd >= 0, name);
            ::close(fd);
            child.read_all(10s);
            BOOST_TEST(child.wait(10s) == 0, name << " --backend '" << backend << "'");
        }
    }
}

BOOST_AUTO_TEST_CASE(echo_server_binary_half_close) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Server server("echo_server", backend, {"--exit-after", "1"});
    int fd = reactor_test::connect_blocking(server.port);
    BOOST_REQUIRE(fd >= 0);
    const std::string payload = reactor_test::random_bytes(300000, 1);
    BOOST_TEST(reactor_test::send_all(fd, payload));
    ::shutdown(fd, SHUT_WR);  // the server echoes the rest, then closes
    BOOST_TEST((reactor_test::recv_all(fd) == payload));
    ::close(fd);
    server.child.read_all(10s);
    BOOST_TEST(server.child.wait(10s) == 0);
}

BOOST_AUTO_TEST_CASE(echo_server_streams_binary_echoes_like_echo_server) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Server server("echo_server_streams", backend, {"--exit-after", "11", "--max-seconds", "60"});
    reactor_test::Child load(reactor_test::example_path("echo_client"),
                            {"--port", std::to_string(server.port), "--connections", "10", "--messages", "300",
                             "--size", "3000", "--window", "2", "--backend", std::string(reactor::to_string(backend))});
    std::string load_out = load.read_all(30s);
    BOOST_TEST(load.wait(30s) == 0, load_out);
    BOOST_TEST(load_out.find(": OK (0 failed)") != std::string::npos, load_out);
    // The eleventh client half-closes: everything comes back, then EOF.
    int fd = reactor_test::connect_blocking(server.port);
    const std::string payload = reactor_test::random_bytes(200000, 2);
    BOOST_TEST(reactor_test::send_all(fd, payload));
    ::shutdown(fd, SHUT_WR);
    BOOST_TEST((reactor_test::recv_all(fd) == payload));
    ::close(fd);
    std::string rest = server.child.read_all(30s);
    BOOST_TEST(server.child.wait(10s) == 0);
    BOOST_TEST(rest.find("echo_server_streams: 11 connections") != std::string::npos, rest);
}

BOOST_AUTO_TEST_CASE(chat_server_broadcasts_lines_to_the_others) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Server server("chat_server", backend, {"--exit-after", "2"});
    int a = reactor_test::connect_blocking(server.port);
    const auto line = reactor_test::recv_line;
    BOOST_TEST(line(a) == "* you are #1; 0 other(s) here");
    int b = reactor_test::connect_blocking(server.port);
    BOOST_TEST(line(b) == "* you are #2; 1 other(s) here");
    BOOST_TEST(line(a) == "* #2 joined");
    reactor_test::send_all(b, "hello there\r\nsplit ");
    reactor_test::send_all(b, "line\n");
    BOOST_TEST(line(a) == "#2: hello there");
    BOOST_TEST(line(a) == "#2: split line");
    reactor_test::send_all(a, "hi b\n");
    BOOST_TEST(line(b) == "#1: hi b");
    ::close(b);
    BOOST_TEST(line(a) == "* #2 left");
    ::close(a);
    server.child.read_all(10s);
    BOOST_TEST(server.child.wait(10s) == 0);
}

BOOST_AUTO_TEST_CASE(examples_explain_themselves_and_refuse_bad_options) {
    for (const char* name : {"echo_server", "echo_server_streams", "chat_server", "http_hello", "echo_client"}) {
        reactor_test::Child help(reactor_test::example_path(name), {"--help"});
        std::string usage = help.read_all(10s);
        BOOST_TEST(help.wait(10s) == 0);
        BOOST_TEST(usage.find("--backend") != std::string::npos, name);
        reactor_test::Child bad(reactor_test::example_path(name), {"--backend", "kqueue"});
        BOOST_TEST(bad.wait(10s) == 2, name);
    }
    for (const char* name : {"echo_server", "echo_server_streams", "chat_server", "http_hello"}) {
        reactor_test::Child help(reactor_test::example_path(name), {"--help"});
        std::string usage = help.read_all(10s);
        help.wait(10s);
        BOOST_TEST(usage.find("--exit-after") != std::string::npos, name);
        BOOST_TEST(usage.find("--max-seconds") != std::string::npos, name);
        BOOST_TEST(usage.find("--drain-seconds") != std::string::npos, name);
    }
}

BOOST_AUTO_TEST_CASE(servers_refuse_a_negative_or_non_finite_max_seconds) {
    // The old hand-written parser took "-1" and "nan" (a server that never
    // stops, or stops at once): now each is refused, naming the option,
    // before anything listens.
    for (const char* name : {"echo_server", "echo_server_streams", "chat_server", "http_hello"}) {
        for (const char* value : {"-1", "nan", "inf", "-inf", "soon", ""}) {
            reactor_test::Child bad(reactor_test::example_path(name), {"--port", "0", "--max-seconds", value});
            std::string err = bad.read_stderr(10s);
            BOOST_TEST(bad.wait(10s) == 2, name << " --max-seconds '" << value << "'");
            BOOST_TEST(err.find(std::string(name) + ": --max-seconds: must be a number of seconds, 0 or more") == 0u,
                       name << ": " << err);
            BOOST_TEST(bad.read_all(1s).empty(), name);  // never listened
        }
        for (const std::vector<std::string>& args : {std::vector<std::string>{"--exit-after", "-1"},
                                                      std::vector<std::string>{"--drain-seconds", "-1"},
                                                      std::vector<std::string>{"--drain-seconds", "nan"},
                                                      std::vector<std::string>{"--port", "65536"},
                                                      std::vector<std::string>{"--host", "not-an-address"}}) {
            reactor_test::Child bad(reactor_test::example_path(name), args);
            std::string err = bad.read_stderr(10s);
            BOOST_TEST(bad.wait(10s) == 2, name << " " << args[0]);
            BOOST_TEST(err.starts_with(std::string(name) + ": " + args[0]), err);  // names the option
        }
    }
}

BOOST_AUTO_TEST_CASE(echo_client_and_the_echo_servers_agree_on_a_default_port) {
    auto default_port = [](const char* name) {
        reactor_test::Child help(reactor_test::example_path(name), {"--help"});
        std::string usage = help.read_all(10s);
        help.wait(10s);
        const auto m = reactor_test::partial_match_groups(usage, R"(--port [^\n]*=(\d+))");
        BOOST_TEST_REQUIRE(m.has_value(), name << ":\n" << usage);
        return std::stoi((*m)[1]);
    };
    BOOST_TEST(default_port("echo_server") == 7000);
    BOOST_TEST(default_port("echo_server_streams") == 7000);
    BOOST_TEST(default_port("echo_client") == 7000);
}

// SIGTERM: the server stops accepting at once, yet a connection already open
// is served (a request sent after the signal is answered) until its client
// closes it; then the server exits 0, well before the drain time.
BOOST_AUTO_TEST_CASE(sigterm_stops_accepting_and_serves_open_connections_until_they_close) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    for (const std::string& name : kAnswering) {
        Server server(name, backend, {"--drain-seconds", "30", "--max-seconds", "60"});
        int fd = accepted_connection(name, server.port);
        const auto signalled = std::chrono::steady_clock::now();
        BOOST_REQUIRE(::kill(server.child.pid(), SIGTERM) == 0);
        expect_drain_line(server, name, "SIGTERM", 1);
        int late = reactor_test::connect_blocking(server.port);
        BOOST_TEST(late < 0, name << ": accepted a client after SIGTERM");
        if (late >= 0) ::close(late);
        BOOST_TEST(served(name, fd), name << ": an open connection was not served during the drain");
        BOOST_TEST(served(name, fd), name);
        ::close(fd);
        std::string summary = expect_summary_and_exit_0(server, name);
        BOOST_TEST(summary.find(": 1 connections") != std::string::npos, summary);
        BOOST_TEST(seconds_since(signalled) < 25, name << ": waited for the drain time");
    }
}

BOOST_AUTO_TEST_CASE(chat_server_lets_members_talk_during_the_drain) {
    Server server("chat_server", reactor_test::backend_under_test(), {"--drain-seconds", "30", "--max-seconds", "60"});
    int a = accepted_connection("chat_server", server.port);
    int b = accepted_connection("chat_server", server.port);
    BOOST_TEST(reactor_test::recv_line(a) == "* #2 joined");
    BOOST_REQUIRE(::kill(server.child.pid(), SIGTERM) == 0);
    expect_drain_line(server, "chat_server", "SIGTERM", 2);
    reactor_test::send_all(b, "bye all\n");
    BOOST_TEST(reactor_test::recv_line(a) == "#2: bye all");
    ::close(b);
    BOOST_TEST(reactor_test::recv_line(a) == "* #2 left");
    ::close(a);
    BOOST_TEST(expect_summary_and_exit_0(server, "chat_server").find("chat_server: 2 connections, 0 aborted") !=
               std::string::npos);
}

// A connection still open when the drain time has passed is aborted; the
// server then exits 0 with its summary. Never before the drain time: the
// loop's timers never fire early.
BOOST_AUTO_TEST_CASE(a_connection_idle_past_the_drain_is_aborted) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    for (const std::string& name : kAll) {
        Server server(name, backend, {"--drain-seconds", "0.3", "--max-seconds", "60"});
        int fd = accepted_connection(name, server.port);
        const auto signalled = std::chrono::steady_clock::now();
        BOOST_REQUIRE(::kill(server.child.pid(), SIGTERM) == 0);
        expect_drain_line(server, name, "SIGTERM", 1);
        BOOST_TEST(ended_by_server(fd), name << ": still open after the drain");
        BOOST_TEST(seconds_since(signalled) >= 0.3, name << ": aborted before the drain time");
        ::close(fd);
        std::string summary = expect_summary_and_exit_0(server, name);
        if (name != "echo_server_streams") BOOST_TEST(summary.find(", 1 aborted") != std::string::npos, summary);
    }
}

// A second signal during the drain aborts what is open at once: the server
// exits long before its drain time.
BOOST_AUTO_TEST_CASE(a_second_sigint_during_the_drain_exits_at_once) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    for (const std::string& name : kAll) {
        Server server(name, backend, {"--drain-seconds", "120", "--max-seconds", "300"});
        int fd = accepted_connection(name, server.port);
        const auto signalled = std::chrono::steady_clock::now();
        BOOST_REQUIRE(::kill(server.child.pid(), SIGINT) == 0);
        expect_drain_line(server, name, "SIGINT", 1);
        BOOST_REQUIRE(::kill(server.child.pid(), SIGINT) == 0);
        auto again = server.child.read_line(10s);
        BOOST_TEST(again.value_or("") == name + ": SIGINT again: aborting 1 " +
                                             (name == "echo_server_streams" ? "client(s)" : "connection(s)"));
        BOOST_TEST(ended_by_server(fd), name);
        ::close(fd);
        std::string summary = expect_summary_and_exit_0(server, name);
        if (name != "echo_server_streams") BOOST_TEST(summary.find(", 1 aborted") != std::string::npos, summary);
        BOOST_TEST(seconds_since(signalled) < 60, name << ": waited for the drain time");
    }
}

// A signal with nothing open: the drain has nothing to wait for.
BOOST_AUTO_TEST_CASE(sigterm_with_no_client_exits_at_once) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    for (const std::string& name : kAll) {
        Server server(name, backend, {"--drain-seconds", "120", "--max-seconds", "300"});
        BOOST_REQUIRE(::kill(server.child.pid(), SIGTERM) == 0);
        expect_drain_line(server, name, "SIGTERM", 0);
        BOOST_TEST(expect_summary_and_exit_0(server, name).find(": 0 connections") != std::string::npos, name);
    }
}

// A client that sends a lot, reads nothing (so the session waits in drain())
// and then resets: echo_server_streams counts it, and no error goes
// unretrieved (nothing on stderr).
BOOST_AUTO_TEST_CASE(echo_server_streams_counts_a_client_that_resets_during_drain) {
    Server server("echo_server_streams", reactor_test::backend_under_test(),
                  {"--exit-after", "1", "--max-seconds", "60"});
    int fd = reactor_test::connect_blocking(server.port);
    BOOST_REQUIRE(fd >= 0);
    // Send until the server stops reading (its echoes fill both socket
    // buffers, drain() waits, reading pauses): no progress for a while.
    const std::string chunk(1 << 16, 'x');
    std::size_t sent = 0;
    for (;;) {
        pollfd p{fd, POLLOUT, 0};
        if (::poll(&p, 1, 300) <= 0) break;
        ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) sent += static_cast<std::size_t>(n);
        BOOST_REQUIRE_MESSAGE(sent < (std::size_t{1} << 30), "the server never stopped reading");
    }
    BOOST_TEST(sent > 0u);
    linger reset{1, 0};  // close() sends RST
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::close(fd);
    std::string rest = server.child.read_all(30s);
    BOOST_TEST(server.child.wait(10s) == 0);
    BOOST_TEST(rest.find("echo_server_streams: 1 connections, ") == 0u, rest);
    BOOST_TEST(rest.find(", 1 reset by the client") != std::string::npos, rest);
    BOOST_TEST(server.child.read_stderr(1s) == "");  // no "exception was never retrieved"
}

// echo_client on Ctrl-C: its summary, marked interrupted, and exit 130. The
// test plays a server that accepts and never answers, so only the signal can
// end the run; the accept proves the client's handler is installed.
BOOST_AUTO_TEST_CASE(echo_client_on_ctrl_c_prints_its_summary_marked_interrupted) {
    reactor_test::SilentListener server;
    reactor_test::Child client(reactor_test::example_path("echo_client"),
                               {"--port", std::to_string(server.port), "--connections", "1", "--max-seconds", "60",
                                "--backend", std::string(reactor::to_string(reactor_test::backend_under_test()))});
    pollfd p{server.fd, POLLIN, 0};
    BOOST_REQUIRE(::poll(&p, 1, 10000) == 1);
    int silent = ::accept(server.fd, nullptr, nullptr);
    BOOST_REQUIRE(silent >= 0);
    BOOST_REQUIRE(::kill(client.pid(), SIGINT) == 0);
    std::string out = client.read_all(20s);
    BOOST_TEST(client.wait(10s) == 130);
    BOOST_TEST(out.starts_with("echo_client: 1 connections x "), out);
    BOOST_TEST(out.find(": FAILED (") != std::string::npos, out);
    BOOST_TEST(out.find(" failed, interrupted)") != std::string::npos, out);
    ::close(silent);
}

// ---- --idle-timeout ----

namespace net_examples_test {

const std::vector<std::string> kIdleTimeoutServers{"echo_server", "echo_server_streams", "chat_server"};

// True once the server has ended `fd` (reset, or EOF after what it had sent)
// within `limit`, without ever sending anything ourselves.
bool ended_within(int fd, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buf[4096];
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd p{fd, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
        ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
    }
}

// The one-line proof that a fresh client is served within `limit`.
bool fresh_client_served(const std::string& name, std::uint16_t port, std::chrono::milliseconds limit) {
    int fd = reactor_test::connect_blocking(port);
    if (fd < 0) return false;
    timeval tv{static_cast<time_t>(limit.count() / 1000), 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    bool ok = name == "chat_server" ? reactor_test::recv_line(fd).starts_with("* you are #") : served(name, fd);
    ::close(fd);
    return ok;
}

}  // namespace net_examples_test

// A connection that sends nothing is closed once --idle-timeout has passed,
// never before; echo_server_streams counts it as "timed out" (not as a reset).
BOOST_AUTO_TEST_CASE(idle_timeout_closes_a_silent_connection) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    for (const std::string& name : kIdleTimeoutServers) {
        Server server(name, backend, {"--idle-timeout", "1", "--exit-after", "2", "--max-seconds", "60"});
        const auto start = std::chrono::steady_clock::now();  // before the accept: the server's clock starts later
        int fd = reactor_test::connect_blocking(server.port);
        BOOST_REQUIRE(fd >= 0);
        BOOST_TEST(ended_within(fd, 15s), name << ": a silent connection still open after 15 s");
        BOOST_TEST(seconds_since(start) >= 1.0, name << ": closed before its idle timeout");
        ::close(fd);
        BOOST_TEST(fresh_client_served(name, server.port, 10s), name);
        std::string summary = server.child.read_all(30s);
        BOOST_TEST(server.child.wait(10s) == 0, name);
        if (name == "echo_server_streams")
            BOOST_TEST(summary.find(", 0 reset by the client, 1 timed out, 0 failed") != std::string::npos, summary);
    }
}

// A client that sends and never reads its echoes makes no progress either:
// once its output is stuck for --idle-timeout, the connection is ended.
BOOST_AUTO_TEST_CASE(idle_timeout_ends_a_client_that_never_reads) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    for (const std::string& name : {std::string("echo_server"), std::string("echo_server_streams")}) {
        Server server(name, backend, {"--idle-timeout", "1", "--exit-after", "1", "--max-seconds", "60"});
        int fd = reactor_test::connect_blocking(server.port);
        BOOST_REQUIRE(fd >= 0);
        const std::string chunk(1 << 16, 'x');
        std::size_t sent = 0;
        for (;;) {  // until the server stops reading: no progress for 300 ms
            pollfd p{fd, POLLOUT, 0};
            if (::poll(&p, 1, 300) <= 0) break;
            ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n <= 0) break;
            sent += static_cast<std::size_t>(n);
            BOOST_REQUIRE_MESSAGE(sent < (std::size_t{1} << 30), name << ": the server never stopped reading");
        }
        // Ended (aborted: a reset) without our reading a byte, which would be progress.
        pollfd p{fd, 0, 0};  // POLLHUP and POLLERR are always reported
        BOOST_TEST(::poll(&p, 1, 15000) == 1, name << ": still open 15 s after it stopped reading");
        ::close(fd);
        std::string summary = server.child.read_all(30s);
        BOOST_TEST(server.child.wait(10s) == 0, name);
        if (name == "echo_server_streams") BOOST_TEST(summary.find(", 1 timed out, ") != std::string::npos, summary);
    }
}

// The denial of service the option closes: a server allowed 64 fds, and 80
// clients that connect and say nothing. They take every connection the
// server allows (--max-connections' default, half of so small an fd limit:
// the rest are closed at once); each is closed after --idle-timeout, so a
// normal client, which is closed at once too while they hold the server and
// then tries again, is served within seconds, not never.
BOOST_AUTO_TEST_CASE(a_normal_client_is_served_behind_a_flood_of_silent_ones) {
#if defined(__SANITIZE_ADDRESS__)
    // UBSan's vptr check probes memory through a pipe, which needs a free fd:
    // in a server that has used every fd it may open (this case's point), it
    // reports every virtual call as "invalid vptr" and stops the server.
    BOOST_TEST_MESSAGE("skipped under the sanitizers: a process out of fds breaks UBSan's vptr check");
    return;
#endif
    const reactor::Backend backend = reactor_test::backend_under_test();
    for (const std::string& name : kIdleTimeoutServers) {
        // `ulimit -n 64` in a shell that then becomes the server.
        std::vector<std::string> args{"-c", "ulimit -n 64 && exec \"$0\" \"$@\"", reactor_test::example_path(name),
                                      "--port", "0", "--backend", std::string(reactor::to_string(backend)),
                                      "--idle-timeout", "1", "--max-seconds", "60"};
        reactor_test::Child child("/bin/sh", args);
        const std::uint16_t port = Server::read_first_line(child, name, std::string(reactor::to_string(backend)));
        std::vector<int> silent;
        for (int i = 0; i < 80; ++i) {
            int fd = reactor_test::connect_blocking(port);  // completes in the backlog even when not accepted
            BOOST_REQUIRE(fd >= 0);
            silent.push_back(fd);
        }
        const auto start = std::chrono::steady_clock::now();
        bool ok = false;
        while (!ok && seconds_since(start) < 20.0) {
            ok = fresh_client_served(name, port, 20s);
            if (!ok) std::this_thread::sleep_for(100ms);  // closed at once: the server is full; try again
        }
        BOOST_TEST(ok, name << ": a normal client was not served");
        BOOST_TEST(seconds_since(start) < 20.0, name);
        for (int fd : silent) ::close(fd);
        BOOST_REQUIRE(::kill(child.pid(), SIGTERM) == 0);
        std::string out = child.read_all(30s);
        std::string err = child.read_stderr(5s);
        BOOST_TEST(child.wait(10s) == 0, name << ": " << out << err);
    }
}

BOOST_AUTO_TEST_CASE(idle_timeout_refuses_bad_values) {
    for (const std::string& name : kIdleTimeoutServers) {
        for (const char* value : {"-1", "nan", "soon"}) {
            reactor_test::Child bad(reactor_test::example_path(name), {"--port", "0", "--idle-timeout", value});
            std::string err = bad.read_stderr(10s);
            BOOST_TEST(bad.wait(10s) == 2, name << " --idle-timeout " << value);
            BOOST_TEST(err.starts_with(name + ": --idle-timeout"), err);
        }
    }
}
