// SPDX-License-Identifier: MIT
// reactor::detail::PackedAddress: an Address kept in 20 bytes instead of an
// Address's 136 (a sockaddr_storage), for objects a server keeps by the
// thousand (a Connection's peer). Stored inline: any IPv4 address, an IPv6
// address without a flow label or a scope (its port and 16 address bytes: the
// sockaddr_in6 itself is 28), and an unnamed Unix socket. Anything else (a
// Unix socket path, a link-local IPv6 peer's scope) goes to the heap.
// Part of connection.hpp; not an API.
#pragma once

#include <netinet/in.h>

#include <cstdint>

#include "reactor/export.hpp"
#include "reactor/net/address.hpp"

namespace reactor::detail {

class REACTOR_API PackedAddress {
public:
    PackedAddress() noexcept = default;
    explicit PackedAddress(const Address& address);
    PackedAddress(const PackedAddress&) = delete;
    PackedAddress& operator=(const PackedAddress&) = delete;
    PackedAddress& operator=(const Address& address);
    ~PackedAddress() { free_heap(); }

    Address get() const;

private:
    static constexpr std::uint8_t kIpv6 = 0xfe;    // bytes_: port, then address (network order)
    static constexpr std::uint8_t kOnHeap = 0xff;  // bytes_: an Address*
    void free_heap() noexcept;

    // len_ is 0 (unspecified), a sockaddr's length (its bytes as they are),
    // kIpv6 or kOnHeap. No alignment: a Connection packs its ints after it.
    unsigned char bytes_[19]{};
    std::uint8_t len_ = 0;
};

}  // namespace reactor::detail
