// SPDX-License-Identifier: MIT
#include "reactor/net/detail/packed_address.hpp"

#include <cstring>

namespace reactor::detail {

static_assert(sizeof(sockaddr_in6) < 0xff, "an inline length must not read as kOnHeap");
static_assert(sizeof(Address*) <= sizeof(sockaddr_in6));

PackedAddress::PackedAddress(const Address& address) { *this = address; }

PackedAddress& PackedAddress::operator=(const Address& address) {
    free_heap();
    if (address.size() <= sizeof bytes_) {
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
    if (len_ == 0) return Address();
    return Address::from_sockaddr(reinterpret_cast<const sockaddr*>(bytes_), len_);
}

void PackedAddress::free_heap() noexcept {
    if (len_ != kOnHeap) return;
    Address* heap = nullptr;
    std::memcpy(&heap, bytes_, sizeof heap);
    delete heap;
    len_ = 0;
}

}  // namespace reactor::detail
