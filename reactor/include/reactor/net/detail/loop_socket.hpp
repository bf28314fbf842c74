// SPDX-License-Identifier: MIT
// reactor::detail::LoopSocket: what the loop's LoopSockets service (in the
// library's sources) sees of a Listener or a UdpSocket: the way to close it
// when the loop ends. Part of listener.hpp and udp_socket.hpp.
#pragma once

#include "reactor/export.hpp"
#include "reactor/intrusive_list.hpp"

namespace reactor::detail {

class REACTOR_API LoopSocket : public ListMember<LoopSocket> {
public:
    virtual void close_with_loop() noexcept = 0;

protected:
    LoopSocket() = default;
    LoopSocket(const LoopSocket&) = delete;
    LoopSocket& operator=(const LoopSocket&) = delete;
    ~LoopSocket() = default;  // leaves the service's list (ListMember)
};

}  // namespace reactor::detail
