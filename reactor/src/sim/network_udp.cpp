// SPDX-License-Identifier: MIT
// The simulated UDP between hosts (udp.hpp): each datagram an event on the
// world's heap at its arrival time, drawn from UDP's own streams of the seed.
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "network.hpp"

namespace reactor::testing::sim::detail {

namespace {

std::uint64_t packed(const sockaddr_in& a) noexcept {
    return (std::uint64_t{ntohl(a.sin_addr.s_addr)} << 16) | ntohs(a.sin_port);
}

}  // namespace

std::optional<std::uint16_t> Network::udp_ephemeral_port(std::size_t host) {
    std::uint16_t& next = next_udp_ephemeral_[host];
    for (int tries = 0; tries < 65536 - kFirstEphemeral; ++tries) {
        const std::uint16_t port = next;
        next = next == 65535 ? kFirstEphemeral : static_cast<std::uint16_t>(next + 1);
        if (!udp_port_in_use(host, port)) return port;
    }
    return std::nullopt;
}

void Network::note_datagram(const char* kind, const sockaddr_in& from, const sockaddr_in& to, std::string_view bytes) {
    const auto ns = (now() - VirtualClock::kStart).count();
    trace_.add(static_cast<std::uint64_t>(ns));
    trace_.add(std::string_view(kind));
    trace_.add(packed(from));
    trace_.add(packed(to));
    trace_.add(bytes);
    std::string line;
    if (trace_.keeps_lines())
        line = fmt::format("{:>12} ns  udp {} {} -> {} ({} bytes)", ns, kind, address_text(from), address_text(to),
                           bytes.size());
    trace_.event(line);
}

// The pair's latency plus jitter from UDP's stream (the TCP's jitter draws
// are not shifted by datagrams).
TimePoint Network::datagram_arrival(std::size_t from, std::size_t to) {
    const auto jitter = static_cast<std::uint64_t>(std::max(params_.max_jitter, Duration::zero()).count());
    return now() + latency(from, to) + Duration(static_cast<Duration::rep>(udp_random_.between(0, jitter)));
}

void Network::send_datagram(std::size_t host, const sockaddr_in& from, const sockaddr_in& to, std::string bytes) {
    const std::optional<std::size_t> target = host_of_ip(ntohl(to.sin_addr.s_addr));
    if (!target) {
        note_datagram("lost (no such host)", from, to, bytes);
        return;
    }
    TimePoint at = datagram_arrival(host, *target);
    const Duration most = std::max(params_.max_reorder, Duration::zero());
    const auto extra = [&] {
        return Duration(static_cast<Duration::rep>(udp_faults_.between(0, static_cast<std::uint64_t>(most.count()))));
    };
    // In order unless drawn to be reordered: that one is held back and
    // does not hold back those sent after it.
    TimePoint& last = udp_last_arrival_[{host, *target}];
    if (udp_faults_.percent(params_.udp_reorder_percent)) {
        at += extra();
    } else {
        at = std::max(at, last);
        last = at;
    }
    // Lost on the way: what follows it arrives as it would have.
    if (udp_faults_.percent(params_.udp_loss_percent)) {
        note_datagram("lost (fault)", from, to, bytes);
        return;
    }
    // Delivered twice: the copy no earlier than the datagram (pushed after
    // it, so at the same instant it comes second).
    const bool twice = udp_faults_.percent(params_.udp_duplicate_percent);
    const TimePoint copy_at = twice ? at + extra() : at;
    events_.push(at, [this, host, to_host = *target, from, to, bytes] {
        datagram_arrives(host, to_host, from, to, bytes, "datagram");
    });
    if (twice)
        events_.push(copy_at, [this, host, to_host = *target, from, to, bytes = std::move(bytes)] {
            datagram_arrives(host, to_host, from, to, bytes, "duplicate (fault)");
        });
}

// The socket bound to the port takes it, unless it is connected to someone
// else: then, as for a port nobody bound, an ICMP port-unreachable goes back.
void Network::datagram_arrives(std::size_t from, std::size_t to, const sockaddr_in& source, const sockaddr_in& target,
                               const std::string& bytes, const char* kind) {
    if (hosts_[to].down) {
        note_datagram("lost (host down)", source, target, bytes);
        return;
    }
    auto it = udp_ports_.find({to, ntohs(target.sin_port)});
    Socket* s = it == udp_ports_.end() ? nullptr : it->second;
    if (s != nullptr && s->udp->connected &&
        (s->udp->peer.sin_addr.s_addr != source.sin_addr.s_addr || s->udp->peer.sin_port != source.sin_port))
        s = nullptr;
    if (s == nullptr) {
        note_datagram("port unreachable", source, target, bytes);
        const TimePoint back = datagram_arrival(to, from);
        events_.push(back, [this, from, source, target] { unreachable_arrives(from, source, target); });
        return;
    }
    UdpState& u = *s->udp;
    if (u.inbox_bytes + bytes.size() > UdpState::kReceiveBuffer) {
        note_datagram("dropped (receive buffer full)", source, target, bytes);
        return;
    }
    u.inbox.push_back(Datagram{source, bytes});
    u.inbox_bytes += bytes.size();
    note_datagram(kind, source, target, bytes);
    poke(to);
}

// Linux's __udp4_lib_err: a connected socket, or one with IP_RECVERR, gets
// the error as its pending error; with IP_RECVERR also on its error queue.
void Network::unreachable_arrives(std::size_t host, const sockaddr_in& source, const sockaddr_in& target) {
    if (hosts_[host].down) return;
    auto it = udp_ports_.find({host, ntohs(source.sin_port)});
    if (it == udp_ports_.end()) return;
    UdpState& u = *it->second->udp;
    if (!u.connected && !u.recverr) return;
    note_datagram("refused", target, source, {});
    u.pending_error = ECONNREFUSED;
    if (u.recverr) u.errors.push_back(IcmpError{ECONNREFUSED, target});
    poke(host);
}

}  // namespace reactor::testing::sim::detail
