// SPDX-License-Identifier: MIT
// Private helpers shared by the socket classes: thin wrappers over the socket
// system calls with the flags every socket here wants (non-blocking, close-on-exec).
// Each takes the kernel of the Scheduler it acts for (Scheduler::kernel(),
// null: the C library; see reactor/kernel.hpp). Not installed; never call
// user code.
#pragma once

#include <cerrno>
#include <cstddef>
#include <string_view>
#include <system_error>
#include <utility>

#include "reactor/kernel.hpp"

namespace reactor::detail {

// Owns one fd of `kernel` until release(); closes it otherwise. Move-only.
class UniqueFd {
public:
    UniqueFd() = default;
    UniqueFd(Kernel* kernel, int fd) noexcept : kernel_(kernel), fd_(fd) {}
    UniqueFd(UniqueFd&& o) noexcept : kernel_(o.kernel_), fd_(std::exchange(o.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept {
        if (this != &o) {
            reset(std::exchange(o.fd_, -1));
            kernel_ = o.kernel_;
        }
        return *this;
    }
    ~UniqueFd() { reset(); }
    int get() const noexcept { return fd_; }
    int release() noexcept { return std::exchange(fd_, -1); }
    void reset(int fd = -1) noexcept;

private:
    Kernel* kernel_ = nullptr;
    int fd_ = -1;
};

// close(2) without retrying EINTR: on Linux the fd is gone either way, and a
// retry could close an fd another thread just received.
void close_fd(Kernel* kernel, int fd) noexcept;

// A non-blocking, close-on-exec socket. Throws std::system_error.
UniqueFd make_socket(Kernel* kernel, int family, int type);

// Best-effort socket options (failure is ignored: they are optimisations).
void set_no_delay(Kernel* kernel, int fd) noexcept;
// Throws std::system_error (a listener without it fails to restart quickly).
void set_reuse_address(Kernel* kernel, int fd);
void set_reuse_port(Kernel* kernel, int fd);
// SO_LINGER {on, 0}: close() then sends RST and discards unsent data.
void set_linger_zero(Kernel* kernel, int fd) noexcept;

// A receive buffer of at least n bytes shared by every socket of the calling
// thread. Valid until the next call on this thread: socket classes hand a view
// of it to a data callback and never read again before that callback returns
// (the loop does not nest), so one buffer serves all connections at no
// per-connection memory cost.
char* read_scratch(std::size_t n);

// The pending error of a socket (SO_ERROR), 0 if none.
int take_socket_error(Kernel* kernel, int fd) noexcept;

// What kind of file an fstat mode says: "socket", "pipe", "regular file",
// "directory", "character device", "block device", "symbolic link", "file of
// unknown type" (an anonymous inode: eventfd, timerfd...).
const char* file_type_name(unsigned mode) noexcept;

// fstat(fd): its mode, after checking it can be watched for readiness (a
// socket, a pipe end or a character device such as a terminal). Throws
// std::invalid_argument naming fd and its type otherwise (a regular file, a
// directory...), std::system_error if fstat fails.
unsigned pollable_mode(Kernel* kernel, int fd);

// write(2) to a pipe that can never raise SIGPIPE for the process: SIGPIPE is
// blocked in the calling thread around the call and, if the write failed with
// EPIPE, the SIGPIPE it raised (thread-directed) is consumed by sigtimedwait
// before the old mask comes back. A SIGPIPE that was already pending and
// blocked before the call is left pending. Returns as write(2), EINTR retried.
// A kernel other than the real one has no signals: its write(2) is called.
long write_without_sigpipe(Kernel* kernel, int fd, const char* data, std::size_t n) noexcept;

// The peer went away abruptly (as opposed to a local failure).
inline bool is_reset_error(int err) noexcept { return err == ECONNRESET || err == EPIPE || err == ECONNABORTED; }

inline std::system_error system_error(int err, std::string_view what) {
    return std::system_error(err, std::generic_category(), std::string(what));
}

}  // namespace reactor::detail
