// SPDX-License-Identifier: MIT
// A simulated host's system calls (host_kernel.hpp): each answers as Linux
// would for a non-blocking TCP socket, from the state in tcp.hpp, and sends
// what crosses the wire through the Network. Datagram sockets:
// host_udp.cpp; options and fd queries: host_options.cpp; names:
// host_names.cpp.
#include "host_kernel.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "network.hpp"
#include "syscall_answers.hpp"

namespace reactor::testing::sim::detail {


HostKernel::HostKernel(Network& network, std::size_t host, std::shared_ptr<HostClock> clock)
    : network_(network), host_(host), clock_(std::move(clock)), name_(fmt::format("sim {}", network.name_of(host))) {}

HostKernel::~HostKernel() = default;

// A post from another thread is no part of the world (it would make a run
// depend on real time): not woken for, the host takes it at some later step.
// A crashed kernel's loop is being destroyed: nothing to wake.
bool HostKernel::wake_loop() noexcept {
    if (std::this_thread::get_id() != world_thread_) return false;
    if (!crashed_) network_.wake_for_post(host_);
    return true;
}

std::chrono::system_clock::time_point HostKernel::wall_clock() const noexcept {
    return World::kEpoch + std::chrono::duration_cast<std::chrono::system_clock::duration>(clock_->now() -
                                                                                            VirtualClock::kStart);
}

Socket* HostKernel::find(int fd) const noexcept {
    if (fd < kFirstFd || static_cast<std::size_t>(fd - kFirstFd) >= slots_.size()) return nullptr;
    return slots_[static_cast<std::size_t>(fd - kFirstFd)].socket.get();
}

int HostKernel::add(std::unique_ptr<Socket> socket) noexcept {
    if (fd_limit_ != 0 && open_ >= fd_limit_) return fail(EMFILE);
    std::size_t i = 0;
    while (i < slots_.size() && (slots_[i].socket || slots_[i].reserved)) ++i;
    try {
        while (i == slots_.size()) {
            // First use of this number: it must not be a real fd of the
            // process, or a stray C library call could reach a real file.
            const int number = kFirstFd + static_cast<int>(i);
            const bool real = ::fcntl(number, F_GETFD) != -1 || errno != EBADF;
            slots_.push_back(Slot{nullptr, real});
            if (real) ++i;
        }
    } catch (...) {
        return fail(ENOMEM);
    }
    slots_[i].socket = std::move(socket);
    ++open_;
    return kFirstFd + static_cast<int>(i);
}

void HostKernel::settle(Socket& s) const noexcept {
    if (s.state == Socket::State::connecting && s.side.self().established) s.state = Socket::State::connected;
}

Readiness HostKernel::readiness(int fd) const noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return {};
    if (s->udp) return datagram_readiness(*s);
    Readiness r{true, false, false};
    switch (s->state) {
    case Socket::State::fresh:
    case Socket::State::bound: break;
    case Socket::State::listening: r.readable = !s->accept_queue.empty(); break;
    case Socket::State::connecting: {
        const Side& me = s->side.self();
        r.writable = me.established || me.error != 0;  // the connect's answer: SO_ERROR says which
        if (!me.established) break;
        [[fallthrough]];
    }
    case Socket::State::connected: {
        const Side& me = s->side.self();
        r.readable = me.unread() > 0 || me.fin_in || me.reset || me.read_shut;
        r.writable = me.reset || me.fin_out || me.space() > 0;
        break;
    }
    }
    return r;
}

// Params::resource_fault_percent (Host::set_resource_faults): no draw at
// all when it is off for this call.
bool HostKernel::resource_fault(unsigned call, const char* name, int error) {
    if ((resource_calls_ & call) == 0 || resource_percent_ == 0) return false;
    return network_.draw_resource_fault(host_, resource_percent_, name, error);
}

// ---------------------------------------------------------------- sockets

