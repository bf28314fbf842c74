// SPDX-License-Identifier: MIT
// A simulated host's socket options and fd queries (host_kernel.hpp):
// SO_ERROR, SO_LINGER, the names of a socket, fstat and fcntl, as Linux
// answers them for a non-blocking TCP socket.
#include "host_kernel.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "syscall_answers.hpp"

namespace reactor::testing::sim::detail {

int HostKernel::getsockopt(int fd, int level, int option, void* value, socklen_t* length) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    if (value == nullptr || length == nullptr || *length < static_cast<socklen_t>(sizeof(int))) return fail(EINVAL);
    int answer = 0;
    if (level == SOL_SOCKET && option == SO_ERROR && s->udp) {
        answer = std::exchange(s->udp->pending_error, 0);
    } else if (level == SOL_SOCKET && option == SO_ERROR && s->state == Socket::State::connecting) {
        settle(*s);
        answer = std::exchange(s->side.self().error, 0);
    }
    std::memcpy(value, &answer, sizeof answer);
    *length = sizeof answer;
    return 0;
}

// Options are accepted and ignored (TCP_NODELAY: the model sends at once
// anyway), except SO_LINGER {1, 0}, which makes close() reset, and
// IP_RECVERR, which gives a datagram socket its error queue (udp.hpp).
int HostKernel::setsockopt(int fd, int level, int option, const void* value, socklen_t length) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    if (level == SOL_SOCKET && option == SO_LINGER) {
        if (value == nullptr || length < static_cast<socklen_t>(sizeof(linger))) return fail(EINVAL);
        linger l{};
        std::memcpy(&l, value, sizeof l);
        s->linger_zero = l.l_onoff != 0 && l.l_linger == 0;
    }
    if (level == IPPROTO_IP && option == IP_RECVERR && s->udp) {
        int on = 0;
        if (value == nullptr || length < static_cast<socklen_t>(sizeof on)) return fail(EINVAL);
        std::memcpy(&on, value, sizeof on);
        s->udp->recverr = on != 0;
    }
    return 0;
}

int HostKernel::getsockname(int fd, sockaddr* address, socklen_t* length) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    give_address(s->local, address, length);
    return 0;
}

int HostKernel::getpeername(int fd, sockaddr* address, socklen_t* length) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    if (s->udp) {
        if (!s->udp->connected) return fail(ENOTCONN);
        give_address(s->udp->peer, address, length);
        return 0;
    }
    settle(*s);
    if (s->state != Socket::State::connected) return fail(ENOTCONN);
    give_address(s->side.peer().address, address, length);
    return 0;
}

int HostKernel::fstat(int fd, struct stat* out) noexcept {
    if (find(fd) == nullptr) return fail(EBADF);
    *out = {};
    out->st_mode = S_IFSOCK | 0777;
    return 0;
}

// dup is not simulated (ENOSYS): adopt_stdio's copy of a real fd has no
// place in a world.
int HostKernel::fcntl(int fd, int command, int argument) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    switch (command) {
    case F_GETFD: return FD_CLOEXEC;
    case F_SETFD: return 0;
    case F_GETFL: return s->status_flags;
    case F_SETFL: s->status_flags = O_RDWR | (argument & O_NONBLOCK); return 0;
    default: return fail(ENOSYS);
    }
}

int HostKernel::pipe2(int* /*fds*/, int /*flags*/) noexcept { return fail(ENOSYS); }  // pipes: not simulated yet

}  // namespace reactor::testing::sim::detail
