// LineEcho: Beazley's echo server, written with one-shot fd waiters only.
// The component beside countdown.cpp: it answers every line with
// "Got: <line>" on 127.0.0.1. Each wait is one read_wait/write_wait whose
// callback, when done, arms the next one (a generator's "yield
// read_wait(sock)" desugared by hand). Loop thread only.
//
// Ownership: each client is owned by the callback waiting on its fd; when
// none is left (the peer closed, or the loop was torn down) it closes the fd.
// The listening socket belongs to the LineEcho object.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>

namespace countdown {

inline void say(std::string_view line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
}

// Lines longer than this are answered in pieces rather than buffered forever.
inline constexpr std::size_t kMaxLine = 64 * 1024;

// One client of the echo server. Owned by the callbacks waiting on its fd:
// when none is left (the peer closed, or the loop was torn down) it closes.
class EchoClient : public std::enable_shared_from_this<EchoClient> {
public:
    EchoClient(reactor::Scheduler& sched, int fd, std::string peer) : sched_(sched), fd_(fd), peer_(std::move(peer)) {}
    ~EchoClient() { ::close(fd_); }

    void start() { wait_readable(); }

private:
    void wait_readable() {
        sched_.read_wait(fd_, [self = shared_from_this()] { self->on_readable(); });
    }

    void on_readable() {
        char buf[16 * 1024];
        ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return wait_readable();  // spurious readiness
        if (n <= 0) {
            say(fmt::format("echo: {} disconnected{}", peer_, n < 0 ? fmt::format(" ({})", std::strerror(errno)) : ""));
            sched_.remove_writer(fd_);
            return;  // the last reference goes with this callback: the fd is closed
        }
        input_.append(buf, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = input_.find('\n')) != std::string::npos || input_.size() >= kMaxLine;) {
            std::size_t len = nl == std::string::npos ? input_.size() : nl;
            std::string line = input_.substr(0, len);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            input_.erase(0, nl == std::string::npos ? len : len + 1);
            say(fmt::format("echo: {} sent '{}'", peer_, line));
            output_ += fmt::format("Got: {}\n", line);
        }
        if (!output_.empty()) flush();
        wait_readable();
    }

    // Sends what the kernel takes now; waits for writability for the rest.
    void flush() {
        while (!output_.empty()) {
            ssize_t n = ::send(fd_, output_.data(), output_.size(), MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) {
                sched_.write_wait(fd_, [self = shared_from_this()] { self->flush(); });
                return;
            }
            if (n < 0) {  // reset by peer: reading will see the error and close
                output_.clear();
                return;
            }
            output_.erase(0, static_cast<std::size_t>(n));
        }
    }

    reactor::Scheduler& sched_;
    int fd_;
    std::string peer_;
    std::string input_, output_;
};

// Accepts connections with a one-shot read_wait that re-arms itself.
class LineEcho {
public:
    LineEcho(reactor::Scheduler& sched, int port) : sched_(sched) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd_ < 0) throw std::runtime_error(fmt::format("socket: {}", std::strerror(errno)));
        int one = 1;
        ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<std::uint16_t>(port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) < 0 || ::listen(fd_, SOMAXCONN) < 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) < 0) {
            std::string why = std::strerror(errno);
            ::close(fd_);
            throw std::runtime_error(fmt::format("cannot listen on 127.0.0.1:{}: {}", port, why));
        }
        port_ = ntohs(addr.sin_port);
    }
    ~LineEcho() {
        sched_.remove_reader(fd_);
        ::close(fd_);
    }

    int port() const { return port_; }
    void start() { sched_.read_wait(fd_, [this] { on_acceptable(); }); }

private:
    void on_acceptable() {
        for (;;) {
            sockaddr_in peer{};
            socklen_t len = sizeof peer;
            int c = ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (c < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                if (errno != EAGAIN) say(fmt::format("echo: accept failed: {}", std::strerror(errno)));
                break;
            }
            char ip[INET_ADDRSTRLEN] = "?";
            ::inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof ip);
            auto client = std::make_shared<EchoClient>(sched_, c, fmt::format("{}:{}", ip, ntohs(peer.sin_port)));
            try {
                client->start();
                say(fmt::format("echo: connection from {}:{}", ip, ntohs(peer.sin_port)));
            } catch (const std::invalid_argument& e) {  // e.g. fd >= FD_SETSIZE with select
                say(fmt::format("echo: refused a connection: {}", e.what()));
            }
        }
        start();
    }

    reactor::Scheduler& sched_;
    int fd_ = -1;
    int port_ = 0;
};

}  // namespace countdown
