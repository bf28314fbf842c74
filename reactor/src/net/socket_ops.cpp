#include "socket_ops.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

namespace reactor::detail {

void UniqueFd::reset(int fd) noexcept {
    if (fd_ >= 0) close_fd(fd_);
    fd_ = fd;
}

void close_fd(int fd) noexcept { ::close(fd); }

UniqueFd make_socket(int family, int type) {
    int fd = ::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw system_error(errno, "reactor: socket");
    return UniqueFd(fd);
}

void set_no_delay(int fd) noexcept {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void set_reuse_address(int fd) {
    int one = 1;
    if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        throw system_error(errno, "reactor: setsockopt(SO_REUSEADDR)");
}

void set_reuse_port(int fd) {
    int one = 1;
    if (::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
        throw system_error(errno, "reactor: setsockopt(SO_REUSEPORT)");
}

void set_linger_zero(int fd) noexcept {
    linger lg{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
}

char* read_scratch(std::size_t n) {
    thread_local std::unique_ptr<char[]> bytes;
    thread_local std::size_t size = 0;
    if (size < n) {
        bytes = std::make_unique_for_overwrite<char[]>(n);
        size = n;
    }
    return bytes.get();
}

int take_socket_error(int fd) noexcept {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    return err;
}

}  // namespace reactor::detail
