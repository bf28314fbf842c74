// The network examples (examples/09_echo_server to 12_http_hello), run for
// real: echo_server, echo_server_streams, chat_server, http_hello and
// echo_client as child processes on 127.0.0.1, on every backend. Each server
// is started with --exit-after, so it must also end on its own, cleanly.
#define BOOST_TEST_MODULE net_examples
#include <boost/test/unit_test.hpp>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/process.hpp"
#include "support/tcp_echo.hpp"

using namespace std::chrono_literals;

namespace net_examples_test {

// Starts an example server on the backend under test and reads its port
// from the first stdout line, which also names that backend.
struct Server {
    testsupport::Child child;
    std::uint16_t port = 0;

    Server(const std::string& name, reactor::Backend backend, std::vector<std::string> args)
        : child(testsupport::example_path(name), with_backend(std::move(args), backend)) {
        port = read_first_line(child, name, std::string(reactor::to_string(backend)));
    }

    static std::vector<std::string> with_backend(std::vector<std::string> args, reactor::Backend backend) {
        args.insert(args.end(), {"--port", "0", "--backend", std::string(reactor::to_string(backend))});
        return args;
    }

    // "listening on 127.0.0.1:PORT (BACKEND)": checks BACKEND, returns PORT.
    static std::uint16_t read_first_line(testsupport::Child& child, const std::string& name, const std::string& backend) {
        auto first = child.read_line(10s);
        BOOST_REQUIRE_MESSAGE(first.has_value(), name << " printed nothing");
        std::smatch m;
        BOOST_REQUIRE_MESSAGE(std::regex_match(*first, m, std::regex(R"(listening on 127\.0\.0\.1:(\d+) \((\w+)\))")),
                              name << ": first line: " << *first);
        BOOST_TEST(m[2].str() == backend, name);
        return static_cast<std::uint16_t>(std::stoi(m[1]));
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
            std::smatch m;
            std::string head = leftover.substr(0, head_end);
            std::size_t length = 0;
            if (has_body && std::regex_search(head, m, std::regex("Content-Length: (\\d+)"))) length = std::stoul(m[1]);
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

}  // namespace net_examples_test

using namespace net_examples_test;

BOOST_AUTO_TEST_CASE(echo_server_binary_returns_every_byte_in_order) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    // 20 verified clients in this process, plus the echo_client example with
    // 10 more: the server stops accepting after those 30 and then exits.
    Server server("echo_server", backend, {"--exit-after", "30", "--max-seconds", "60"});
    reactor::Scheduler::Options opt;
    opt.backend = backend;
    reactor::Scheduler sched(std::move(opt));
    const std::string pool = nettest::random_bytes(1 << 16, 9);
    std::vector<std::unique_ptr<tcp_test::LoadClient>> clients;
    for (int i = 0; i < 20; ++i)
        clients.push_back(std::make_unique<tcp_test::LoadClient>(sched, server.port, 77 + i, 200, pool, 2048));
    testsupport::Child load(testsupport::example_path("echo_client"),
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
            testsupport::Child child(testsupport::example_path(name), args);
            const std::uint16_t port = Server::read_first_line(child, name, backend.empty() ? by_default : backend);
            int fd = nettest::connect_blocking(port);  // the one client --exit-after waits for
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
    int fd = nettest::connect_blocking(server.port);
    BOOST_REQUIRE(fd >= 0);
    const std::string payload = nettest::random_bytes(300000, 1);
    BOOST_TEST(nettest::send_all(fd, payload));
    ::shutdown(fd, SHUT_WR);  // the server echoes the rest, then closes
    BOOST_TEST((nettest::recv_all(fd) == payload));
    ::close(fd);
    server.child.read_all(10s);
    BOOST_TEST(server.child.wait(10s) == 0);
}

BOOST_AUTO_TEST_CASE(echo_server_streams_binary_echoes_like_echo_server) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Server server("echo_server_streams", backend, {"--exit-after", "11", "--max-seconds", "60"});
    testsupport::Child load(testsupport::example_path("echo_client"),
                            {"--port", std::to_string(server.port), "--connections", "10", "--messages", "300",
                             "--size", "3000", "--window", "2", "--backend", std::string(reactor::to_string(backend))});
    std::string load_out = load.read_all(30s);
    BOOST_TEST(load.wait(30s) == 0, load_out);
    BOOST_TEST(load_out.find(": OK (0 failed)") != std::string::npos, load_out);
    // The eleventh client half-closes: everything comes back, then EOF.
    int fd = nettest::connect_blocking(server.port);
    const std::string payload = nettest::random_bytes(200000, 2);
    BOOST_TEST(nettest::send_all(fd, payload));
    ::shutdown(fd, SHUT_WR);
    BOOST_TEST((nettest::recv_all(fd) == payload));
    ::close(fd);
    std::string rest = server.child.read_all(30s);
    BOOST_TEST(server.child.wait(10s) == 0);
    BOOST_TEST(rest.find("echo_server_streams: 11 connections") != std::string::npos, rest);
}

BOOST_AUTO_TEST_CASE(http_hello_answers_a_pipelined_keep_alive_client) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Server server("http_hello", backend, {"--exit-after", "1"});
    int fd = nettest::connect_blocking(server.port);
    BOOST_REQUIRE(fd >= 0);
    // Three requests in one write, then a fourth on the same connection.
    BOOST_TEST(nettest::send_all(fd,
                                 "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
                                 "HEAD /2 HTTP/1.1\r\nHost: x\r\n\r\n"
                                 "POST /3 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"));
    std::string leftover;
    std::string get = read_response(fd, leftover);
    std::string head = read_response(fd, leftover, false);
    std::string post = read_response(fd, leftover);
    BOOST_TEST(get.starts_with("HTTP/1.1 200 OK\r\n"), get);
    BOOST_TEST(get.ends_with("\r\n\r\nHello, world!"), get);
    BOOST_TEST(get.find("Content-Length: 13\r\n") != std::string::npos);
    BOOST_TEST(get.find("Connection: close") == std::string::npos);
    BOOST_TEST(head.starts_with("HTTP/1.1 200 OK\r\n"), head);
    BOOST_TEST(head.ends_with("Content-Length: 13\r\n\r\n"), head);  // HEAD: headers only
    BOOST_TEST(post.ends_with("\r\n\r\nHello, world!"), post);

