// SPDX-License-Identifier: MIT
// The simulated TCP's state: a Link is one connection, two Sides, each the
// state one endpoint's kernel keeps for it. A Socket is what a host's fd
// names: a fresh or bound socket, a listener with its accept queue, one
// Side of a Link, or a datagram socket (udp.hpp). The Network (network.hpp)
// moves bytes between Sides; the HostKernel (host_kernel.hpp) answers the
// system calls from a Socket.
//
// The model, coarse on purpose (docs/simulation.md to come says so): every
// byte a send() accepts is in flight at once, as one segment, and arrives
// after the link's latency (plus jitter, never overtaking the segment before
// it: TCP neither reorders nor duplicates). A direction holds at most
// `capacity` bytes between the sender and the reader (send buffer and
// receive window together, drawn per connection from the seed): beyond it
// send() says EAGAIN, and a read frees the space at once. No Nagle, no
// window scaling, no retransmission (nothing is lost), no TIME_WAIT.
// Loop thread only.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "reactor/clock.hpp"

#include "udp.hpp"

namespace reactor::testing::sim::detail {

struct Side {
    std::size_t host = 0;
    sockaddr_in address{};  // this side's address; the other Side's is its peer

    // Received and not yet read: rx[rx_head..].
    std::string rx;
    std::size_t rx_head = 0;
    bool fin_in = false;          // the peer's FIN arrived: reads end after rx
    bool reset = false;           // a RST arrived (or the connect was refused)
    bool reset_reported = false;  // ECONNRESET was returned once: now EPIPE / end of stream
    bool read_shut = false;       // shutdown(SHUT_RD)

    bool fin_out = false;     // we sent FIN (shutdown(SHUT_WR) or close)
    bool established = false; // client: the answer to its connect arrived; server: from the start
    bool open = true;         // an fd or an accept queue holds it; false: closed, what arrives is answered RST
    bool reset_sent = false;  // this side sent a RST: it answers nothing more
    int error = 0;            // SO_ERROR: a connect refused, unreachable

    std::size_t sent = 0;         // bytes this side sent in all (a drawn break counts them)
    std::size_t outstanding = 0;  // sent by this side, not yet read by the peer
    std::size_t capacity = 0;     // the most `outstanding` may be
    Duration latency{};           // this side's segments to the peer take this long, plus jitter
    TimePoint last_arrival{};     // the latest arrival scheduled: later ones never come earlier

    std::size_t unread() const noexcept { return rx.size() - rx_head; }
    std::size_t space() const noexcept { return outstanding < capacity ? capacity - outstanding : 0; }
};

struct Link {
    std::uint64_t id = 0;  // in order of connect(): names the link in the trace
    Side side[2];          // [0] the connecting side, [1] the accepting side
    // A drawn fault (Params::reset_percent): once side[break_from] has sent
    // break_after bytes, the link breaks: both sides are reset, and what
    // either sends from then on is lost.
    int syn_retries = 0;  // connect requests sent again to a host that was down
    int break_from = -1;
    std::size_t break_after = 0;
    bool broken = false;
};

// A Side of a Link, as held by an fd or an accept queue.
struct SideRef {
    std::shared_ptr<Link> link;
    int index = 0;
    Side& self() const noexcept { return link->side[index]; }
    Side& peer() const noexcept { return link->side[1 - index]; }
};

struct Socket {
    enum class State { fresh, bound, listening, connecting, connected };
    State state = State::fresh;
    int status_flags = 0;  // fcntl F_GETFL/F_SETFL (O_NONBLOCK is kept, never obeyed: nothing blocks)
    sockaddr_in local{};   // from bind(), or the ephemeral port of connect()
    bool owns_port = false;  // bind() or connect() claimed local's port (an accepted socket shares its listener's)
    bool linger_zero = false;  // SO_LINGER {1, 0}: close() resets
    // Listening: the connections that arrived and wait for accept4().
    int backlog = 0;
    std::deque<SideRef> accept_queue;
    // Connecting or connected.
    SideRef side;
    // A datagram socket (SOCK_DGRAM): its state, udp.hpp. Its `state` is
    // fresh until bound (by bind, connect or a first sendto), then bound.
    std::unique_ptr<UdpState> udp;
};

}  // namespace reactor::testing::sim::detail
