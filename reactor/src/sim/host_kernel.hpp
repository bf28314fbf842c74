// SPDX-License-Identifier: MIT
// A simulated host's kernel (reactor/kernel.hpp): its fd table and the
// system calls of its sockets, answered from the simulated TCP and UDP
// (tcp.hpp, udp.hpp, network.hpp) with the C library's results and errno
// values. Given to the host's Scheduler (SchedulerOptions::kernel) and asked
// by its selector (host_selector.hpp) what is ready.
//
// Its fd numbers start at kFirstFd, far above the fds a test process has
// open, and each number is checked once, when first handed out, not to be
// open in the process: a call that reached the C library by mistake with
// one of them fails (EBADF) instead of touching a real file. Nothing here
// blocks: every socket behaves as non-blocking. Loop thread only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "reactor/kernel.hpp"

#include "host_clock.hpp"
#include "tcp.hpp"

namespace reactor::testing::sim::detail {

class Network;

// What the selector needs to know of one fd.
struct Readiness {
    bool open = false;  // false: not an fd of this host (EBADF)
    bool readable = false;
    bool writable = false;
};

class HostKernel final : public Kernel {
public:
    static constexpr int kFirstFd = 4096;

    HostKernel(Network& network, std::size_t host, std::shared_ptr<HostClock> clock);
    ~HostKernel() override;

    Readiness readiness(int fd) const noexcept;
    // The host crashed (host_crash.cpp): every socket vanishes at once, its
    // connections reset for their peers, its listeners and ports gone. From
    // then on every fd is unknown (EBADF), but close() succeeds: the loop's
    // objects, destroyed after, close what they held, and nothing more
    // crosses the wire.
    void crash() noexcept;
    bool crashed() const noexcept { return crashed_; }
    std::size_t open_fds() const noexcept { return open_; }
    // At most this many fds open at once (0: no limit), as RLIMIT_NOFILE
    // counts them: socket() and accept4() say EMFILE at the limit (accept4
    // leaving the connection queued). Host::set_fd_limit.
    void set_fd_limit(std::size_t limit) noexcept { fd_limit_ = limit; }
    // Host::set_resource_faults: which calls (Host::ResourceCall) fail for
    // want of a kernel resource, and how often.
    void set_resource_faults(unsigned percent, unsigned calls) noexcept {
        resource_percent_ = percent;
        resource_calls_ = calls;
    }

    std::string_view name() const noexcept override { return name_; }
    bool simulated() const noexcept override { return true; }
    const void* world() const noexcept override { return &network_; }  // one Network per World
    // The host's selector found nothing to do (host_selector.hpp): the
    // loop rests until its world steps it again.
    void set_loop_rests(bool rests) noexcept { loop_rests_ = rests; }
    bool loop_rests() noexcept override { return loop_rests_; }
    // A post to the resting loop: the world wakes its host (on its thread;
    // from another, the eventfd is written, which nothing watches).
    bool wake_loop() noexcept override;
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
    // World::kEpoch plus the host's time (its clock's, skew included) since the world began.
    std::chrono::system_clock::time_point wall_clock() const noexcept override;

private:
    struct Slot {
        std::unique_ptr<Socket> socket;
        bool reserved = false;  // open in the real process when first checked: never handed out
    };

    Socket* find(int fd) const noexcept;
    int add(std::unique_ptr<Socket> socket) noexcept;  // the lowest free number, or -1 and EMFILE
    void settle(Socket& s) const noexcept;              // connecting -> connected once answered
    void end(Socket& s) noexcept;                       // what close() does on the wire
    void drop_listener(Socket& s) noexcept;             // a listener's close or crash
    void bind_any_port(Socket& s) noexcept;

    // Datagram sockets (host_udp.cpp).
    Readiness datagram_readiness(const Socket& s) const noexcept;
    int bind_datagram(Socket& s, const sockaddr_in& want) noexcept;
    int bind_datagram_any(Socket& s) noexcept;
    int connect_datagram(Socket& s, const sockaddr_in& to) noexcept;
    ssize_t receive_datagram(Socket& s, void* buffer, std::size_t length, int flags, sockaddr* from,
                             socklen_t* from_length) noexcept;
    ssize_t send_datagram(Socket& s, const void* data, std::size_t length, const sockaddr* to,
                          socklen_t to_length) noexcept;
    ssize_t read_error_queue(Socket& s, msghdr* message) noexcept;

    Network& network_;
    std::size_t host_;
    std::shared_ptr<HostClock> clock_;
    std::string name_;
    std::vector<Slot> slots_;  // fd kFirstFd + i
    std::size_t open_ = 0;
    std::size_t fd_limit_ = 0;
    unsigned resource_percent_ = 0;
    unsigned resource_calls_ = 0;
    bool resource_fault(unsigned call, const char* name, int error);
    bool crashed_ = false;
    bool loop_rests_ = false;
    std::thread::id world_thread_ = std::this_thread::get_id();  // a world belongs to the thread that made it
};

}  // namespace reactor::testing::sim::detail
