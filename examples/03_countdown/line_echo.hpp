// SPDX-License-Identifier: MIT
// LineEcho: Beazley's echo server on 127.0.0.1, written with one-shot fd
// waiters only, the server of the Countdown component (countdown.hpp). It
// accepts with a read_wait that re-arms itself and hands each client to a
// LineEchoClient (line_echo_client.hpp), which answers every line with
// "Got: <line>". What it has to say goes to the sink it is given. Loop thread
// only.
//
// Ownership: the listening socket belongs to the LineEcho object; each client
// owns itself (see line_echo_client.hpp).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <reactor/net/address.hpp>
#include <reactor/scheduler.hpp>

#include "line_echo_client.hpp"

namespace countdown {

// Accepts connections with a one-shot read_wait that re-arms itself.
class LineEcho {
public:
    LineEcho(reactor::Scheduler& sched, std::uint16_t port, Sink say) : sched_(sched), say_(std::move(say)) {
        const reactor::Address address = reactor::Address::loopback_v4(port);
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd_ < 0 || ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
            ::bind(fd_, address.data(), address.size()) < 0 || ::listen(fd_, SOMAXCONN) < 0) {
            std::string why = std::strerror(errno);
            if (fd_ >= 0) ::close(fd_);
            throw std::runtime_error(fmt::format("cannot listen on {}: {}", address.to_string(), why));
        }
        port_ = reactor::Address::local_of(fd_).port();
    }
    ~LineEcho() {
        sched_.remove_reader(fd_);
        ::close(fd_);
    }

    std::uint16_t port() const { return port_; }
    void start() { sched_.read_wait(fd_, [this] { on_acceptable(); }); }

private:
    void on_acceptable() {
        for (;;) {
            sockaddr_storage peer{};
            socklen_t len = sizeof peer;
            int c = ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (c < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                if (errno != EAGAIN) say_(fmt::format("echo: accept failed: {}", std::strerror(errno)));
                break;
            }
            std::string name = reactor::Address::from_sockaddr(reinterpret_cast<sockaddr*>(&peer), len).to_string();
            try {
                std::make_shared<LineEchoClient>(sched_, c, name, say_)->wait_readable();
                say_(fmt::format("echo: connection from {}", name));
            } catch (const std::invalid_argument& e) {  // e.g. fd >= FD_SETSIZE with select
                say_(fmt::format("echo: refused a connection: {}", e.what()));
            }
        }
        start();
    }

    reactor::Scheduler& sched_;
    Sink say_;
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

}  // namespace countdown
