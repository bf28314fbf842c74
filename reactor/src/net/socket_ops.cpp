// SPDX-License-Identifier: MIT
#include "socket_ops.hpp"

#include "reactor/detail/kernel_calls.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>

#include <memory>
#include <new>

namespace reactor::detail {

void UniqueFd::reset(int fd) noexcept {
    if (fd_ >= 0) close_fd(kernel_, fd_);
    fd_ = fd;
}

void close_fd(Kernel* kernel, int fd) noexcept { sys::close(kernel, fd); }

UniqueFd make_socket(Kernel* kernel, int family, int type) {
    int fd = sys::socket(kernel, family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw system_error(errno, "reactor: socket");
    return UniqueFd(kernel, fd);
}

void set_no_delay(Kernel* kernel, int fd) noexcept {
    int one = 1;
    sys::setsockopt(kernel, fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void set_reuse_address(Kernel* kernel, int fd) {
    int one = 1;
    if (sys::setsockopt(kernel, fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        throw system_error(errno, "reactor: setsockopt(SO_REUSEADDR)");
}

void set_reuse_port(Kernel* kernel, int fd) {
    int one = 1;
    if (sys::setsockopt(kernel, fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
        throw system_error(errno, "reactor: setsockopt(SO_REUSEPORT)");
}

void set_linger_zero(Kernel* kernel, int fd) noexcept {
    linger lg{1, 0};
    sys::setsockopt(kernel, fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
}

// Page-aligned, not where malloc puts a large block (just past its header,
// a few bytes into a page): the kernel copies every received byte into this
// buffer, and on some CPUs that copy is far slower into a destination that
// starts a few bytes past a page boundary than into an aligned one
// (bench/results/echo_recheck.md: the 100 KiB echo).
char* read_scratch(std::size_t n) {
    struct Free {
        void operator()(char* p) const noexcept { std::free(p); }
    };
    constexpr std::size_t kPage = 4096;
    thread_local std::unique_ptr<char, Free> bytes;
    thread_local std::size_t size = 0;
    if (size < n) {
        const std::size_t rounded = (n + kPage - 1) / kPage * kPage;
        char* fresh = static_cast<char*>(std::aligned_alloc(kPage, rounded));
        if (fresh == nullptr) throw std::bad_alloc();
        bytes.reset(fresh);
        size = rounded;
    }
    return bytes.get();
}

int take_socket_error(Kernel* kernel, int fd) noexcept {
    int err = 0;
    socklen_t len = sizeof err;
    if (sys::getsockopt(kernel, fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    return err;
}

const char* file_type_name(unsigned mode) noexcept {
    switch (mode & S_IFMT) {
    case S_IFSOCK: return "socket";
    case S_IFIFO: return "pipe";
    case S_IFREG: return "regular file";
    case S_IFDIR: return "directory";
    case S_IFCHR: return "character device";
    case S_IFBLK: return "block device";
    case S_IFLNK: return "symbolic link";
    }
    return "file of unknown type";
}

long write_without_sigpipe(Kernel* kernel, int fd, const char* data, std::size_t n) noexcept {
    if (kernel != nullptr) {
        ssize_t r;
        do {
            r = kernel->write(fd, data, n);
        } while (r < 0 && errno == EINTR);
        return r;
    }
    sigset_t pipe_only;
    sigset_t old;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    // Only a SIGPIPE that was blocked before can be pending now and not ours:
    // an unblocked one would have been delivered already. Checked only then,
    // so the common case costs the two mask changes.
    bool was_pending = false;
    if (sigismember(&old, SIGPIPE) == 1) {
        sigset_t pending;
        was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    }
    ssize_t r;
    do {
        r = ::write(fd, data, n);
    } while (r < 0 && errno == EINTR);
    const int saved = errno;
    if (r < 0 && saved == EPIPE && !was_pending) {
        const timespec zero{};
        while (sigtimedwait(&pipe_only, nullptr, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    errno = saved;
    return r;
}

}  // namespace reactor::detail
