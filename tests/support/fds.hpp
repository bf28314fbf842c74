// SPDX-License-Identifier: MIT
// Test support: owned fds, pipes and socketpairs, the one definition every
// suite uses. An Fd closes itself unless the test already closed it, and
// reads like a plain int fd (read(p.r, ...), add_reader(p.r, ...)).
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ostream>
#include <string>
#include <utility>

#include <boost/test/unit_test.hpp>

namespace reactor_test {

class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { close(); }
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&& other) noexcept {
        if (this != &other) {
            close();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }

    int get() const { return fd_; }
    operator int() const { return fd_; }  // NOLINT: reads like a plain fd in the tests
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    // Makes this fd number refer to `other`'s file (dup3: the old file is
    // closed and the number reused at once, as the next open() would).
    void become(const Fd& other) {
        BOOST_REQUIRE(::dup3(other.get(), fd_, O_CLOEXEC) == fd_);
    }

private:
    int fd_ = -1;
};

// Boost.Test names an Fd in failure messages by its number.
inline std::ostream& boost_test_print_type(std::ostream& os, const Fd& fd) { return os << fd.get(); }

// A non-blocking pipe; its ends close on destruction.
struct Pipe {
    Fd r, w;
    Pipe() {
        int fds[2];
        BOOST_REQUIRE(::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
        r = Fd(fds[0]);
        w = Fd(fds[1]);
    }
    void put(const std::string& bytes = "x") const {
        BOOST_REQUIRE(::write(w.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    }
    // Reads what is there; the byte count (0 when empty or closed).
    int take() const {
        char buf[256];
        ssize_t n = ::read(r.get(), buf, sizeof buf);
        return n < 0 ? 0 : static_cast<int>(n);
    }
};

// A non-blocking AF_UNIX stream socketpair; its ends close on destruction.
struct SocketPair {
    Fd a, b;
    SocketPair() {
        int fds[2];
        BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
        a = Fd(fds[0]);
        b = Fd(fds[1]);
    }
};

}  // namespace reactor_test
