// SPDX-License-Identifier: MIT
// chat_server --loops 2, for real: the server runs as a child process on
// 127.0.0.1 (port 0), each of its loops on the backend under test, with real
// clients over loopback. Clients are spread over both loops (least
// connections: connected one after the other, they alternate), and a line
// from a client on one loop reaches the clients of both, in order per
// sender: 5 senders x 10,000 numbered lines, each receiver checking every
// sender's numbers come one after the other with none missing. SIGUSR1 prints
// a line per loop; SIGINT and SIGTERM end every loop cleanly (drain, a second
// signal aborts), as do the end of the console's input, --exit-after and
// --max-seconds; --loops 1 is the one-loop server, line for line.
//
// Nothing here depends on how fast the server runs: every wait is for a line
// or an end, bounded by a generous timeout, and no client is dropped for
// reading slowly (--max-backlog is set far above what a test sends).
#include <boost/test/unit_test.hpp>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <map>
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
// Far above what any case sends to one client: nobody is dropped as too slow
// however the machine schedules the test's reads.
const std::string kNoSlowDrop = std::to_string(1 << 30);

// chat_server with `args` on the backend under test, on a free port, ended by
// --max-seconds at the latest, dropping nobody as too slow unless `args` say.
reactor_test::Child start(std::vector<std::string> args) {
    args.insert(args.end(), {"--port", "0", "--backend", kBackend});
    if (std::find(args.begin(), args.end(), "--max-backlog") == args.end())
        args.insert(args.end(), {"--max-backlog", kNoSlowDrop});
    if (std::find(args.begin(), args.end(), "--max-seconds") == args.end())
        args.insert(args.end(), {"--max-seconds", "120"});
    return reactor_test::Child(reactor_test::example_path("chat_server"), args);
}

// "listening on 127.0.0.1:PORT (BACKEND)", then, with several loops, the
// line naming how many: returns PORT.
std::uint16_t port_of(reactor_test::Child& server, std::size_t loops) {
    auto first = server.read_line(20s);
    if (!first) BOOST_FAIL("chat_server printed nothing: " << server.read_stderr(1s));
    const auto m = reactor_test::full_match_groups(*first, R"(listening on 127\.0\.0\.1:(\d+) \((\w+)\))");
    BOOST_REQUIRE_MESSAGE(m.has_value(), *first);
    BOOST_TEST((*m)[2] == kBackend);
    if (loops > 1)
        BOOST_TEST(server.read_line(20s).value_or("<none>") ==
                   fmt::format("chat_server: {} loops, clients spread by least connections", loops));
    return static_cast<std::uint16_t>(std::stoi((*m)[1]));
}

void expect_line(reactor_test::Child& server, const std::string& expected) {
    BOOST_TEST(server.read_line(20s).value_or("<none>") == expected);
}

// One chat client: a socket, and what it has heard of the room.
struct Client {
    int fd = -1;
    std::uint64_t id = 0;
    // Clients it knows are here: those its greeting counted, and each
    // "* #N joined" after it (a join on another loop may come after the
    // greeting; it is then announced, never both).
    long known = 0;

    Client() = default;
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;
    Client(Client&& o) noexcept : fd(std::exchange(o.fd, -1)), id(o.id), known(o.known) {}
    ~Client() { close(); }
    void close() {
        if (fd >= 0) ::close(std::exchange(fd, -1));
    }
};

// Connects and reads the greeting "* you are #ID; N other(s) here".
Client join(std::uint16_t port) {
    Client c;
    c.fd = reactor_test::connect_blocking(port);
    BOOST_REQUIRE(c.fd >= 0);
    const std::string greeting = reactor_test::recv_line(c.fd);
    const auto m = reactor_test::full_match_groups(greeting, R"(\* you are #(\d+); (\d+) other\(s\) here)");
    BOOST_REQUIRE_MESSAGE(m.has_value(), greeting);
    c.id = std::stoull((*m)[1]);
    c.known = std::stol((*m)[2]);
    return c;
}

