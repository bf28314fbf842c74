// SPDX-License-Identifier: MIT
// The simulated TCP between hosts: the handshake, segments, FIN and RST, each
// an event on the world's heap at its arrival time (network.hpp, tcp.hpp).
#include "network.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

namespace reactor::testing::sim::detail {

namespace {

// Distinct streams of the world's seed, one per subsystem (Random::split).
// 5 and 6 are the World's (world.cpp).
enum Stream : std::uint64_t { kLatency = 1, kIo = 2, kOrder = 3, kFaults = 4, kUdp = 7, kUdpFaults = 8,
                              kResources = 9 };

}  // namespace

std::string address_text(const sockaddr_in& a) {
    char ip[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
    return fmt::format("{}:{}", ip, ntohs(a.sin_port));
}

Network::Network(std::uint64_t seed, const Params& params)
    : params_(params),
      latency_random_(Random(seed).split(kLatency)),
      io_random_(Random(seed).split(kIo)),
      order_random_(Random(seed).split(kOrder)),
      faults_(params, Random(seed).split(kFaults), clock_.now(), [this](const Faults::Cut& c) { note_cut(c); }),
      udp_random_(Random(seed).split(kUdp)),
      udp_faults_(Random(seed).split(kUdpFaults)),
      resource_faults_(Random(seed).split(kResources)) {}

bool Network::draw_resource_fault(std::size_t host, unsigned percent, const char* call, int error) {
    if (!resource_faults_.percent(percent)) return false;  // no draw when off
    if (resource_fault_counts_.size() <= host) resource_fault_counts_.resize(host + 1);
    ++resource_fault_counts_[host];
    trace_.add(static_cast<std::uint64_t>((now() - VirtualClock::kStart).count()));
    trace_.add(std::string_view("resource"));
    trace_.add(static_cast<std::uint64_t>(host));
    trace_.add(std::string_view(call));
    trace_.add(static_cast<std::uint64_t>(error));
    return true;
}

std::size_t Network::add_host(std::string name) {
    hosts_.push_back(HostEntry{std::move(name), true, std::nullopt});
    next_ephemeral_.push_back(kFirstEphemeral);
    next_udp_ephemeral_.push_back(kFirstEphemeral);
    return hosts_.size() - 1;
}

std::optional<std::size_t> Network::host_of_ip(std::uint32_t ip) const noexcept {
    if (ip < kFirstIp || ip - kFirstIp >= hosts_.size()) return std::nullopt;
    return ip - kFirstIp;
}

std::optional<std::size_t> Network::host_named(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < hosts_.size(); ++i)
        if (hosts_[i].name == name) return i;
    return std::nullopt;
}

void Network::poke_all() noexcept {
    for (auto& h : hosts_) h.runnable = true;
}

void Network::wake_for_post(std::size_t host) {
    HostEntry& h = hosts_[host];
    if (h.runnable || h.down) return;
    h.runnable = true;
    const auto ns = static_cast<std::uint64_t>((now() - VirtualClock::kStart).count());
    trace_.add(std::uint64_t{0x9057});  // apart from the other events
    trace_.add(static_cast<std::uint64_t>(host));
    trace_.add(ns);
    std::string line;
    if (trace_.keeps_lines()) line = fmt::format("{:>12} ns  host {} woken by a post", ns, h.name);
    trace_.event(line);
}

// One pending wake-up per host and time: a loop that goes idle again and
// again before its timer is due asks for the same time each time.
void Network::wake_at(std::size_t host, TimePoint at) {
    HostEntry& h = hosts_[host];
    if (h.wake && *h.wake <= at && *h.wake >= now()) return;  // an earlier one pending: it will look again
    h.wake = at;
    events_.push(at, [this, host, at] {
        HostEntry& e = hosts_[host];
        if (e.wake == at) e.wake.reset();
        e.runnable = true;
    });
}

bool Network::port_in_use(std::size_t host, std::uint16_t port) const { return ports_.count({host, port}) != 0; }

std::optional<std::uint16_t> Network::ephemeral_port(std::size_t host) {
    std::uint16_t& next = next_ephemeral_[host];
    for (int tries = 0; tries < 65536 - kFirstEphemeral; ++tries) {
        const std::uint16_t port = next;
        next = next == 65535 ? kFirstEphemeral : static_cast<std::uint16_t>(next + 1);
        if (!port_in_use(host, port)) return port;
    }
    return std::nullopt;
}

Duration Network::latency(std::size_t from, std::size_t to) {
    auto [it, fresh] = latencies_.try_emplace({from, to});
    if (fresh) {
        const auto low = static_cast<std::uint64_t>(params_.min_latency.count());
        const auto high = static_cast<std::uint64_t>(std::max(params_.max_latency, params_.min_latency).count());
        it->second = Duration(static_cast<Duration::rep>(latency_random_.between(low, high)));
    }
    return it->second;
}

TimePoint Network::arrival(Link& link, int side) {
    Side& from = link.side[side];
    const auto jitter = static_cast<std::uint64_t>(std::max(params_.max_jitter, Duration::zero()).count());
    TimePoint at = now() + from.latency + Duration(static_cast<Duration::rep>(latency_random_.between(0, jitter)));
    at = faults_.delivery(from.host, link.side[1 - side].host, at, now(), hosts_.size());
    at = std::max(at, from.last_arrival);  // TCP never reorders
    from.last_arrival = at;
    return at;
}

void Network::note(const char* kind, const Link& link, int from, std::string_view bytes) {
    trace_.add(static_cast<std::uint64_t>((now() - VirtualClock::kStart).count()));
    trace_.add(std::string_view(kind));
    trace_.add(link.id);
    trace_.add(static_cast<std::uint64_t>(from));
    trace_.add(bytes);
    std::string line;
    if (trace_.keeps_lines()) {
        const Side& a = link.side[from];
        const Side& b = link.side[1 - from];
        line = fmt::format("{:>12} ns  link {} {} {} -> {} ({} bytes)", (now() - VirtualClock::kStart).count(),
                           link.id, kind, address_text(a.address), address_text(b.address), bytes.size());
    }
    trace_.event(line);
}

void Network::note_cut(const Faults::Cut& cut) {
    const auto ns = [](TimePoint t) { return (t - VirtualClock::kStart).count(); };
    const char* way = cut.out && cut.in ? "both ways" : cut.out ? "its sending" : "its receiving";
    trace_.add(static_cast<std::uint64_t>(ns(cut.start)));
    trace_.add(static_cast<std::uint64_t>(ns(cut.end)));
    trace_.add(static_cast<std::uint64_t>(cut.host) * 4 + (cut.out ? 2 : 0) + (cut.in ? 1 : 0));
    std::string line;
    if (trace_.keeps_lines())
        line = fmt::format("{:>12} ns  partition: {} cut off ({}) from {} ns to {} ns", ns(now()),
                           hosts_[cut.host].name, way, ns(cut.start), ns(cut.end));
    trace_.event(line);
}

void Network::connect(std::size_t from, Socket& s, const sockaddr_in& to) {
    auto link = std::make_shared<Link>();
    link->id = ++links_;
    Side& client = link->side[0];
    Side& server = link->side[1];
    client.host = from;
    client.address = s.local;
    server.address = to;
    s.side = SideRef{link, 0};
    const std::optional<std::size_t> target = host_of_ip(ntohl(to.sin_addr.s_addr));
    if (!target) {
        // Nobody has that address: the attempt fails after the longest
        // latency, as an unanswered ARP would (much sooner than real).
        client.open = true;
        server.open = false;
        events_.push(now() + params_.max_latency, [this, link] {
            Side& c = link->side[0];
            if (!c.open || c.established) return;
            c.error = EHOSTUNREACH;
            note("unreachable", *link, 0, {});
            poke(c.host);
        });
        return;
    }
    server.host = *target;
    client.latency = latency(from, *target);
    server.latency = latency(*target, from);
    const auto low = static_cast<std::uint64_t>(params_.min_buffer);
    const auto high = static_cast<std::uint64_t>(std::max(params_.max_buffer, params_.min_buffer));
    client.capacity = static_cast<std::size_t>(io_random_.between(low, high));
    server.capacity = static_cast<std::size_t>(io_random_.between(low, high));
    if (auto b = faults_.draw_break()) {
        link->break_from = b->from;
        link->break_after = b->after;
    }
    events_.push(arrival(*link, 0), [this, link] { syn_arrives(link); });
}

// The request reaches the server's host: a listener with room in its queue
// takes the connection (established on its side from now on) and answers;
// otherwise the client is refused (a full queue too: real TCP would drop the
// request and let the client retry; here it is refused at once).
void Network::syn_arrives(const std::shared_ptr<Link>& link) {
    Side& server = link->side[1];
    if (hosts_[server.host].down) {
        Side& client = link->side[0];
        if (!client.open) return;  // the client gave up: nothing is sent again
        if (link->syn_retries < kSynRetries) {
            events_.push(now() + std::chrono::seconds(1 << link->syn_retries++), [this, link] { syn_arrives(link); });
        } else {
            // The last retransmission's wait (64 s) ends it at the client.
            events_.push(now() + std::chrono::seconds(1 << kSynRetries), [this, link] {
                Side& c = link->side[0];
                if (!c.open || c.established) return;
                c.error = ETIMEDOUT;
                note("timed out", *link, 0, {});
                poke(c.host);
            });
        }
        return;
    }
    auto it = listeners_.find({server.host, ntohs(server.address.sin_port)});
    Socket* listener = it == listeners_.end() ? nullptr : it->second;
    const bool room =
        listener && listener->accept_queue.size() < static_cast<std::size_t>(std::max(listener->backlog, 0)) + 1;
    const bool fault = room && faults_.draw_refusal();
    if (!room || fault) {
        server.open = false;
        note(fault ? "refused (fault)" : listener ? "refused (queue full)" : "refused", *link, 0, {});
        events_.push(arrival(*link, 1), [this, link] {
            Side& c = link->side[0];
            if (!c.open) return;
            c.error = ECONNREFUSED;
            note("refusal", *link, 1, {});
            poke(c.host);
        });
        return;
    }
    server.established = true;
    listener->accept_queue.push_back(SideRef{link, 1});
    note("connect", *link, 0, {});
    poke(server.host);
    events_.push(arrival(*link, 1), [this, link] {
        Side& c = link->side[0];
        if (!c.open) {
            // The client closed before the answer came: it resets the
            // connection the server has just accepted.
            if (!c.reset_sent) send_reset(SideRef{link, 0});
            return;
        }
        c.established = true;
        note("accepted", *link, 1, {});
        poke(c.host);
    });
}

// A broken link loses what is sent on it; the send that reaches the drawn
// break delivers its prefix and breaks the link (Link::break_after).
void Network::send(const SideRef& from, std::string bytes) {
    Side& me = from.self();
    Link& link = *from.link;
    if (link.broken) return;
    bool breaks = false;
    if (link.break_from == from.index && me.sent + bytes.size() >= link.break_after) {
        bytes.resize(link.break_after - std::min(me.sent, link.break_after));
        breaks = true;
    }
    me.sent += bytes.size();
    me.outstanding += bytes.size();
    if (!bytes.empty()) {
        events_.push(arrival(link, from.index), [this, ref = from, bytes = std::move(bytes)] {
            Side& src = ref.self();
            Side& dst = ref.peer();
            if (!dst.open || dst.reset_sent) {
                // Nobody will read it: dropped, and a closed receiver answers
                // with a reset (once), as a kernel does for data to a closed socket.
                src.outstanding -= std::min(src.outstanding, bytes.size());
                note("dropped", *ref.link, ref.index, bytes);
                if (!dst.open && !dst.reset_sent) send_reset(SideRef{ref.link, 1 - ref.index});
                return;
            }
            dst.rx.append(bytes);
            note("data", *ref.link, ref.index, bytes);
            poke(dst.host);
        });
    }
    if (breaks) break_link(from.link, from.index);
}

void Network::break_link(const std::shared_ptr<Link>& link, int from) {
    link->broken = true;
    for (int to : {1 - from, from}) {
        // The receiver's reset comes after the prefix (the same way, in
        // order); the sender's comes back the other way.
        events_.push(arrival(*link, 1 - to), [this, link, to] {
            Side& dst = link->side[to];
            if (!dst.open || dst.reset) return;
            dst.reset = true;
            note("reset (fault)", *link, 1 - to, {});
            poke(dst.host);
        });
    }
}

void Network::send_fin(const SideRef& from) {
    Side& me = from.self();
    me.fin_out = true;
    if (from.link->broken) return;
    events_.push(arrival(*from.link, from.index), [this, ref = from] {
        Side& dst = ref.peer();
        if (!dst.open || dst.reset_sent) return;
        dst.fin_in = true;
        note("fin", *ref.link, ref.index, {});
        poke(dst.host);
    });
}

void Network::send_reset(const SideRef& from) {
    Side& me = from.self();
    me.reset_sent = true;
    if (from.link->broken) return;
    events_.push(arrival(*from.link, from.index), [this, ref = from] {
        Side& dst = ref.peer();
        if (!dst.open || dst.reset_sent) return;
        dst.reset = true;
        note("reset", *ref.link, ref.index, {});
        poke(dst.host);
    });
}

void Network::consumed(const SideRef& reader, std::size_t n) noexcept {
    Side& writer = reader.peer();
    const bool was_full = writer.space() == 0;
    writer.outstanding -= std::min(writer.outstanding, n);
    if (was_full && writer.open) poke(writer.host);  // it may be waiting to write
}

}  // namespace reactor::testing::sim::detail
