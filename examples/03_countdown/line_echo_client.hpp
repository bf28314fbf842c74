// SPDX-License-Identifier: MIT
// LineEchoClient: one client of Beazley's echo server (line_echo.hpp), written
// with one-shot fd waiters only: it answers every line with "Got: <line>".
// Each wait is one read_wait/write_wait whose callback, when done, arms the
// next one (a generator's "yield read_wait(sock)" desugared by hand). Loop
// thread only.
//
// Ownership: owned by the callback waiting on its fd (a shared_ptr to itself);
// when none is left (the peer closed, or the loop was torn down) it closes
// the fd.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>

namespace countdown {

// Where the demo's lines go, one call per line (without the newline): the
// program prints them, a test collects them.
using Sink = std::function<void(std::string_view)>;

// Lines longer than this are answered in pieces rather than buffered forever.
inline constexpr std::size_t kMaxLine = 64 * 1024;

class LineEchoClient : public std::enable_shared_from_this<LineEchoClient> {
public:
    LineEchoClient(reactor::Scheduler& sched, int fd, std::string peer, Sink say)
        : sched_(sched), fd_(fd), peer_(std::move(peer)), say_(std::move(say)) {}
    ~LineEchoClient() { ::close(fd_); }

    void wait_readable() {
        sched_.read_wait(fd_, [self = shared_from_this()] { self->on_readable(); });
    }

private:
    void on_readable() {
        char buf[16 * 1024];
        ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return wait_readable();  // spurious readiness
        if (n <= 0) {
            say_(fmt::format("echo: {} disconnected{}", peer_, n < 0 ? fmt::format(" ({})", std::strerror(errno)) : ""));
            sched_.remove_writer(fd_);
            return;  // the last reference goes with this callback: the fd is closed
        }
        input_.append(buf, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = input_.find('\n')) != std::string::npos || input_.size() >= kMaxLine;) {
            std::string line = input_.substr(0, nl);  // all of it when there is no newline
            input_.erase(0, nl == std::string::npos ? nl : nl + 1);
            if (line.ends_with('\r')) line.pop_back();
            say_(fmt::format("echo: {} sent '{}'", peer_, line));
            output_ += fmt::format("Got: {}\n", line);
        }
        flush();
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
    Sink say_;
    std::string input_, output_;
};

}  // namespace countdown
