// SPDX-License-Identifier: MIT
// reactor::detail::sys: how the library makes a system call on behalf of a
// Scheduler (reactor/kernel.hpp). Each function takes the Scheduler's kernel
// (Scheduler::kernel(), null for the real one) and calls the C library's
// function directly when it is null: one predictable branch, no virtual call,
// and the symbol the fault-injection library interposes. Used by the
// library's sources (reactor and futures); not for users. Loop thread only,
// as the kernel is.
#pragma once

#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>

#include "reactor/kernel.hpp"

namespace reactor::detail::sys {

inline int socket(Kernel* k, int domain, int type, int protocol) noexcept {
    if (k == nullptr) [[likely]]
        return ::socket(domain, type, protocol);
    return k->socket(domain, type, protocol);
}
inline int bind(Kernel* k, int fd, const sockaddr* address, socklen_t length) noexcept {
    if (k == nullptr) [[likely]]
        return ::bind(fd, address, length);
    return k->bind(fd, address, length);
}
inline int listen(Kernel* k, int fd, int backlog) noexcept {
    if (k == nullptr) [[likely]]
        return ::listen(fd, backlog);
    return k->listen(fd, backlog);
}
inline int accept4(Kernel* k, int fd, sockaddr* address, socklen_t* length, int flags) noexcept {
    if (k == nullptr) [[likely]]
        return ::accept4(fd, address, length, flags);
    return k->accept4(fd, address, length, flags);
}
inline int connect(Kernel* k, int fd, const sockaddr* address, socklen_t length) noexcept {
    if (k == nullptr) [[likely]]
        return ::connect(fd, address, length);
    return k->connect(fd, address, length);
}
inline int shutdown(Kernel* k, int fd, int how) noexcept {
    if (k == nullptr) [[likely]]
        return ::shutdown(fd, how);
    return k->shutdown(fd, how);
}
inline int close(Kernel* k, int fd) noexcept {
    if (k == nullptr) [[likely]]
        return ::close(fd);
    return k->close(fd);
}
inline ssize_t read(Kernel* k, int fd, void* buffer, std::size_t length) noexcept {
    if (k == nullptr) [[likely]]
        return ::read(fd, buffer, length);
    return k->read(fd, buffer, length);
}
inline ssize_t write(Kernel* k, int fd, const void* data, std::size_t length) noexcept {
    if (k == nullptr) [[likely]]
        return ::write(fd, data, length);
    return k->write(fd, data, length);
}
inline ssize_t recv(Kernel* k, int fd, void* buffer, std::size_t length, int flags) noexcept {
    if (k == nullptr) [[likely]]
        return ::recv(fd, buffer, length, flags);
    return k->recv(fd, buffer, length, flags);
}
inline ssize_t send(Kernel* k, int fd, const void* data, std::size_t length, int flags) noexcept {
    if (k == nullptr) [[likely]]
        return ::send(fd, data, length, flags);
    return k->send(fd, data, length, flags);
}
inline ssize_t recvfrom(Kernel* k, int fd, void* buffer, std::size_t length, int flags, sockaddr* from,
                        socklen_t* from_length) noexcept {
    if (k == nullptr) [[likely]]
        return ::recvfrom(fd, buffer, length, flags, from, from_length);
    return k->recvfrom(fd, buffer, length, flags, from, from_length);
}
inline ssize_t sendto(Kernel* k, int fd, const void* data, std::size_t length, int flags, const sockaddr* to,
                      socklen_t to_length) noexcept {
    if (k == nullptr) [[likely]]
        return ::sendto(fd, data, length, flags, to, to_length);
    return k->sendto(fd, data, length, flags, to, to_length);
}
inline ssize_t recvmsg(Kernel* k, int fd, msghdr* message, int flags) noexcept {
    if (k == nullptr) [[likely]]
        return ::recvmsg(fd, message, flags);
    return k->recvmsg(fd, message, flags);
}
inline int getsockopt(Kernel* k, int fd, int level, int option, void* value, socklen_t* length) noexcept {
    if (k == nullptr) [[likely]]
        return ::getsockopt(fd, level, option, value, length);
    return k->getsockopt(fd, level, option, value, length);
}
inline int setsockopt(Kernel* k, int fd, int level, int option, const void* value, socklen_t length) noexcept {
    if (k == nullptr) [[likely]]
        return ::setsockopt(fd, level, option, value, length);
    return k->setsockopt(fd, level, option, value, length);
}
inline int getsockname(Kernel* k, int fd, sockaddr* address, socklen_t* length) noexcept {
    if (k == nullptr) [[likely]]
        return ::getsockname(fd, address, length);
    return k->getsockname(fd, address, length);
}
inline int getpeername(Kernel* k, int fd, sockaddr* address, socklen_t* length) noexcept {
    if (k == nullptr) [[likely]]
        return ::getpeername(fd, address, length);
    return k->getpeername(fd, address, length);
}
inline int fstat(Kernel* k, int fd, struct stat* out) noexcept {
    if (k == nullptr) [[likely]]
        return ::fstat(fd, out);
    return k->fstat(fd, out);
}
inline int fcntl(Kernel* k, int fd, int command, int argument = 0) noexcept {
    if (k == nullptr) [[likely]]
        return ::fcntl(fd, command, argument);
    return k->fcntl(fd, command, argument);
}
inline int pipe2(Kernel* k, int fds[2], int flags) noexcept {
    if (k == nullptr) [[likely]]
        return ::pipe2(fds, flags);
    return k->pipe2(fds, flags);
}
inline int getaddrinfo(Kernel* k, const char* node, const char* service, const addrinfo* hints,
                       addrinfo** result) noexcept {
    if (k == nullptr) [[likely]]
        return ::getaddrinfo(node, service, hints, result);
    return k->getaddrinfo(node, service, hints, result);
}
inline void freeaddrinfo(Kernel* k, addrinfo* list) noexcept {
    if (k == nullptr) [[likely]]
        return ::freeaddrinfo(list);
    k->freeaddrinfo(list);
}
inline std::chrono::system_clock::time_point wall_clock(const Kernel* k) noexcept {
    if (k == nullptr) [[likely]]
        return std::chrono::system_clock::now();
    return k->wall_clock();
}

}  // namespace reactor::detail::sys