int HostKernel::socket(int domain, int type, int /*protocol*/) noexcept {
    if (domain != AF_INET) return fail(EAFNOSUPPORT);  // IPv6 and Unix sockets: not simulated yet
    const int kind = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (kind != SOCK_STREAM && kind != SOCK_DGRAM) return fail(EPROTONOSUPPORT);
    // Params::resource_fault_percent: inet_create's sk_alloc failing gives
    // ENOBUFS. TCP sockets only (the library's connect reports it).
    if (kind == SOCK_STREAM && resource_fault(Host::socket_call, "socket", ENOBUFS)) return fail(ENOBUFS);
    std::unique_ptr<Socket> s(new (std::nothrow) Socket);
    if (!s) return fail(ENOMEM);
    if (kind == SOCK_DGRAM) {
        s->udp.reset(new (std::nothrow) UdpState);
        if (!s->udp) return fail(ENOMEM);
    }
    s->status_flags = O_RDWR | ((type & SOCK_NONBLOCK) ? O_NONBLOCK : 0);
    s->local.sin_family = AF_INET;
    return add(std::move(s));
}

int HostKernel::bind(int fd, const sockaddr* address, socklen_t length) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    sockaddr_in want{};
    if (!take_address(address, length, want)) return fail(EINVAL);
    if (s->state != Socket::State::fresh) return fail(EINVAL);
    const std::uint32_t ip = ntohl(want.sin_addr.s_addr);
    if (ip != INADDR_ANY && ip != network_.ip_of(host_)) return fail(EADDRNOTAVAIL);
    if (s->udp) return bind_datagram(*s, want);
    std::uint16_t port = ntohs(want.sin_port);
    if (port == 0) {
        auto free = network_.ephemeral_port(host_);
        if (!free) return fail(EADDRINUSE);
        port = *free;
    } else if (network_.port_in_use(host_, port)) {
        return fail(EADDRINUSE);
    }
    network_.claim_port(host_, port);
    s->owns_port = true;
    s->local = want;
    s->local.sin_port = htons(port);
    s->state = Socket::State::bound;
    return 0;
}

void HostKernel::bind_any_port(Socket& s) noexcept {
    if (s.owns_port) return;
    if (auto port = network_.ephemeral_port(host_)) {
        network_.claim_port(host_, *port);
        s.owns_port = true;
        s.local.sin_port = htons(*port);
    }
}

int HostKernel::listen(int fd, int backlog) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    if (s->udp) return fail(EOPNOTSUPP);
    if (s->state == Socket::State::fresh) bind_any_port(*s);
    if (s->state != Socket::State::fresh && s->state != Socket::State::bound &&
        s->state != Socket::State::listening)
        return fail(EINVAL);
    s->backlog = backlog;
    s->state = Socket::State::listening;
    network_.add_listener(host_, ntohs(s->local.sin_port), *s);
    return 0;
}

int HostKernel::accept4(int fd, sockaddr* address, socklen_t* length, int flags) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    if (s->udp) return fail(EOPNOTSUPP);
    if (s->state != Socket::State::listening) return fail(EINVAL);
    if (s->accept_queue.empty()) return fail(EAGAIN);
    if (fd_limit_ != 0 && open_ >= fd_limit_) return fail(EMFILE);  // the connection waits in the queue
    if (resource_fault(Host::accept_call, "accept4", ENOMEM)) return fail(ENOMEM);  // it waits too
    std::unique_ptr<Socket> accepted(new (std::nothrow) Socket);
    if (!accepted) return fail(ENOMEM);
    accepted->state = Socket::State::connected;
    accepted->status_flags = O_RDWR | ((flags & SOCK_NONBLOCK) ? O_NONBLOCK : 0);
    accepted->side = std::move(s->accept_queue.front());
    s->accept_queue.pop_front();
    accepted->local = accepted->side.self().address;
    const sockaddr_in peer = accepted->side.peer().address;
    const int number = add(std::move(accepted));
    if (number >= 0) give_address(peer, address, length);
    return number;
}

