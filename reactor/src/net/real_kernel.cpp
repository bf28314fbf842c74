// SPDX-License-Identifier: MIT
// RealKernel: each member is the C library's function of the same name, so
// that a kernel deriving from it changes only the calls it overrides.
#include "reactor/kernel.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace reactor {

int RealKernel::socket(int domain, int type, int protocol) noexcept { return ::socket(domain, type, protocol); }
int RealKernel::bind(int fd, const sockaddr* a, socklen_t n) noexcept { return ::bind(fd, a, n); }
int RealKernel::listen(int fd, int backlog) noexcept { return ::listen(fd, backlog); }
int RealKernel::accept4(int fd, sockaddr* a, socklen_t* n, int flags) noexcept { return ::accept4(fd, a, n, flags); }
int RealKernel::connect(int fd, const sockaddr* a, socklen_t n) noexcept { return ::connect(fd, a, n); }
int RealKernel::shutdown(int fd, int how) noexcept { return ::shutdown(fd, how); }
int RealKernel::close(int fd) noexcept { return ::close(fd); }
ssize_t RealKernel::read(int fd, void* b, std::size_t n) noexcept { return ::read(fd, b, n); }
ssize_t RealKernel::write(int fd, const void* d, std::size_t n) noexcept { return ::write(fd, d, n); }
ssize_t RealKernel::recv(int fd, void* b, std::size_t n, int flags) noexcept { return ::recv(fd, b, n, flags); }
ssize_t RealKernel::send(int fd, const void* d, std::size_t n, int flags) noexcept {
    return ::send(fd, d, n, flags);
}
ssize_t RealKernel::recvfrom(int fd, void* b, std::size_t n, int flags, sockaddr* from, socklen_t* len) noexcept {
    return ::recvfrom(fd, b, n, flags, from, len);
}
ssize_t RealKernel::sendto(int fd, const void* d, std::size_t n, int flags, const sockaddr* to, socklen_t len) noexcept {
    return ::sendto(fd, d, n, flags, to, len);
}
ssize_t RealKernel::recvmsg(int fd, msghdr* m, int flags) noexcept { return ::recvmsg(fd, m, flags); }
int RealKernel::getsockopt(int fd, int level, int option, void* v, socklen_t* n) noexcept {
    return ::getsockopt(fd, level, option, v, n);
}
int RealKernel::setsockopt(int fd, int level, int option, const void* v, socklen_t n) noexcept {
    return ::setsockopt(fd, level, option, v, n);
}
int RealKernel::getsockname(int fd, sockaddr* a, socklen_t* n) noexcept { return ::getsockname(fd, a, n); }
int RealKernel::getpeername(int fd, sockaddr* a, socklen_t* n) noexcept { return ::getpeername(fd, a, n); }
int RealKernel::fstat(int fd, struct stat* out) noexcept { return ::fstat(fd, out); }
int RealKernel::fcntl(int fd, int command, int argument) noexcept { return ::fcntl(fd, command, argument); }
int RealKernel::pipe2(int fds[2], int flags) noexcept { return ::pipe2(fds, flags); }
int RealKernel::getaddrinfo(const char* node, const char* service, const addrinfo* hints, addrinfo** result) noexcept {
    return ::getaddrinfo(node, service, hints, result);
}
void RealKernel::freeaddrinfo(addrinfo* list) noexcept { ::freeaddrinfo(list); }
std::chrono::system_clock::time_point RealKernel::wall_clock() const noexcept {
    return std::chrono::system_clock::now();
}

}  // namespace reactor
