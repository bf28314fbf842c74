// SPDX-License-Identifier: MIT
// getaddrinfo(3) inside a simulated world: the names of its hosts and
// numeric IPv4 addresses, answered at once from the world's table, never
// from DNS or /etc/hosts ("localhost" included: a host's loopback is not
// simulated yet). The answer is one IPv4 entry; what it returns is freed by
// this kernel's freeaddrinfo.
#include "host_kernel.hpp"

#include <arpa/inet.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <new>
#include <string_view>

#include "network.hpp"

namespace reactor::testing::sim::detail {

namespace {

// One allocation per answer: the entry and the address it points to.
struct Answer {
    addrinfo entry;
    sockaddr_in address;
};

}  // namespace

int HostKernel::getaddrinfo(const char* node, const char* service, const addrinfo* hints,
                            addrinfo** result) noexcept {
    if (node == nullptr || result == nullptr) return EAI_NONAME;
    const int family = hints ? hints->ai_family : AF_UNSPEC;
    if (family != AF_UNSPEC && family != AF_INET) return EAI_FAMILY;
    std::uint16_t port = 0;
    if (service != nullptr && *service != '\0') {
        const std::string_view text(service);
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), port);
        if (error != std::errc() || end != text.data() + text.size()) return EAI_SERVICE;  // no /etc/services here
    }
    in_addr ip{};
    if (::inet_pton(AF_INET, node, &ip) != 1) {
        if (hints && (hints->ai_flags & AI_NUMERICHOST) != 0) return EAI_NONAME;
        auto host = network_.host_named(node);
        if (!host) return EAI_NONAME;
        ip.s_addr = htonl(network_.ip_of(*host));
    }
    auto* answer = new (std::nothrow) Answer{};
    if (answer == nullptr) return EAI_MEMORY;
    answer->address.sin_family = AF_INET;
    answer->address.sin_port = htons(port);
    answer->address.sin_addr = ip;
    answer->entry.ai_family = AF_INET;
    answer->entry.ai_socktype = hints && hints->ai_socktype != 0 ? hints->ai_socktype : SOCK_STREAM;
    answer->entry.ai_protocol = IPPROTO_TCP;
    answer->entry.ai_addrlen = sizeof answer->address;
    answer->entry.ai_addr = reinterpret_cast<sockaddr*>(&answer->address);
    *result = &answer->entry;
    return 0;
}

void HostKernel::freeaddrinfo(addrinfo* list) noexcept {
    // `entry` is Answer's first member: the pointer given out is the Answer's.
    delete reinterpret_cast<Answer*>(list);
}

}  // namespace reactor::testing::sim::detail
