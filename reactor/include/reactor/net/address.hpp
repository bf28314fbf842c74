// SPDX-License-Identifier: MIT
// reactor::Address: a socket address by value (IPv4, IPv6 or Unix domain).
//
// A plain copyable value that owns no resource. parse() and unix_path() never
// touch the network; resolve() is the one member that BLOCKS (getaddrinfo).
// Every member may be called from any thread.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <reactor/export.hpp>

namespace reactor {

class Kernel;  // reactor/kernel.hpp

// How Address::resolve (and futures::resolve) look a name up.
struct ResolveOptions {
    int family = AF_UNSPEC;     // AF_INET or AF_INET6 for one family only
    bool numeric_host = false;  // AI_NUMERICHOST: never look the host up, only parse it
};

class REACTOR_API Address {
public:
    // AF_UNSPEC: "no address" (what local_of/peer_of give for a closed fd).
    Address() noexcept;

    // Numeric only: "127.0.0.1", "::1", "0.0.0.0", "::". A host name, a scope
    // ("fe80::1%eth0") or garbage throws std::invalid_argument. Never blocks.
    static Address parse(std::string_view numeric_host, std::uint16_t port);
    // "127.0.0.1:8080" or "[::1]:8080" (IPv6 needs the brackets).
    static Address parse(std::string_view host_and_port);
    // A Unix domain stream address. A leading '@' names a Linux abstract
    // socket (no file). Throws std::invalid_argument if the path does not fit
    // in sockaddr_un (107 bytes) or is empty.
    static Address unix_path(std::string_view path);
    // Loopback shorthands for servers and tests.
    static Address loopback_v4(std::uint16_t port) { return parse("127.0.0.1", port); }
    static Address loopback_v6(std::uint16_t port) { return parse("::1", port); }

    // BLOCKS the calling thread in getaddrinfo(): it may wait for DNS, for
    // seconds. Call it before starting the loop, or from another thread, never
    // from a loop callback; on the loop, use futures::resolve (futures/
    // resolve.hpp), which runs this on a thread pool and returns a future, or
    // reactor::connect by host name (net/connector.hpp), which does the same.
    // Every IPv4 and IPv6 address found, once each, in the resolver's order.
    // A numeric host returns at once without a lookup. Failures throw
    // std::system_error in reactor::resolve_category() (net/resolve_error.hpp)
    // whose message names the host: an unknown name (resolve_errc::no_name),
    // a name without addresses (no_data), ...
    static std::vector<Address> resolve(std::string_view host, std::uint16_t port);
    // The same with a service: a port number ("8080") or a name from
    // /etc/services ("http"); an unknown service fails with
    // resolve_errc::service. With options.numeric_host, a host that is not a
    // numeric address fails (no_name) instead of being looked up. An empty
    // host (no_name) or service (service) fails without a lookup.
    static std::vector<Address> resolve(std::string_view host, std::string_view service,
                                        const ResolveOptions& options = {});
    // resolve(host, port) through a Scheduler's kernel (Scheduler::kernel();
    // null: the C library's getaddrinfo, blocking as above). A simulated
    // host's kernel answers with its world's names, at once.
    static std::vector<Address> resolve(Kernel* kernel, std::string_view host, std::uint16_t port);
    static std::vector<Address> resolve(Kernel* kernel, std::string_view host, std::string_view service,
                                        const ResolveOptions& options = {});

    // The address a socket is bound to / connected to; AF_UNSPEC on failure.
    static Address local_of(int fd);
    static Address peer_of(int fd);
    // The same for an fd of `kernel` (a Scheduler's kernel(); null: the real one).
    static Address local_of(Kernel* kernel, int fd);
    static Address peer_of(Kernel* kernel, int fd);
    // Wraps raw storage (accept, recvfrom). `len` is clamped to sockaddr_storage.
    static Address from_sockaddr(const sockaddr* sa, socklen_t len);

    int family() const noexcept { return storage_.ss_family; }
    bool is_ip() const noexcept { return family() == AF_INET || family() == AF_INET6; }
    bool is_unix() const noexcept { return family() == AF_UNIX; }
    // 0 for Unix and unspecified addresses.
    std::uint16_t port() const noexcept;
    // The same IP address (IPv6 scope included) with another port: a
    // server's address(), say, with_port(0) for a second listener. A Unix
    // or unspecified address has no port: std::invalid_argument.
    Address with_port(std::uint16_t port) const;
    // "127.0.0.1", "::1", the Unix path ("@name" for abstract), "" if unspecified.
    std::string host() const;
    // "127.0.0.1:8080", "[::1]:8080", "unix:/tmp/x.sock", "unspecified".
    std::string to_string() const;

    const sockaddr* data() const noexcept { return reinterpret_cast<const sockaddr*>(&storage_); }
    socklen_t size() const noexcept { return len_; }

    friend bool operator==(const Address& a, const Address& b) noexcept;

private:
    sockaddr_storage storage_;
    socklen_t len_ = 0;
};

// Exported from the shared library (a friend declaration cannot say so).
REACTOR_API bool operator==(const Address& a, const Address& b) noexcept;

}  // namespace reactor
