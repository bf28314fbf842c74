// SPDX-License-Identifier: MIT
// A kernel (reactor/kernel.hpp) that counts every call by name and keeps the
// fds it handed out, passing each call on to the C library (RealKernel): a
// Scheduler built with it shows which system calls its sockets made, and
// that every fd they opened came back to its close(). Loop thread only.
// It also knows one host name of its own (`alias`, for a numeric address),
// so that a connect by name proves the lookup asked the kernel.
#pragma once

#include <fcntl.h>

#include <map>
#include <set>
#include <string>

#include <reactor/kernel.hpp>

namespace reactor_test {

class RecordingKernel : public reactor::RealKernel {
public:
    std::map<std::string, int> calls;  // by the C library's name
    std::set<int> open;                // fds from socket/accept4/pipe2 not closed yet
    std::set<int> foreign_closes;      // fds closed here that it never handed out
    std::string alias;                 // a host name it resolves itself...
    std::string alias_target;          // ...to this numeric address

    int count(const std::string& name) const {
        auto it = calls.find(name);
        return it == calls.end() ? 0 : it->second;
    }

    std::string_view name() const noexcept override { return "recording"; }
    int socket(int domain, int type, int protocol) noexcept override {
        note("socket");
        return opened(RealKernel::socket(domain, type, protocol));
    }
    int accept4(int fd, sockaddr* a, socklen_t* n, int flags) noexcept override {
        note("accept4");
        return opened(RealKernel::accept4(fd, a, n, flags));
    }
    int pipe2(int fds[2], int flags) noexcept override {
        note("pipe2");
        const int rc = RealKernel::pipe2(fds, flags);
        if (rc == 0) open.insert({fds[0], fds[1]});
        return rc;
    }
    int close(int fd) noexcept override {
        note("close");
        if (open.erase(fd) == 0) foreign_closes.insert(fd);
        return RealKernel::close(fd);
    }
    int bind(int fd, const sockaddr* a, socklen_t n) noexcept override {
        note("bind");
        return RealKernel::bind(fd, a, n);
    }
    int listen(int fd, int backlog) noexcept override {
        note("listen");
        return RealKernel::listen(fd, backlog);
    }
    int connect(int fd, const sockaddr* a, socklen_t n) noexcept override {
        note("connect");
        return RealKernel::connect(fd, a, n);
    }
    int shutdown(int fd, int how) noexcept override {
        note("shutdown");
        return RealKernel::shutdown(fd, how);
    }
    ssize_t read(int fd, void* b, std::size_t n) noexcept override {
        note("read");
        return RealKernel::read(fd, b, n);
    }
    ssize_t write(int fd, const void* d, std::size_t n) noexcept override {
        note("write");
        return RealKernel::write(fd, d, n);
    }
    ssize_t recv(int fd, void* b, std::size_t n, int flags) noexcept override {
        note("recv");
        return RealKernel::recv(fd, b, n, flags);
    }
    ssize_t send(int fd, const void* d, std::size_t n, int flags) noexcept override {
        note("send");
        return RealKernel::send(fd, d, n, flags);
    }
    int getsockopt(int fd, int level, int option, void* v, socklen_t* n) noexcept override {
        note("getsockopt");
        return RealKernel::getsockopt(fd, level, option, v, n);
    }
    int setsockopt(int fd, int level, int option, const void* v, socklen_t n) noexcept override {
        note("setsockopt");
        return RealKernel::setsockopt(fd, level, option, v, n);
    }
    int getsockname(int fd, sockaddr* a, socklen_t* n) noexcept override {
        note("getsockname");
        return RealKernel::getsockname(fd, a, n);
    }
    int getpeername(int fd, sockaddr* a, socklen_t* n) noexcept override {
        note("getpeername");
        return RealKernel::getpeername(fd, a, n);
    }
    int fstat(int fd, struct stat* out) noexcept override {
        note("fstat");
        return RealKernel::fstat(fd, out);
    }
    int fcntl(int fd, int command, int argument) noexcept override {
        note("fcntl");
        return RealKernel::fcntl(fd, command, argument);
    }
    int getaddrinfo(const char* node, const char* service, const addrinfo* hints, addrinfo** out) noexcept override {
        note("getaddrinfo");
        if (node != nullptr && !alias.empty() && alias == node) {
            addrinfo numeric = hints ? *hints : addrinfo{};
            numeric.ai_flags |= AI_NUMERICHOST;  // never a real lookup
            return RealKernel::getaddrinfo(alias_target.c_str(), service, &numeric, out);
        }
        return RealKernel::getaddrinfo(node, service, hints, out);
    }
    void freeaddrinfo(addrinfo* list) noexcept override {
        note("freeaddrinfo");
        RealKernel::freeaddrinfo(list);
    }

private:
    void note(const char* call) noexcept { ++calls[call]; }
    int opened(int fd) noexcept {
        if (fd >= 0) open.insert(fd);
        return fd;
    }
};

}  // namespace reactor_test
