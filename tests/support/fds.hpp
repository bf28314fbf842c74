// Test support: owned fds and pipes for tests that close and reuse fd numbers
// on purpose. An Fd closes itself unless the test already closed it.
#pragma once

#include <fcntl.h>
#include <unistd.h>

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

// A non-blocking pipe.
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

}  // namespace reactor_test
