// SPDX-License-Identifier: MIT
#include "reactor/net/detail/packed_address.hpp"

#include <cstring>

namespace reactor::detail {

static_assert(sizeof(PackedAddress) == 20 && alignof(PackedAddress) == 1);
static_assert(sizeof(sockaddr_in) <= sizeof(PackedAddress) - 1, "IPv4 inline, as it is");
static_assert(sizeof(in_port_t) + sizeof(in6_addr) <= sizeof(PackedAddress) - 1, "IPv6 inline, packed");
static_assert(sizeof(Address*) <= sizeof(PackedAddress) - 1);

PackedAddress::PackedAddress(const Address& address) { *this = address; }

PackedAddress& PackedAddress::operator=(const Address& address) {
    free_heap();
    sockaddr_in6 in6{};  // stays unspecified unless the address is IPv6
    if (address.family() == AF_INET6 && address.size() == sizeof in6) std::memcpy(&in6, address.data(), sizeof in6);
    if (in6.sin6_family == AF_INET6 && in6.sin6_flowinfo == 0 && in6.sin6_scope_id == 0) {
        // Its port and address bytes alone: 18 of the 28.
        std::memcpy(bytes_, &in6.sin6_port, sizeof in6.sin6_port);
        std::memcpy(bytes_ + sizeof in6.sin6_port, &in6.sin6_addr, sizeof in6.sin6_addr);
        len_ = kIpv6;
    } else if (address.size() <= sizeof bytes_) {
        std::memcpy(bytes_, address.data(), address.size());
        len_ = static_cast<std::uint8_t>(address.size());
    } else {
        Address* heap = new Address(address);
        std::memcpy(bytes_, &heap, sizeof heap);
        len_ = kOnHeap;
    }
    return *this;
}

Address PackedAddress::get() const {
    if (len_ == kOnHeap) {
        Address* heap = nullptr;
        std::memcpy(&heap, bytes_, sizeof heap);
        return *heap;
    }
    if (len_ == kIpv6) {
        sockaddr_in6 in6{};
        in6.sin6_family = AF_INET6;
        std::memcpy(&in6.sin6_port, bytes_, sizeof in6.sin6_port);
        std::memcpy(&in6.sin6_addr, bytes_ + sizeof in6.sin6_port, sizeof in6.sin6_addr);
        return Address::from_sockaddr(reinterpret_cast<const sockaddr*>(&in6), sizeof in6);
    }
    if (len_ == 0) return Address();
    sockaddr_storage raw{};  // aligned, as from_sockaddr reads it as a sockaddr
    std::memcpy(&raw, bytes_, len_);
    return Address::from_sockaddr(reinterpret_cast<const sockaddr*>(&raw), len_);
}

void PackedAddress::free_heap() noexcept {
    if (len_ != kOnHeap) return;
    Address* heap = nullptr;
    std::memcpy(&heap, bytes_, sizeof heap);
    delete heap;
    len_ = 0;
}

}  // namespace reactor::detail
