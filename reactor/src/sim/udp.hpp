// SPDX-License-Identifier: MIT
// The simulated UDP's state: what a datagram socket of a host's kernel
// holds (host_udp.cpp answers its system calls; network_udp.cpp carries its
// datagrams between hosts).
//
// The model: a datagram sendto() accepts is on the wire at once (no send
// buffer: sendto never says EAGAIN) and arrives after the pair's latency
// plus jitter, in the order sent unless Params draws it lost, duplicated or
// reordered (udp_*_percent). The receiver keeps what arrives, up to
// kReceiveBuffer bytes, then drops (as a full SO_RCVBUF does). A datagram to
// a port nobody bound on a host that is up (or to a connected socket from a
// stranger) is answered by an ICMP port-unreachable, a latency later; as on
// Linux, the sender's socket then holds ECONNREFUSED as its pending error
// (SO_ERROR; it fails the next recvfrom or sendto) if it is connected or
// asked for IP_RECVERR, and with IP_RECVERR an entry on its error queue
// (recvmsg MSG_ERRQUEUE) naming the datagram's destination. A datagram to a
// host that is down, or to an address that is no host's, is lost without a
// word. Partitions and clogged links (Params) hold TCP only. Loop thread only.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <deque>
#include <string>

namespace reactor::testing::sim::detail {

struct Datagram {
    sockaddr_in from{};
    std::string bytes;
};

// An ICMP error queued for recvmsg(MSG_ERRQUEUE): its errno and the
// destination of the datagram that caused it.
struct IcmpError {
    int error = 0;
    sockaddr_in destination{};
};

struct UdpState {
    // Linux's default SO_RCVBUF (net.core.rmem_default), counted in payload bytes.
    static constexpr std::size_t kReceiveBuffer = 212992;

    std::deque<Datagram> inbox;
    std::size_t inbox_bytes = 0;
    std::deque<IcmpError> errors;
    int pending_error = 0;  // sk_err: returned once by recvfrom, sendto or SO_ERROR
    bool recverr = false;   // IP_RECVERR
    bool connected = false;
    sockaddr_in peer{};     // connect()'s address: only its datagrams are taken
};

}  // namespace reactor::testing::sim::detail
