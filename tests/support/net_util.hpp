// SPDX-License-Identifier: MIT
// Test support for the socket tests: drive a Scheduler until a condition holds
// (bounded, so a bug fails the test instead of hanging it), and a few blocking
// raw-socket helpers to play a peer that no reactor code wrote.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <boost/test/unit_test.hpp>

#include <reactor/scheduler.hpp>

namespace reactor_test {

// Runs loop iterations until done() or `timeout`; returns done(). A watchdog
// timer bounds the wait, so run_once() cannot block forever.
template <class Pred>
bool run_until(reactor::Scheduler& sched, Pred done, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    bool expired = false;
    auto watchdog = sched.call_later(timeout, [&] { expired = true; });
    while (!done() && !expired) sched.run_once();
    watchdog.cancel();
    return done();
}

// A blocking IPv4 TCP client socket connected to 127.0.0.1:port, with a
// receive timeout so a broken server fails the test rather than hangs it.
inline int connect_blocking(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

inline bool send_all(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// Reads until EOF, error or timeout.
inline std::string recv_all(int fd) {
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return out;
        out.append(buf, static_cast<std::size_t>(n));
    }
}

// Reads exactly n bytes (fewer on EOF, error or timeout).
inline std::string recv_exactly(int fd, std::size_t n) {
    std::string out;
    char buf[65536];
    while (out.size() < n) {
        ssize_t got = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
}

// Reads one '\n'-terminated line, without the '\n' (nor a '\r' before it);
// what came before EOF, error or timeout otherwise. A byte at a time, so
// nothing after the line is consumed: fine for the short exchanges of tests.
inline std::string recv_line(int fd) {
    std::string line;
    char c;
    for (;;) {
        ssize_t n = ::recv(fd, &c, 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || c == '\n') break;
        line += c;
    }
    if (line.ends_with('\r')) line.pop_back();
    return line;
}

// A listening IPv4 TCP socket on 127.0.0.1 (a port the kernel picks) that
// nothing accepts from: somewhere for a program under test to connect (the
// kernel completes the handshake), which the test may accept from by hand
// (fd) or leave alone. Closed on destruction.
struct SilentListener {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    std::uint16_t port = 0;

    SilentListener() {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        BOOST_REQUIRE(fd >= 0);
        BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        BOOST_REQUIRE(::listen(fd, 16) == 0);
        BOOST_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
        port = ntohs(addr.sin_port);
    }
    ~SilentListener() {
        if (fd >= 0) ::close(fd);
    }
    SilentListener(const SilentListener&) = delete;
    SilentListener& operator=(const SilentListener&) = delete;
};

// A listening socket on 127.0.0.1 whose accept queue is full (backlog 0,
// filled by clients that are never accepted): the kernel drops new SYNs, so
// a connect to `port` hangs, as one to an address that never answers would.
// Tests keep to loopback, so this is how a connect timeout is provoked.
struct FullAcceptQueue {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    std::uint16_t port = 0;
    std::vector<int> fillers;

    FullAcceptQueue() {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        BOOST_REQUIRE(fd >= 0);
        BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        BOOST_REQUIRE(::listen(fd, 0) == 0);  // never accepted from
        BOOST_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
        port = ntohs(addr.sin_port);
        for (int i = 0; i < 3; ++i) {  // backlog 0 holds one
            int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
            fillers.push_back(c);
        }
        // Bounded wait, no fixed sleep: the first filler's handshake is done,
        // so the queue is full and later SYNs, the test's included, are dropped.
        pollfd first{fillers[0], POLLOUT, 0};
        BOOST_REQUIRE(::poll(&first, 1, 5000) == 1);
    }
    ~FullAcceptQueue() {
        for (int c : fillers) ::close(c);
        ::close(fd);
    }
    FullAcceptQueue(const FullAcceptQueue&) = delete;
    FullAcceptQueue& operator=(const FullAcceptQueue&) = delete;
};

// Deterministic pseudo-random bytes (seeded), for payloads that catch reordering.
inline std::string random_bytes(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::string out(n, '\0');
    for (auto& c : out) c = static_cast<char>(rng());
    return out;
}

}  // namespace reactor_test