    BOOST_TEST(nettest::send_all(fd, "GET /4 HTTP/1.1\r\nHost: x\r\n\r\n"));
    BOOST_TEST(read_response(fd, leftover).ends_with("Hello, world!"));

    // A malformed request line on the same connection: 400, then the server closes.
    BOOST_TEST(nettest::send_all(fd, "THIS IS NOT HTTP\r\n\r\n"));
    std::string bad = read_response(fd, leftover);
    BOOST_TEST(bad.starts_with("HTTP/1.1 400 Bad Request\r\n"), bad);
    BOOST_TEST(bad.find("Connection: close\r\n") != std::string::npos);
    BOOST_TEST(nettest::recv_all(fd) == "");  // EOF: closed by the server
    ::close(fd);
    server.child.read_all(10s);
    BOOST_TEST(server.child.wait(10s) == 0);
}

BOOST_AUTO_TEST_CASE(http_hello_rejects_malformed_and_oversized_requests) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Server server("http_hello", backend, {"--exit-after", "6", "--max-head", "1024", "--max-body", "100"});
    auto ask = [&](const std::string& request) {
        int fd = nettest::connect_blocking(server.port);
        nettest::send_all(fd, request);
        std::string reply = nettest::recv_all(fd);  // the server closes after an error
        ::close(fd);
        return reply.substr(0, reply.find("\r\n"));
    };
    BOOST_TEST(ask("GET\r\n\r\n") == "HTTP/1.1 400 Bad Request");
    BOOST_TEST(ask("GET / HTTP/1.1 extra\r\n\r\n") == "HTTP/1.1 400 Bad Request");
    BOOST_TEST(ask("GET / HTTP/2.0\r\n\r\n") == "HTTP/1.1 505 HTTP Version Not Supported");
    BOOST_TEST(ask("GET / HTTP/1.1\r\nX: " + std::string(2000, 'a') + "\r\n\r\n") ==
               "HTTP/1.1 431 Request Header Fields Too Large");
    BOOST_TEST(ask("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n") == "HTTP/1.1 413 Content Too Large");
    BOOST_TEST(ask("GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n") == "HTTP/1.1 400 Bad Request");
    server.child.read_all(10s);
    BOOST_TEST(server.child.wait(10s) == 0);
}

