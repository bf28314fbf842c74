// SPDX-License-Identifier: MIT
// reactor::Kernel: the system calls a Scheduler's sockets make, behind one
// interface, so that the library's own Listener, Connection, connect(),
// UdpSocket, TLS and futures streams can run unchanged over something other
// than the operating system: a simulated network (reactor/testing/sim/), or
// a recording kernel in a test (FoundationDB's INetwork: Net2 real, Sim2
// simulated; STYLE.md 26, "the seam belongs below the socket API").
//
// A Scheduler holds one (SchedulerOptions::kernel); none means the C
// library's own functions, called directly: the real path pays one branch on
// a null pointer per call and no virtual call, and fault injection by symbol
// interposition (tests/support/syscall_faults) still catches every call.
//
// Conventions, for every member: the signature, the flags and the errno
// conventions are the C library's (-1 and errno on failure; EAGAIN from a
// non-blocking socket; EINTR may be returned and is retried by the caller).
// Members are noexcept: a kernel that cannot allocate says ENOMEM or ENOBUFS,
// as the real one does. Loop thread only: the Schedulers that share a kernel
// run on one thread. File descriptors a kernel hands out are its own: they
// are given back to the same kernel only (close() included), never to the C
// library, so a simulated kernel's numbers must not be fds the process has
// open (see testing/sim/: they start far above the real ones).
//
// What does not go through it, and why:
//   - the loop's own eventfd and the selector's calls: the selector is
//     already pluggable (SchedulerOptions::selector), and a simulated host
//     brings its own;
//   - Address::resolve(), a blocking static call with no Scheduler: name
//     resolution for a Scheduler goes through getaddrinfo() below when the
//     caller knows the Scheduler (reactor::connect by name does); futures::
//     resolve still runs the real resolver on its executor (to do: ask the
//     running Scheduler's kernel first);
//   - futures' child processes and their pipes (process spawning is not
//     simulated).
#pragma once

#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string_view>

#include "reactor/export.hpp"

namespace reactor {

class REACTOR_API Kernel {
public:
    virtual ~Kernel() = default;

    // For logs and reports: "real", "sim 10.0.0.2 (server)".
    virtual std::string_view name() const noexcept = 0;
    // True for a simulated world's kernel (testing/sim/): its Scheduler's
    // pool jobs run on its own loop, and futures::submit_to reaches only the
    // other hosts of its world (reactor/detail/world_mark.hpp). Asked on
    // cold paths only.
    virtual bool simulated() const noexcept { return false; }
    // The world a simulated kernel belongs to, as an identity only (never
    // dereferenced by the library): two Schedulers whose kernels name the
    // same world run on that world's one thread, stepped by it, so a
    // cross-loop post between them stays inside it. Null for any other kernel.
    virtual const void* world() const noexcept { return nullptr; }

    // ---- the loop's wake-up, for a kernel whose loop is not woken by its
    // eventfd (a simulated host's, whose selector never blocks: its world
    // steps it). After a selector wait that could have blocked, the loop
    // asks loop_rests(): true keeps it announced as asleep, so that the
    // first post from another loop (call_soon_threadsafe, futures::
    // submit_to) calls wake_loop() where it would write the eventfd; true
    // from wake_loop(): woken, no write. Asked only there: a Scheduler
    // without a kernel tests a null pointer on those two slow paths, and its
    // post path is unchanged. Any thread and signal handlers, for wake_loop.
    virtual bool loop_rests() noexcept { return false; }
    virtual bool wake_loop() noexcept { return false; }

    // ---- sockets: socket(2), bind(2), listen(2), accept4(2), connect(2), shutdown(2)
    virtual int socket(int domain, int type, int protocol) noexcept = 0;
    virtual int bind(int fd, const sockaddr* address, socklen_t length) noexcept = 0;
    virtual int listen(int fd, int backlog) noexcept = 0;
    virtual int accept4(int fd, sockaddr* address, socklen_t* length, int flags) noexcept = 0;
    virtual int connect(int fd, const sockaddr* address, socklen_t length) noexcept = 0;
    virtual int shutdown(int fd, int how) noexcept = 0;
    // close(2): not retried on EINTR by any caller (the fd is gone either way).
    virtual int close(int fd) noexcept = 0;

