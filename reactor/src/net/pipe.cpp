// SPDX-License-Identifier: MIT
#include "reactor/net/pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "reactor/detail/kernel_calls.hpp"
#include "socket_ops.hpp"

namespace reactor {

PipeConnections open_pipe(Scheduler& sched, ConnectionOptions options) {
    int fds[2];
    if (detail::sys::pipe2(sched.kernel(), fds, O_NONBLOCK | O_CLOEXEC) != 0)
        throw detail::system_error(errno, "reactor: pipe2");
    detail::UniqueFd write_fd(sched.kernel(), fds[1]);
    PipeConnections pipe;
    pipe.read_end = Connection::adopt(sched, fds[0], options);  // closes fds[0] if it throws
    try {
        pipe.write_end = Connection::adopt(sched, write_fd.release(), options);
    } catch (...) {
        pipe.read_end->abort();  // it owns itself once adopted
        throw;
    }
    return pipe;
}

ConnectionPtr adopt_stdio(Scheduler& sched, int fd, ConnectionOptions options) {
    Kernel* const kernel = sched.kernel();
    detail::pollable_mode(kernel, fd);  // refused by the caller's fd number, not the copy's
    // Read the flags before adopt() adds O_NONBLOCK to the shared description.
    const int flags = detail::sys::fcntl(kernel, fd, F_GETFL);
    if (flags < 0) throw detail::system_error(errno, fmt::format("reactor: fd {} cannot be adopted", fd));
    const int copy = detail::sys::fcntl(kernel, fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) throw detail::system_error(errno, fmt::format("reactor: dup of fd {}", fd));
    ConnectionPtr conn;
    try {
        conn = Connection::adopt(sched, copy, options);
    } catch (...) {
        // adopt may have set O_NONBLOCK before failing (select: fd >= FD_SETSIZE).
        detail::sys::fcntl(kernel, fd, F_SETFL, flags);
        throw;
    }
    conn->restore_blocking_ = (flags & O_NONBLOCK) == 0;
    return conn;
}

}  // namespace reactor
