// SPDX-License-Identifier: MIT
// A host's kernel when the host crashes (host_kernel.hpp, World::crash):
// what its peers see. A crashed machine sends nothing; its peers learn of
// it when they next send and a rebooted kernel answers RST, or at their
// keepalive. The simulation resets them at once (one latency later), which
// is what a peer sees in the common case of a connection in use, and keeps
// every run bounded.
#include <arpa/inet.h>

#include "host_kernel.hpp"
#include "network.hpp"

namespace reactor::testing::sim::detail {

void HostKernel::crash() noexcept {
    if (crashed_) return;
    crashed_ = true;
    for (Slot& slot : slots_) {
        if (!slot.socket) continue;
        Socket& s = *slot.socket;
        if (s.udp) {
            if (s.owns_port) network_.unbind_udp(host_, ntohs(s.local.sin_port));
            slot.socket.reset();
            continue;
        }
        try {
            switch (s.state) {
            case Socket::State::listening:
                drop_listener(s);
                break;
            case Socket::State::connecting:
            case Socket::State::connected: {
                // A connect not yet answered: the answer finds the side
                // closed and resets the connection the server accepted.
                Side& me = s.side.self();
                me.open = false;
                if (me.established && !me.reset && !me.reset_sent) network_.send_reset(s.side);
                break;
            }
            case Socket::State::fresh:
            case Socket::State::bound: break;
            }
        } catch (...) {
            // The reset could not be scheduled (out of memory): the peer
            // keeps a half-open connection, as after a real crash.
        }
        if (s.owns_port) network_.release_port(host_, ntohs(s.local.sin_port));
        slot.socket.reset();
    }
    open_ = 0;
}

}  // namespace reactor::testing::sim::detail