    // ---- data: read(2)/write(2) for any fd, recv/send and the datagram calls for sockets
    virtual ssize_t read(int fd, void* buffer, std::size_t length) noexcept = 0;
    virtual ssize_t write(int fd, const void* data, std::size_t length) noexcept = 0;
    virtual ssize_t recv(int fd, void* buffer, std::size_t length, int flags) noexcept = 0;
    virtual ssize_t send(int fd, const void* data, std::size_t length, int flags) noexcept = 0;
    virtual ssize_t recvfrom(int fd, void* buffer, std::size_t length, int flags, sockaddr* from,
                             socklen_t* from_length) noexcept = 0;
    virtual ssize_t sendto(int fd, const void* data, std::size_t length, int flags, const sockaddr* to,
                           socklen_t to_length) noexcept = 0;
    // Only MSG_ERRQUEUE reads are made (UdpSocket's ICMP errors).
    virtual ssize_t recvmsg(int fd, msghdr* message, int flags) noexcept = 0;

    // ---- options and names
    virtual int getsockopt(int fd, int level, int option, void* value, socklen_t* length) noexcept = 0;
    virtual int setsockopt(int fd, int level, int option, const void* value, socklen_t length) noexcept = 0;
    virtual int getsockname(int fd, sockaddr* address, socklen_t* length) noexcept = 0;
    virtual int getpeername(int fd, sockaddr* address, socklen_t* length) noexcept = 0;

    // ---- files: what Connection::adopt and the pipes ask of an fd
    virtual int fstat(int fd, struct stat* out) noexcept = 0;
    // The commands made: F_GETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC (an int argument).
    virtual int fcntl(int fd, int command, int argument) noexcept = 0;
    virtual int pipe2(int fds[2], int flags) noexcept = 0;

    // ---- names: getaddrinfo(3)'s contract (EAI_* results, errno for
    // EAI_SYSTEM); what it returns is given back to freeaddrinfo() of the same
    // kernel. A simulated world resolves its own host names here.
    virtual int getaddrinfo(const char* node, const char* service, const addrinfo* hints,
                            addrinfo** result) noexcept = 0;
    virtual void freeaddrinfo(addrinfo* list) noexcept = 0;

    // ---- time: clock_gettime(CLOCK_REALTIME), the calendar's time
    // (Scheduler::wall_clock). The loop's timers never read it: they run on
    // its monotonic clock (SchedulerOptions::clock), which a simulated world
    // sets to its virtual time.
    virtual std::chrono::system_clock::time_point wall_clock() const noexcept = 0;
};

// The C library's functions, one for one. A Scheduler without a kernel calls
// them directly instead (no virtual call); this class is for kernels that
// change a few calls and pass the rest on (a recording kernel in a test
// derives from it and calls RealKernel::send).
class REACTOR_API RealKernel : public Kernel {
public:
    std::string_view name() const noexcept override { return "real"; }
    int socket(int domain, int type, int protocol) noexcept override;
    int bind(int fd, const sockaddr* address, socklen_t length) noexcept override;
    int listen(int fd, int backlog) noexcept override;
    int accept4(int fd, sockaddr* address, socklen_t* length, int flags) noexcept override;
    int connect(int fd, const sockaddr* address, socklen_t length) noexcept override;
    int shutdown(int fd, int how) noexcept override;
    int close(int fd) noexcept override;
    ssize_t read(int fd, void* buffer, std::size_t length) noexcept override;
    ssize_t write(int fd, const void* data, std::size_t length) noexcept override;
    ssize_t recv(int fd, void* buffer, std::size_t length, int flags) noexcept override;
    ssize_t send(int fd, const void* data, std::size_t length, int flags) noexcept override;
    ssize_t recvfrom(int fd, void* buffer, std::size_t length, int flags, sockaddr* from,
                     socklen_t* from_length) noexcept override;
    ssize_t sendto(int fd, const void* data, std::size_t length, int flags, const sockaddr* to,
                   socklen_t to_length) noexcept override;
    ssize_t recvmsg(int fd, msghdr* message, int flags) noexcept override;
    int getsockopt(int fd, int level, int option, void* value, socklen_t* length) noexcept override;
    int setsockopt(int fd, int level, int option, const void* value, socklen_t length) noexcept override;
    int getsockname(int fd, sockaddr* address, socklen_t* length) noexcept override;
    int getpeername(int fd, sockaddr* address, socklen_t* length) noexcept override;
    int fstat(int fd, struct stat* out) noexcept override;
    int fcntl(int fd, int command, int argument) noexcept override;
    int pipe2(int fds[2], int flags) noexcept override;
    int getaddrinfo(const char* node, const char* service, const addrinfo* hints,
                    addrinfo** result) noexcept override;
    void freeaddrinfo(addrinfo* list) noexcept override;
    std::chrono::system_clock::time_point wall_clock() const noexcept override;
};

}  // namespace reactor