BOOST_AUTO_TEST_CASE(chat_server_broadcasts_lines_to_the_others) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Server server("chat_server", backend, {"--exit-after", "2"});
    int a = nettest::connect_blocking(server.port);
    auto line = [](int fd) {
        std::string s;
        char c;
        while (::recv(fd, &c, 1, 0) == 1 && c != '\n') s += c;
        return s;
    };
    BOOST_TEST(line(a) == "* you are #1; 0 other(s) here");
    int b = nettest::connect_blocking(server.port);
    BOOST_TEST(line(b) == "* you are #2; 1 other(s) here");
    BOOST_TEST(line(a) == "* #2 joined");
    nettest::send_all(b, "hello there\r\nsplit ");
    nettest::send_all(b, "line\n");
    BOOST_TEST(line(a) == "#2: hello there");
    BOOST_TEST(line(a) == "#2: split line");
    nettest::send_all(a, "hi b\n");
    BOOST_TEST(line(b) == "#1: hi b");
    ::close(b);
    BOOST_TEST(line(a) == "* #2 left");
    ::close(a);
    server.child.read_all(10s);
    BOOST_TEST(server.child.wait(10s) == 0);
}

BOOST_AUTO_TEST_CASE(examples_explain_themselves_and_refuse_bad_options) {
    for (const char* name : {"echo_server", "echo_server_streams", "chat_server", "http_hello", "echo_client"}) {
        testsupport::Child help(testsupport::example_path(name), {"--help"});
        std::string usage = help.read_all(10s);
        BOOST_TEST(help.wait(10s) == 0);
        BOOST_TEST(usage.find("--backend") != std::string::npos, name);
        testsupport::Child bad(testsupport::example_path(name), {"--backend", "kqueue"});
        BOOST_TEST(bad.wait(10s) == 2, name);
    }
    for (const char* name : {"echo_server", "echo_server_streams", "chat_server", "http_hello"}) {
        testsupport::Child help(testsupport::example_path(name), {"--help"});
        std::string usage = help.read_all(10s);
        help.wait(10s);
        BOOST_TEST(usage.find("--exit-after") != std::string::npos, name);
        BOOST_TEST(usage.find("--max-seconds") != std::string::npos, name);
    }
}

BOOST_AUTO_TEST_CASE(servers_refuse_a_negative_or_non_finite_max_seconds) {
    // The old hand-written parser took "-1" and "nan" (a server that never
    // stops, or stops at once): now each is refused, naming the option,
    // before anything listens.
    for (const char* name : {"echo_server", "echo_server_streams", "chat_server", "http_hello"}) {
        for (const char* value : {"-1", "nan", "inf", "-inf", "soon", ""}) {
            testsupport::Child bad(testsupport::example_path(name), {"--port", "0", "--max-seconds", value});
            std::string err = bad.read_stderr(10s);
            BOOST_TEST(bad.wait(10s) == 2, name << " --max-seconds '" << value << "'");
            BOOST_TEST(err.find(std::string(name) + ": --max-seconds: must be a number of seconds, 0 or more") == 0u,
                       name << ": " << err);
            BOOST_TEST(bad.read_all(1s).empty(), name);  // never listened
        }
        for (const std::vector<std::string>& args : {std::vector<std::string>{"--exit-after", "-1"},
                                                      std::vector<std::string>{"--port", "65536"},
                                                      std::vector<std::string>{"--host", "not-an-address"}}) {
            testsupport::Child bad(testsupport::example_path(name), args);
            std::string err = bad.read_stderr(10s);
            BOOST_TEST(bad.wait(10s) == 2, name << " " << args[0]);
            BOOST_TEST(err.starts_with(std::string(name) + ": " + args[0]), err);  // names the option
        }
    }
}

BOOST_AUTO_TEST_CASE(echo_client_and_the_echo_servers_agree_on_a_default_port) {
    auto default_port = [](const char* name) {
        testsupport::Child help(testsupport::example_path(name), {"--help"});
        std::string usage = help.read_all(10s);
        help.wait(10s);
        std::smatch m;
        BOOST_TEST_REQUIRE(std::regex_search(usage, m, std::regex(R"(--port [^\n]*=(\d+))")), name << ":\n" << usage);
        return std::stoi(m[1]);
    };
    BOOST_TEST(default_port("echo_server") == 7000);
    BOOST_TEST(default_port("echo_server_streams") == 7000);
    BOOST_TEST(default_port("echo_client") == 7000);
}