// `n` clients, connected one after the other, each greeted before the next
// connects: least connections hands them to loops 0, 1, 0, 1... and each
// loop numbers its own (loop i of 2: i+1, i+3, ...), so client k is #k+1.
std::vector<Client> join_all(std::uint16_t port, std::size_t n) {
    std::vector<Client> clients;
    for (std::size_t k = 0; k < n; ++k) {
        clients.push_back(join(port));
        BOOST_TEST(clients.back().id == k + 1);
    }
    return clients;
}

// Reads lines until `c` knows all `others`: the joins it was not greeted with.
void wait_for_joins(Client& c, long others) {
    while (c.known < others) {
        const std::string line = reactor_test::recv_line(c.fd);
        BOOST_REQUIRE_MESSAGE(reactor_test::full_match(line, R"(\* #\d+ joined)"), "#" << c.id << ": " << line);
        ++c.known;
    }
    BOOST_TEST(c.known == others);
}

// SIGUSR1: one line per loop. Returns each loop's "N client(s), N line(s)
// heard, N from other loops" part.
std::vector<std::string> loop_lines(reactor_test::Child& server, std::size_t loops) {
    BOOST_REQUIRE(::kill(server.pid(), SIGUSR1) == 0);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < loops; ++i) {
        const std::string line = server.read_line(20s).value_or("<none>");
        const auto m = reactor_test::full_match_groups(
            line, fmt::format(R"(chat_server: loop {}: (\d+ client\(s\), \d+ line\(s\) heard, )"
                              R"(\d+ from other loops), \d+ post\(s\) out; \d+ iterations, \d+ )"
                              R"(callbacks run, \d+ fd events, \d+ posts taken, \d+ wake-up )"
                              R"(writes)",
                              i));
        BOOST_REQUIRE_MESSAGE(m.has_value(), line);
        out.push_back((*m)[1]);
    }
    return out;
}

