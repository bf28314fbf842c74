// SPDX-License-Identifier: MIT
#include "reactor/net/address.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "reactor/detail/kernel_calls.hpp"
#include "reactor/net/resolve_error.hpp"

namespace reactor {

Address::Address() noexcept { std::memset(&storage_, 0, sizeof storage_); }

Address Address::parse(std::string_view numeric_host, std::uint16_t port) {
    // inet_pton needs a NUL-terminated string; INET6_ADDRSTRLEN bounds any valid input.
    char text[INET6_ADDRSTRLEN + 1];
    if (numeric_host.empty() || numeric_host.size() >= sizeof text)
        throw std::invalid_argument(fmt::format("reactor: '{}' is not a numeric IPv4 or IPv6 address", numeric_host));
    std::memcpy(text, numeric_host.data(), numeric_host.size());
    text[numeric_host.size()] = '\0';

    Address a;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage_);
    if (::inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        a.len_ = sizeof(sockaddr_in);
        return a;
    }
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage_);
    if (::inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        a.len_ = sizeof(sockaddr_in6);
        return a;
    }
    throw std::invalid_argument(fmt::format("reactor: '{}' is not a numeric IPv4 or IPv6 address", numeric_host));
}

Address Address::parse(std::string_view host_and_port) {
    auto bad = [&] {
        return std::invalid_argument(
            fmt::format("reactor: '{}' is not 'a.b.c.d:port' or '[v6]:port'", host_and_port));
    };
    auto colon = host_and_port.rfind(':');
    if (colon == std::string_view::npos) throw bad();
    std::string_view host = host_and_port.substr(0, colon);
    std::string_view port_text = host_and_port.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string_view::npos) {
        throw bad();  // an IPv6 address without brackets is ambiguous
    }
    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc{} || end != port_text.data() + port_text.size() || port > 65535 || port_text.empty())
        throw bad();
    return parse(host, static_cast<std::uint16_t>(port));
}

Address Address::unix_path(std::string_view path) {
    Address a;
    auto* un = reinterpret_cast<sockaddr_un*>(&a.storage_);
    // The kernel wants a NUL-terminated path for a file; abstract names are
    // counted by length instead, so the terminator is not needed there.
    if (path.empty() || path.size() >= sizeof un->sun_path)
        throw std::invalid_argument(
            fmt::format("reactor: Unix socket path must be 1..{} bytes, got {}", sizeof un->sun_path - 1, path.size()));
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, path.data(), path.size());
    if (path.front() == '@') un->sun_path[0] = '\0';
    a.len_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + (path.front() == '@' ? 0 : 1));
    return a;
}

namespace {

// getaddrinfo for one host and service (either may be null), every IPv4 and
// IPv6 address once; `port` (if not negative) replaces the service's.
std::vector<Address> lookup(Kernel* kernel, std::string_view host, const char* service, int port,
                            const ResolveOptions& options) {
    // getaddrinfo would read an empty host as "the local machine" (or look ""
    // up): refused here, without a lookup; so is an empty service.
    if (host.empty())
        throw std::system_error(make_error_code(resolve_errc::no_name), "resolve host '': empty host name");
    if (service && !*service)
        throw std::system_error(make_error_code(resolve_errc::service),
                                fmt::format("resolve host '{}' service '': empty service", host));
    addrinfo hints{};
    hints.ai_family = options.family;
    hints.ai_socktype = SOCK_STREAM;  // one entry per address, not one per socket type
    if (options.numeric_host) hints.ai_flags |= AI_NUMERICHOST;
    addrinfo* list = nullptr;
    const std::string name(host);
    const int rc = detail::sys::getaddrinfo(kernel, name.c_str(), service, &hints, &list);
    const int saved_errno = errno;
    const std::string_view service_text = service ? std::string_view(service) : std::string_view();
    if (rc != 0) throw resolve_error(rc, host, service_text, saved_errno);
    std::vector<Address> out;
    for (addrinfo* ai = list; ai; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
        if (port >= 0) {  // the list is ours to change; the scope of a link-local IPv6 address stays
            const auto net_port = htons(static_cast<std::uint16_t>(port));
            if (ai->ai_family == AF_INET) reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_port = net_port;
            else reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_port = net_port;
        }
        const Address a = Address::from_sockaddr(ai->ai_addr, ai->ai_addrlen);
        if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
    }
    detail::sys::freeaddrinfo(kernel, list);
    if (out.empty()) throw resolve_error(EAI_NODATA, host, service_text);
    return out;
}

}  // namespace