int HostKernel::connect(int fd, const sockaddr* address, socklen_t length) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    sockaddr_in to{};
    if (!take_address(address, length, to)) return fail(EAFNOSUPPORT);
    if (s->udp) return connect_datagram(*s, to);
    switch (s->state) {
    case Socket::State::connecting: return fail(s->side.self().established ? EISCONN : EALREADY);
    case Socket::State::connected:
    case Socket::State::listening: return fail(EISCONN);
    case Socket::State::fresh:
    case Socket::State::bound: break;
    }
    // tcp_connect's SYN could not be allocated: ENOBUFS, the socket as it was.
    if (resource_fault(Host::connect_call, "connect", ENOBUFS)) return fail(ENOBUFS);
    bind_any_port(*s);
    if (!s->owns_port) return fail(EADDRNOTAVAIL);
    s->local.sin_addr.s_addr = htonl(network_.ip_of(host_));
    try {
        network_.connect(host_, *s, to);
    } catch (...) {
        return fail(ENOBUFS);
    }
    s->state = Socket::State::connecting;
    return fail(EINPROGRESS);
}

int HostKernel::shutdown(int fd, int how) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    if (s->udp) return s->udp->connected ? 0 : fail(ENOTCONN);
    settle(*s);
    if (s->state != Socket::State::connected) return fail(ENOTCONN);
    Side& me = s->side.self();
    if ((how == SHUT_WR || how == SHUT_RDWR) && !me.fin_out && !me.reset) network_.send_fin(s->side);
    if (how == SHUT_RD || how == SHUT_RDWR) me.read_shut = true;
    return 0;
}

// A listener goes (closed, or its host crashed): its port is free again and
// every connection still waiting in its accept queue is reset.
void HostKernel::drop_listener(Socket& s) noexcept {
    network_.remove_listener(host_, ntohs(s.local.sin_port));
    for (SideRef& waiting : s.accept_queue) {
        waiting.self().open = false;
        network_.send_reset(waiting);
    }
    s.accept_queue.clear();
}

// close(2) of a connection: a reset if it was asked for (SO_LINGER zero) or
// if data arrived that nobody read (Linux does the same), else an end of
// stream after what was sent. What arrives from now on is answered RST.
void HostKernel::end(Socket& s) noexcept {
    if (s.udp) {
        if (s.owns_port) network_.unbind_udp(host_, ntohs(s.local.sin_port));
        return;
    }
    switch (s.state) {
    case Socket::State::listening:
        drop_listener(s);
        break;
    case Socket::State::connecting:
    case Socket::State::connected: {
        Side& me = s.side.self();
        me.open = false;
        if (me.reset || me.reset_sent || !me.established) break;
        if (s.linger_zero || me.unread() > 0) {
            network_.send_reset(s.side);
        } else if (!me.fin_out) {
            network_.send_fin(s.side);
        }
        break;
    }
    case Socket::State::fresh:
    case Socket::State::bound: break;
    }
    if (s.owns_port) network_.release_port(host_, ntohs(s.local.sin_port));
}

int HostKernel::close(int fd) noexcept {
    Socket* s = find(fd);
    if (s == nullptr && crashed_) return 0;  // an fd the crash took: it is gone already
    if (s == nullptr) return fail(EBADF);
    try {
        end(*s);
    } catch (...) {
        // The network could not schedule the FIN or RST (out of memory):
        // the fd is gone all the same, as close(2)'s is.
    }
    slots_[static_cast<std::size_t>(fd - kFirstFd)].socket.reset();
    --open_;
    return 0;
}

// ---------------------------------------------------------------- data

