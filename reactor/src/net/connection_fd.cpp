// SPDX-License-Identifier: MIT
// The kinds of fd a Connection accepts (see Connection::adopt): sockets, pipe
// ends and character devices such as terminals. Which fds can be polled, how
// the access mode sets the directions, and how bytes go out without SIGPIPE.
#include "reactor/net/connection.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include <fmt/format.h>

#include "reactor/detail/kernel_calls.hpp"
#include "socket_ops.hpp"

namespace reactor {

// A regular file, a directory or a block device is always "ready" for
// poll/select and refused by epoll: waiting on one means nothing, so it is
// refused here with its type named, rather than spinning or failing later.
namespace detail {
unsigned pollable_mode(Kernel* kernel, int fd) {
    struct stat st {};
    if (sys::fstat(kernel, fd, &st) != 0) throw system_error(errno, fmt::format("reactor: fstat of fd {}", fd));
    if (!S_ISSOCK(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
        throw std::invalid_argument(fmt::format(
            "reactor: fd {} is a {}, which cannot be watched for readiness: a connection needs a socket, a pipe "
            "or a terminal",
            fd, file_type_name(st.st_mode)));
    return st.st_mode;
}
}  // namespace detail

// Also makes the fd non-blocking: a read or write on the loop must never wait.
Connection::FdKind Connection::inspect_fd(Kernel* kernel, int fd) {
    const unsigned mode = detail::pollable_mode(kernel, fd);
    const int flags = detail::sys::fcntl(kernel, fd, F_GETFL);
    if (flags < 0) throw detail::system_error(errno, fmt::format("reactor: fcntl(F_GETFL) of fd {}", fd));
    if ((flags & O_NONBLOCK) == 0 && detail::sys::fcntl(kernel, fd, F_SETFL, flags | O_NONBLOCK) != 0)
        throw detail::system_error(errno, fmt::format("reactor: fcntl(F_SETFL, O_NONBLOCK) of fd {}", fd));
    return {static_cast<int>(mode & S_IFMT), flags & O_ACCMODE};
}

// Sockets keep the defaults. A pipe end open in one direction starts with the
// other direction already finished (see adopt()).
void Connection::adapt_to_fd_kind(FdKind kind) noexcept {
    is_socket_ = kind.type == S_IFSOCK;
    if (is_socket_) return;
    direct_ = false;
    is_fifo_ = kind.type == S_IFIFO;
    if (kind.access_mode == O_RDONLY) {
        shutdown_requested_ = write_shut_ = true;
    } else if (kind.access_mode == O_WRONLY) {
        read_eof_ = true;
        // A pipe's write end polls as an error once no reader is left (every
        // backend reports that as readable), so a reader registered on it
        // learns of the departure without waiting for a write.
        watch_reader_gone_ = is_fifo_;
    }
}

// The real socket first: the one branch the hot path pays (see direct_).
long Connection::transfer_out(const char* data, std::size_t n) noexcept {
    ssize_t r;
    if (direct_) [[likely]] {
        do {
            r = ::send(fd_, data, n, MSG_NOSIGNAL);
        } while (r < 0 && errno == EINTR);
        return r;
    }
    Kernel* const k = kernel();
    if (is_fifo_) return detail::write_without_sigpipe(k, fd_, data, n);
    do {
        // A terminal never raises SIGPIPE.
        r = is_socket_ ? detail::sys::send(k, fd_, data, n, MSG_NOSIGNAL) : detail::sys::write(k, fd_, data, n);
    } while (r < 0 && errno == EINTR);
    return r;
}

long Connection::transfer_in_indirect(char* buffer, std::size_t n) noexcept {
    Kernel* const k = kernel();
    return is_socket_ ? detail::sys::recv(k, fd_, buffer, n, 0) : detail::sys::read(k, fd_, buffer, n);
}

}  // namespace reactor