std::vector<Address> Address::resolve(std::string_view host, std::uint16_t port) {
    return resolve(nullptr, host, port);
}

std::vector<Address> Address::resolve(Kernel* kernel, std::string_view host, std::uint16_t port) {
    try {
        return {parse(host, port)};
    } catch (const std::invalid_argument&) {
        // not numeric: fall through to a real lookup
    }
    return lookup(kernel, host, nullptr, port, ResolveOptions{});
}

std::vector<Address> Address::resolve(std::string_view host, std::string_view service, const ResolveOptions& options) {
    return resolve(nullptr, host, service, options);
}

std::vector<Address> Address::resolve(Kernel* kernel, std::string_view host, std::string_view service,
                                      const ResolveOptions& options) {
    const std::string service_text(service);
    return lookup(kernel, host, service_text.c_str(), -1, options);
}

Address Address::from_sockaddr(const sockaddr* sa, socklen_t len) {
    Address a;
    len = std::min<socklen_t>(len, sizeof a.storage_);
    std::memcpy(&a.storage_, sa, len);
    a.len_ = len;
    return a;
}

Address Address::local_of(int fd) { return local_of(nullptr, fd); }
Address Address::peer_of(int fd) { return peer_of(nullptr, fd); }

Address Address::local_of(Kernel* kernel, int fd) {
    Address a;
    socklen_t len = sizeof a.storage_;
    if (detail::sys::getsockname(kernel, fd, reinterpret_cast<sockaddr*>(&a.storage_), &len) != 0) return Address();
    a.len_ = len;
    return a;
}

Address Address::peer_of(Kernel* kernel, int fd) {
    Address a;
    socklen_t len = sizeof a.storage_;
    if (detail::sys::getpeername(kernel, fd, reinterpret_cast<sockaddr*>(&a.storage_), &len) != 0) return Address();
    a.len_ = len;
    return a;
}

std::uint16_t Address::port() const noexcept {
    if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
    if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
    return 0;
}

Address Address::with_port(std::uint16_t port) const {
    Address copy = *this;
    if (family() == AF_INET) {
        reinterpret_cast<sockaddr_in*>(&copy.storage_)->sin_port = htons(port);
    } else if (family() == AF_INET6) {
        reinterpret_cast<sockaddr_in6*>(&copy.storage_)->sin6_port = htons(port);
    } else {
        throw std::invalid_argument(fmt::format("Address::with_port: {} has no port", to_string()));
    }
    return copy;
}

std::string Address::host() const {
    char text[INET6_ADDRSTRLEN];
    if (family() == AF_INET) {
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, text, sizeof text);
        return text;
    }
    if (family() == AF_INET6) {
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, text, sizeof text);
        return text;
    }
    if (family() == AF_UNIX) {
        const auto* un = reinterpret_cast<const sockaddr_un*>(&storage_);
        auto offset = offsetof(sockaddr_un, sun_path);
        if (len_ <= offset) return {};  // unnamed (e.g. the client end of a connection)
        std::string path(un->sun_path, len_ - offset);
        if (path[0] == '\0') {
            path[0] = '@';  // abstract
        } else if (auto nul = path.find('\0'); nul != std::string::npos) {
            path.resize(nul);
        }
        return path;
    }
    return {};
}

std::string Address::to_string() const {
    switch (family()) {
    case AF_INET: return fmt::format("{}:{}", host(), port());
    case AF_INET6: return fmt::format("[{}]:{}", host(), port());
    case AF_UNIX: return fmt::format("unix:{}", host());
    default: return "unspecified";
    }
}

bool operator==(const Address& a, const Address& b) noexcept {
    return a.len_ == b.len_ && std::memcmp(&a.storage_, &b.storage_, a.len_) == 0;
}

}  // namespace reactor