ssize_t HostKernel::recv(int fd, void* buffer, std::size_t length, int flags) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    if (s->udp) return receive_datagram(*s, buffer, length, flags, nullptr, nullptr);
    settle(*s);
    if (s->state != Socket::State::connected) return fail(ENOTCONN);
    Side& me = s->side.self();
    if (me.unread() > 0 && !me.read_shut) {
        if (resource_fault(Host::recv_call, "recv", ENOMEM)) return fail(ENOMEM);  // nothing is taken
        std::size_t n = std::min(length, me.unread());
        if (n > 1 && network_.io_random().percent(network_.params().short_read_percent))
            n = static_cast<std::size_t>(network_.io_random().between(1, n - 1));
        std::memcpy(buffer, me.rx.data() + me.rx_head, n);
        if ((flags & MSG_PEEK) != 0) return static_cast<ssize_t>(n);
        me.rx_head += n;
        if (me.rx_head == me.rx.size() || me.rx_head > 64 * 1024) {
            me.rx.erase(0, me.rx_head);  // keeps the buffer from growing without end
            me.rx_head = 0;
        }
        network_.consumed(s->side, n);
        return static_cast<ssize_t>(n);
    }
    if (me.reset && !me.reset_reported) {
        me.reset_reported = true;
        return fail(ECONNRESET);
    }
    if (me.reset || me.fin_in || me.read_shut) return 0;
    return fail(EAGAIN);
}

ssize_t HostKernel::send(int fd, const void* data, std::size_t length, int /*flags*/) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    if (s->udp) return send_datagram(*s, data, length, nullptr, 0);
    settle(*s);
    if (s->state == Socket::State::connecting) {
        Side& me = s->side.self();
        if (me.error != 0) return fail(std::exchange(me.error, 0));
        return fail(EAGAIN);
    }
    if (s->state != Socket::State::connected) return fail(ENOTCONN);
    Side& me = s->side.self();
    if (me.reset) {
        if (me.reset_reported) return fail(EPIPE);
        me.reset_reported = true;
        return fail(ECONNRESET);
    }
    if (me.fin_out) return fail(EPIPE);
    if (length == 0) return 0;
    std::size_t n = std::min(length, me.space());
    if (n == 0) return fail(EAGAIN);
    if (resource_fault(Host::send_call, "send", ENOBUFS)) return fail(ENOBUFS);  // nothing is sent
    if (n > 1 && network_.io_random().percent(network_.params().short_write_percent))
        n = static_cast<std::size_t>(network_.io_random().between(1, n - 1));
    try {
        network_.send(s->side, std::string(static_cast<const char*>(data), n));
    } catch (...) {
        return fail(ENOBUFS);
    }
    return static_cast<ssize_t>(n);
}

ssize_t HostKernel::read(int fd, void* buffer, std::size_t length) noexcept { return recv(fd, buffer, length, 0); }
ssize_t HostKernel::write(int fd, const void* data, std::size_t length) noexcept {
    return send(fd, data, length, 0);
}

ssize_t HostKernel::recvfrom(int fd, void* buffer, std::size_t length, int flags, sockaddr* from,
                             socklen_t* from_length) noexcept {
    if (Socket* s = find(fd); s != nullptr && s->udp)
        return receive_datagram(*s, buffer, length, flags, from, from_length);
    const ssize_t n = recv(fd, buffer, length, flags);
    if (n >= 0 && from != nullptr) getpeername(fd, from, from_length);
    return n;
}

ssize_t HostKernel::sendto(int fd, const void* data, std::size_t length, int flags, const sockaddr* to,
                           socklen_t to_length) noexcept {
    if (Socket* s = find(fd); s != nullptr && s->udp) return send_datagram(*s, data, length, to, to_length);
    return send(fd, data, length, flags);  // a TCP socket ignores the address, as Linux's does
}

// Only UdpSocket's MSG_ERRQUEUE reads come here (host_udp.cpp); a TCP
// socket's error queue is always empty.
ssize_t HostKernel::recvmsg(int fd, msghdr* message, int flags) noexcept {
    Socket* s = find(fd);
    if (s == nullptr) return fail(EBADF);
    if ((flags & MSG_ERRQUEUE) == 0) return fail(EOPNOTSUPP);  // not made by the library
    return s->udp ? read_error_queue(*s, message) : fail(EAGAIN);
}

}  // namespace reactor::testing::sim::detail
