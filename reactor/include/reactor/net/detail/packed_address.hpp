// SPDX-License-Identifier: MIT
// reactor::detail::PackedAddress: an Address kept in 32 bytes instead of an
// Address's 136 (a sockaddr_storage), for objects a server keeps by the
// thousand (a Connection keeps two). Any IPv4 or IPv6 address, and an
// unnamed Unix socket, is stored inline; a Unix socket path goes to the heap.
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
    static constexpr std::uint8_t kOnHeap = 0xff;
    void free_heap() noexcept;

    // The sockaddr bytes (len_ of them), or, when len_ is kOnHeap, an Address*.
    alignas(8) unsigned char bytes_[sizeof(sockaddr_in6)]{};
    std::uint8_t len_ = 0;  // 0: unspecified
};

}  // namespace reactor::detail