// The rest of stdout once the server has ended: its summary, "chat_server:
// <total>", then per loop "chat_server: loop I: <loops[I]>, N posts to other
// loops" (how many posts depends on how the lines were batched).
void expect_summary(reactor_test::Child& server, const std::string& total, const std::vector<std::string>& loops) {
    const std::vector<std::string> lines = reactor_test::lines_of(server.read_all(30s));
    BOOST_REQUIRE_EQUAL(lines.size(), loops.size() + 1);
    BOOST_TEST(lines[0] == "chat_server: " + total);
    for (std::size_t i = 0; i < loops.size(); ++i) {
        const std::string line = fmt::format(R"(chat_server: loop {}: {}, \d+ posts to other loops)", i, loops[i]);
        BOOST_TEST(reactor_test::full_match(lines[i + 1], line), lines[i + 1]);
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(lines_joins_and_leaves_reach_the_clients_of_both_loops) {
    reactor_test::Child server = start({"--loops", "2", "--exit-after", "4"});
    const std::uint16_t port = port_of(server, 2);
    std::vector<Client> clients = join_all(port, 4);  // #1, #3 on loop 0; #2, #4 on loop 1
    for (Client& c : clients) wait_for_joins(c, 3);
    BOOST_TEST(loop_lines(server, 2) ==
               (std::vector<std::string>{"2 client(s), 0 line(s) heard, 0 from other loops",
                                         "2 client(s), 0 line(s) heard, 0 from other loops"}));
    // Each client speaks in turn; every other client hears it, on either loop.
    for (Client& speaker : clients) {
        reactor_test::send_all(speaker.fd, fmt::format("hello from #{}\r\n", speaker.id));
        for (Client& c : clients)
            if (&c != &speaker) BOOST_TEST(reactor_test::recv_line(c.fd) == fmt::format("#{}: hello from #{}", speaker.id, speaker.id));
    }
    BOOST_TEST(loop_lines(server, 2) ==
               (std::vector<std::string>{"2 client(s), 2 line(s) heard, 2 from other loops",
                                         "2 client(s), 2 line(s) heard, 2 from other loops"}));
    // #2 (loop 1) leaves: the clients of loop 0 and loop 1 are told.
    clients[1].close();
    for (std::size_t k : {0u, 2u, 3u}) BOOST_TEST(reactor_test::recv_line(clients[k].fd) == "* #2 left");
    // --exit-after 4: once the others have gone, the server ends on its own.
    for (Client& c : clients) c.close();
    expect_summary(server, "4 connections, 0 aborted", {"2 connections, 2 lines heard", "2 connections, 2 lines heard"});
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_TEST(server.read_stderr(1s) == "");
}

// A client dropped on one loop (a line longer than --max-line) is announced
// on the other, and said so on stderr.
BOOST_AUTO_TEST_CASE(a_drop_on_one_loop_is_announced_on_the_other) {
    reactor_test::Child server = start({"--loops", "2", "--exit-after", "2", "--max-line", "10"});
    std::vector<Client> clients = join_all(port_of(server, 2), 2);  // #1 on loop 0, #2 on loop 1
    wait_for_joins(clients[0], 1);
    wait_for_joins(clients[1], 1);
    reactor_test::send_all(clients[1].fd, "short\n" + std::string(11, 'x') + "\n");
    BOOST_TEST(reactor_test::recv_line(clients[0].fd) == "#2: short");
    BOOST_TEST(reactor_test::recv_line(clients[0].fd) == "* #2 dropped: line too long");
    clients[0].close();
    expect_summary(server, "2 connections, 0 aborted", {"1 connections, 0 lines heard", "1 connections, 1 lines heard"});
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_TEST(server.read_stderr(1s) == "chat_server: dropping #2: line too long\n");
}

// A client on loop 1 that reads nothing while #1 on loop 0 talks: once its
// backlog passes --max-backlog it is dropped, and #1 is told across loops.
// #1 talks until it hears so (the kernel's socket buffers take megabytes
// first), bounded in bytes and time.
BOOST_AUTO_TEST_CASE(a_client_too_slow_on_one_loop_is_dropped_and_the_other_loop_told) {
    reactor_test::Child server = start({"--loops", "2", "--exit-after", "2", "--max-backlog", "4096"});
    std::vector<Client> clients = join_all(port_of(server, 2), 2);  // #1 on loop 0, #2 on loop 1
    wait_for_joins(clients[0], 1);
    std::string chunk;
    while (chunk.size() < 64 * 1024) chunk += std::string(1000, 'x') + "\n";
    std::string heard;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (std::size_t sent = 0; sent < (std::size_t{512} << 20) && std::chrono::steady_clock::now() < deadline;
         sent += chunk.size()) {
        BOOST_REQUIRE(reactor_test::send_all(clients[0].fd, chunk));
        pollfd p{clients[0].fd, POLLIN, 0};
        if (::poll(&p, 1, 0) > 0) {
            heard = reactor_test::recv_line(clients[0].fd);
            break;
        }
    }
    BOOST_TEST(heard == "* #2 dropped: too slow");
    clients[0].close();
    clients[1].close();
    server.read_all(30s);
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_TEST(server.read_stderr(1s) == "chat_server: dropping #2: too slow\n");
}

namespace {

// The receiving side of one client in the big exchange: every sender's last
// number, and the first thing that was out of order.
struct Heard {
    std::map<std::uint64_t, long> last;  // sender id -> last number heard
    long lines = 0;
    std::string first_error;
};

// One "#SENDER: NUMBER" line (or a stray one) for `c`.
void hear(const Client& c, Heard& heard, const std::string& line) {
    const auto m = reactor_test::full_match_groups(line, R"(#(\d+): (\d+))");
    if (!m) {
        if (heard.first_error.empty()) heard.first_error = fmt::format("#{} heard \"{}\"", c.id, line);
        return;
    }
    const std::uint64_t sender = std::stoull((*m)[1]);
    const long number = std::stol((*m)[2]);
    long& last = heard.last[sender];
    if (number != last + 1 && heard.first_error.empty())
        heard.first_error = fmt::format("#{} heard #{}'s line {} after line {}", c.id, sender, number, last);
    last = number;
    ++heard.lines;
}

}  // namespace

// 5 senders x 10,000 lines, all at once: every receiver hears every other
// sender's lines 1..10000 in order, whichever loop either is on. One thread
// drives every client with poll(): it writes what the server takes and reads
// what it sends, so neither side waits for the other.
BOOST_AUTO_TEST_CASE(fifty_thousand_lines_keep_their_order_per_sender_across_loops) {
    constexpr std::size_t kClients = 5;
    constexpr long kLinesEach = 10'000;
    reactor_test::Child server = start({"--loops", "2", "--exit-after", std::to_string(kClients)});
    const std::uint16_t port = port_of(server, 2);
    std::vector<Client> clients = join_all(port, kClients);  // #1, #3, #5 on loop 0; #2, #4 on loop 1
    for (Client& c : clients) wait_for_joins(c, kClients - 1);
    BOOST_TEST(loop_lines(server, 2) ==
               (std::vector<std::string>{"3 client(s), 0 line(s) heard, 0 from other loops",
                                         "2 client(s), 0 line(s) heard, 0 from other loops"}));

    std::vector<std::string> out(kClients), in(kClients);
    std::vector<std::size_t> sent(kClients, 0);
    std::vector<Heard> heard(kClients);
    for (std::size_t k = 0; k < kClients; ++k) {
        for (long n = 1; n <= kLinesEach; ++n) out[k] += std::to_string(n) + "\n";
        BOOST_REQUIRE(::fcntl(clients[k].fd, F_SETFL, ::fcntl(clients[k].fd, F_GETFL) | O_NONBLOCK) == 0);
    }
    const long expected = kLinesEach * static_cast<long>(kClients - 1);
    auto all_heard = [&] {
        for (const Heard& h : heard)
            if (h.lines < expected) return false;
        return true;
    };
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while (!all_heard() && std::chrono::steady_clock::now() < deadline) {
        std::vector<pollfd> fds;
        for (std::size_t k = 0; k < kClients; ++k)
            fds.push_back({clients[k].fd, static_cast<short>(POLLIN | (sent[k] < out[k].size() ? POLLOUT : 0)), 0});
        const int ready = ::poll(fds.data(), fds.size(), 1000);
        BOOST_REQUIRE(ready >= 0 || errno == EINTR);
        for (std::size_t k = 0; k < kClients; ++k) {
            if (fds[k].revents & POLLOUT) {
                const ssize_t n = ::send(clients[k].fd, out[k].data() + sent[k], out[k].size() - sent[k], MSG_NOSIGNAL);
                BOOST_REQUIRE_MESSAGE(n > 0 || errno == EAGAIN || errno == EINTR, "send: " << errno);
                if (n > 0) sent[k] += static_cast<std::size_t>(n);
            }
            if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
                char buf[65536];
                const ssize_t n = ::recv(clients[k].fd, buf, sizeof buf, 0);
                BOOST_REQUIRE_MESSAGE(n != 0, "#" << clients[k].id << ": the server closed the connection");
                BOOST_REQUIRE_MESSAGE(n > 0 || errno == EAGAIN || errno == EINTR, "recv: " << errno);
                if (n < 0) continue;
                in[k].append(buf, static_cast<std::size_t>(n));
                std::size_t begin = 0;
                for (std::size_t nl; (nl = in[k].find('\n', begin)) != std::string::npos; begin = nl + 1)
                    hear(clients[k], heard[k], in[k].substr(begin, nl - begin));
                in[k].erase(0, begin);
            }
        }
    }
    for (std::size_t k = 0; k < kClients; ++k) {
        BOOST_TEST_CONTEXT("client #" << clients[k].id) {
            BOOST_TEST(heard[k].first_error == "");
            BOOST_TEST(heard[k].lines == expected);
            BOOST_TEST(heard[k].last.size() == kClients - 1);
            for (const auto& [sender, last] : heard[k].last) BOOST_TEST(last == kLinesEach, "from #" << sender);
            BOOST_TEST(in[k] == "");
        }
    }
    // Every line heard by its sender's loop, and posted to the other one.
    BOOST_TEST(loop_lines(server, 2) ==
               (std::vector<std::string>{"3 client(s), 30000 line(s) heard, 20000 from other loops",
                                         "2 client(s), 20000 line(s) heard, 30000 from other loops"}));
    for (Client& c : clients) c.close();
    expect_summary(server, "5 connections, 0 aborted",
                   {"3 connections, 30000 lines heard", "2 connections, 20000 lines heard"});
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_TEST(server.read_stderr(1s) == "");
}

// Ctrl-C once: every loop stops accepting and drains, the clients of both
// loops still talk; Ctrl-C again: the clients of both loops are aborted, and
// the server exits 0 with its summary.
BOOST_AUTO_TEST_CASE(ctrl_c_drains_every_loop_and_a_second_aborts_them) {
    reactor_test::Child server = start({"--loops", "2", "--drain-seconds", "60"});
    std::vector<Client> clients = join_all(port_of(server, 2), 2);  // #1 on loop 0, #2 on loop 1
    wait_for_joins(clients[0], 1);
    wait_for_joins(clients[1], 1);
    ::kill(server.pid(), SIGINT);
    expect_line(server, "chat_server: SIGINT: stopped accepting; draining 2 connection(s) for up to 60s");
    reactor_test::send_all(clients[1].fd, "still here\n");
    BOOST_TEST(reactor_test::recv_line(clients[0].fd) == "#2: still here");
    ::kill(server.pid(), SIGINT);
    expect_line(server, "chat_server: SIGINT again: aborting 2 connection(s)");
    for (Client& c : clients) BOOST_TEST(reactor_test::recv_all(c.fd) == "");  // ended, by the server
    expect_summary(server, "2 connections, 2 aborted", {"1 connections, 0 lines heard", "1 connections, 1 lines heard"});
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_TEST(server.read_stderr(1s) == "");
}

// SIGTERM, and the clients leave by themselves during the drain: nobody is
// aborted. With no client at all, the server ends at once.
BOOST_AUTO_TEST_CASE(sigterm_ends_once_the_clients_of_every_loop_have_left) {
    {
        reactor_test::Child server = start({"--loops", "2", "--drain-seconds", "60"});
        std::vector<Client> clients = join_all(port_of(server, 2), 3);
        ::kill(server.pid(), SIGTERM);
        expect_line(server, "chat_server: SIGTERM: stopped accepting; draining 3 connection(s) for up to 60s");
        for (Client& c : clients) c.close();
        expect_summary(server, "3 connections, 0 aborted", {"2 connections, 0 lines heard", "1 connections, 0 lines heard"});
        BOOST_TEST(server.wait(10s) == 0);
        BOOST_TEST(server.read_stderr(1s) == "");
    }
    {
        reactor_test::Child server = start({"--loops", "2"});
        port_of(server, 2);
        ::kill(server.pid(), SIGTERM);
        expect_line(server, "chat_server: SIGTERM: stopped accepting; draining 0 connection(s) for up to 5s");
        expect_summary(server, "0 connections, 0 aborted", {"0 connections, 0 lines heard", "0 connections, 0 lines heard"});
        BOOST_TEST(server.wait(10s) == 0);
        BOOST_TEST(server.read_stderr(1s) == "");
    }
}

// The drain time runs out: what is left on every loop is aborted.
BOOST_AUTO_TEST_CASE(the_end_of_the_drain_aborts_the_clients_of_every_loop) {
    reactor_test::Child server = start({"--loops", "2", "--drain-seconds", "0.1"});
    std::vector<Client> clients = join_all(port_of(server, 2), 2);
    ::kill(server.pid(), SIGTERM);
    expect_line(server, "chat_server: SIGTERM: stopped accepting; draining 2 connection(s) for up to 0.1s");
    for (Client& c : clients) reactor_test::recv_all(c.fd);  // until the server ends it
    expect_summary(server, "2 connections, 2 aborted", {"1 connections, 0 lines heard", "1 connections, 0 lines heard"});
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_TEST(server.read_stderr(1s) == "");
}

// --max-seconds ends a server whose clients never leave. However late the
// clients got in, the server ends on its own and cleanly.
BOOST_AUTO_TEST_CASE(max_seconds_ends_every_loop) {
    reactor_test::Child server = start({"--loops", "2", "--max-seconds", "1"});
    const std::uint16_t port = port_of(server, 2);
    std::vector<int> fds;
    for (int k = 0; k < 2; ++k) fds.push_back(reactor_test::connect_blocking(port));  // refused once it has ended
    for (int fd : fds)
        if (fd >= 0) reactor_test::recv_all(fd);
    const std::vector<std::string> lines = reactor_test::lines_of(server.read_all(30s));
    BOOST_REQUIRE_EQUAL(lines.size(), 3u);
    BOOST_TEST(reactor_test::full_match(lines[0], R"(chat_server: \d connections, \d aborted)"), lines[0]);
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_TEST(server.read_stderr(1s) == "");
    for (int fd : fds)
        if (fd >= 0) ::close(fd);
}

// --console with two loops: what is typed reaches the clients of both; the
// end of input drains the server as SIGTERM does.
BOOST_AUTO_TEST_CASE(console_lines_reach_both_loops_and_its_end_drains_them) {
    reactor_test::Child server = start({"--loops", "2", "--console", "--drain-seconds", "60"});
    std::vector<Client> clients = join_all(port_of(server, 2), 2);
    wait_for_joins(clients[0], 1);
    wait_for_joins(clients[1], 1);
    server.write_stdin("hello, both loops\n");
    for (Client& c : clients) BOOST_TEST(reactor_test::recv_line(c.fd) == "* server: hello, both loops");
    server.close_stdin();
    expect_line(server, "chat_server: console: end of input: stopped accepting; draining 2 connection(s) for up to 60s");
    for (Client& c : clients) c.close();
    expect_summary(server, "2 connections, 0 aborted", {"1 connections, 0 lines heard", "1 connections, 0 lines heard"});
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_TEST(server.read_stderr(1s) == "");
}

// --loops 1 is the server without loop groups: no line about loops, the
// one-loop summary, the one-loop SIGUSR1 block.
BOOST_AUTO_TEST_CASE(one_loop_is_the_server_as_it_was) {
    reactor_test::Child server = start({"--loops", "1", "--exit-after", "2"});
    const std::uint16_t port = port_of(server, 1);
    Client a = join(port);
    Client b = join(port);
    BOOST_TEST(a.known == 0);
    BOOST_TEST(b.known == 1);  // one loop: its greeting counts everybody
    BOOST_TEST(reactor_test::recv_line(a.fd) == "* #2 joined");
    ::kill(server.pid(), SIGUSR1);
    BOOST_TEST(server.read_line(20s).value_or("<none>").starts_with("chat_server: loop: "));
    a.close();
    b.close();
    const std::string rest = server.read_all(30s);
    BOOST_TEST(rest.ends_with("\nchat_server: 2 connections, 0 aborted\n"), rest);
    BOOST_TEST(rest.find("chat_server: loop 0") == std::string::npos, rest);
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_TEST(server.read_stderr(1s) == "");
}

// --loops 0: one loop per CPU this process may use (the child inherits this
// process's affinity).
BOOST_AUTO_TEST_CASE(zero_loops_is_one_per_cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    BOOST_REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
    const auto cpus = static_cast<std::size_t>(CPU_COUNT(&set));
    reactor_test::Child server = start({"--loops", "0"});
    port_of(server, cpus);
    ::kill(server.pid(), SIGTERM);
    expect_line(server, "chat_server: SIGTERM: stopped accepting; draining 0 connection(s) for up to 5s");
    const std::vector<std::string> rest = reactor_test::lines_of(server.read_all(30s));
    BOOST_TEST(rest.size() == (cpus > 1 ? cpus + 1 : 1));
    BOOST_TEST(server.wait(10s) == 0);
}

BOOST_AUTO_TEST_CASE(help_names_the_loops_option) {
    reactor_test::Child help(reactor_test::example_path("chat_server"), {"--help"});
    const std::string usage = help.read_all(10s);
    BOOST_TEST(help.wait(10s) == 0);
    BOOST_TEST(usage.find("--loops") != std::string::npos, usage);
    reactor_test::Child bad(reactor_test::example_path("chat_server"), {"--loops", "-1"});
    BOOST_TEST(bad.wait(10s) == 2);
}
