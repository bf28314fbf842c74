// SPDX-License-Identifier: MIT
// A simulated host's datagram sockets (host_kernel.hpp, udp.hpp): the
// system calls UdpSocket makes, answered as Linux answers them for a
// non-blocking UDP socket, its pending error and its error queue included.
#include <arpa/inet.h>
#include <linux/errqueue.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "host_kernel.hpp"
#include "network.hpp"
#include "syscall_answers.hpp"

namespace reactor::testing::sim::detail {

namespace {
// The largest payload of a UDP datagram over IPv4.
constexpr std::size_t kMaxPayload = 65507;
}  // namespace

Readiness HostKernel::datagram_readiness(const Socket& s) const noexcept {
    const UdpState& u = *s.udp;
    return Readiness{true, !u.inbox.empty() || u.pending_error != 0 || !u.errors.empty(), true};
}

// Ports are UDP's own, apart from TCP's: a host may listen on TCP 7 and
// bind UDP 7.
int HostKernel::bind_datagram(Socket& s, const sockaddr_in& want) noexcept {
    std::uint16_t port = ntohs(want.sin_port);
    if (port == 0) {
        auto free = network_.udp_ephemeral_port(host_);
        if (!free) return fail(EADDRINUSE);
        port = *free;
    } else if (network_.udp_port_in_use(host_, port)) {
        return fail(EADDRINUSE);
    }
    try {
        network_.bind_udp(host_, port, s);
    } catch (...) {
        return fail(ENOBUFS);
    }
    s.owns_port = true;
    s.local = want;
    s.local.sin_port = htons(port);
    s.state = Socket::State::bound;
    return 0;
}

// An unbound socket's first sendto or connect binds it to a free port, as
// Linux's autobind does.
int HostKernel::bind_datagram_any(Socket& s) noexcept {
    if (s.owns_port) return 0;
    sockaddr_in any{};
    any.sin_family = AF_INET;
    return bind_datagram(s, any);
}

// Nothing crosses the wire: the socket takes the peer's datagrams only, and
// its local address narrows to the host's (the source that routes there).
int HostKernel::connect_datagram(Socket& s, const sockaddr_in& to) noexcept {
    if (bind_datagram_any(s) != 0) return -1;
    s.local.sin_addr.s_addr = htonl(network_.ip_of(host_));
    s.udp->connected = true;
    s.udp->peer = to;
    return 0;
}

// A pending error first (Linux's __skb_try_recv_datagram), then the oldest
// datagram, whole or cut to `length` (the rest of it is lost, as with
// MSG_TRUNC unasked).
ssize_t HostKernel::receive_datagram(Socket& s, void* buffer, std::size_t length, int flags, sockaddr* from,
                                     socklen_t* from_length) noexcept {
    UdpState& u = *s.udp;
    if (u.pending_error != 0) return fail(std::exchange(u.pending_error, 0));
    if (u.inbox.empty()) return fail(EAGAIN);
    const Datagram& d = u.inbox.front();
    const std::size_t n = std::min(length, d.bytes.size());
    std::memcpy(buffer, d.bytes.data(), n);
    give_address(d.from, from, from_length);
    if ((flags & MSG_PEEK) == 0) {
        u.inbox_bytes -= d.bytes.size();
        u.inbox.pop_front();
    }
    return static_cast<ssize_t>(n);
}

ssize_t HostKernel::send_datagram(Socket& s, const void* data, std::size_t length, const sockaddr* to,
                                  socklen_t to_length) noexcept {
    UdpState& u = *s.udp;
    sockaddr_in destination{};
    if (to != nullptr) {
        if (!take_address(to, to_length, destination)) return fail(EINVAL);
    } else if (u.connected) {
        destination = u.peer;
    } else {
        return fail(EDESTADDRREQ);
    }
    if (u.pending_error != 0) return fail(std::exchange(u.pending_error, 0));
    if (length > kMaxPayload) return fail(EMSGSIZE);
    if (bind_datagram_any(s) != 0) return -1;
    sockaddr_in source = s.local;
    source.sin_addr.s_addr = htonl(network_.ip_of(host_));
    try {
        network_.send_datagram(host_, source, destination, std::string(static_cast<const char*>(data), length));
    } catch (...) {
        return fail(ENOBUFS);
    }
    return static_cast<ssize_t>(length);
}

// recvmsg(MSG_ERRQUEUE): the oldest ICMP error, as Linux's ip_recv_error
// gives it: the failed datagram's destination as msg_name, and one
// IP_RECVERR control message, the extended error then the reporting host's
// address. The next entry's error, if any, becomes the pending one
// (sock_dequeue_err_skb); none left clears it.
ssize_t HostKernel::read_error_queue(Socket& s, msghdr* message) noexcept {
    UdpState& u = *s.udp;
    if (u.errors.empty()) return fail(EAGAIN);
    const IcmpError e = u.errors.front();
    u.errors.pop_front();
    u.pending_error = u.errors.empty() ? 0 : u.errors.front().error;
    message->msg_flags = MSG_ERRQUEUE;
    if (message->msg_name != nullptr) {
        socklen_t length = message->msg_namelen;
        give_address(e.destination, static_cast<sockaddr*>(message->msg_name), &length);
        message->msg_namelen = length;
    }
    constexpr std::size_t payload = sizeof(sock_extended_err) + sizeof(sockaddr_in);
    if (message->msg_control == nullptr || message->msg_controllen < CMSG_SPACE(payload)) {
        message->msg_flags |= MSG_CTRUNC;
        message->msg_controllen = 0;
        return 0;
    }
    cmsghdr* c = CMSG_FIRSTHDR(message);
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_RECVERR;
    c->cmsg_len = CMSG_LEN(payload);
    sock_extended_err ee{};
    ee.ee_errno = static_cast<std::uint32_t>(e.error);
    ee.ee_origin = SO_EE_ORIGIN_ICMP;
    ee.ee_type = 3;  // destination unreachable
    ee.ee_code = 3;  // port unreachable
    sockaddr_in offender{};
    offender.sin_family = AF_INET;
    offender.sin_addr = e.destination.sin_addr;
    std::memcpy(CMSG_DATA(c), &ee, sizeof ee);
    std::memcpy(CMSG_DATA(c) + sizeof ee, &offender, sizeof offender);
    message->msg_controllen = CMSG_SPACE(payload);
    return 0;
}

}  // namespace reactor::testing::sim::detail
