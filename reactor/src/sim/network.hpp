// SPDX-License-Identifier: MIT
// The simulated world's engine below the hosts: virtual time, the one event
// heap, the seeded randomness, the trace, the hosts' addresses and ports, and
// the TCP and UDP between them (tcp.hpp and udp.hpp say what is modelled). The host kernels
// (host_kernel.hpp) call it for what crosses the wire; it schedules each
// arrival on the heap and, when one happens, changes the receiving Side and
// marks its host runnable. It never calls user code, and nothing in it reads
// real time or touches a real socket. Owned by the World; outlives the
// hosts. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reactor/testing/sim/random.hpp"
#include "reactor/testing/sim/trace.hpp"
#include "reactor/testing/sim/world.hpp"
#include "reactor/testing/virtual_clock.hpp"

#include "event_queue.hpp"
#include "faults.hpp"
#include "tcp.hpp"

namespace reactor::testing::sim::detail {

// "10.0.0.1:7", for the trace's lines.
std::string address_text(const sockaddr_in& address);

class Network {
public:
    Network(std::uint64_t seed, const Params& params);

    // ---- time, events, randomness, trace
    TimePoint now() const noexcept { return clock_.now(); }
    VirtualClock& clock() noexcept { return clock_; }
    EventQueue& events() noexcept { return events_; }
    Trace& trace() noexcept { return trace_; }
    const Params& params() const noexcept { return params_; }
    Random& io_random() noexcept { return io_random_; }        // short reads and writes
    Random& order_random() noexcept { return order_random_; }  // which runnable host runs next
    // Params::resource_fault_percent (the host's, Host::set_resource_faults):
    // whether this call of `host` (named `call`) fails with `error`, drawn
    // from a stream of its own, only when `percent` is not zero; a failure
    // is noted in the trace.
    bool draw_resource_fault(std::size_t host, unsigned percent, const char* call, int error);
    // How many of host's calls it failed so far (Host::resource_faults).
    std::uint64_t resource_faults(std::size_t host) const noexcept {
        return host < resource_fault_counts_.size() ? resource_fault_counts_[host] : 0;
    }

    // ---- hosts: 10.0.0.1 for the first, then on in order
    std::size_t add_host(std::string name);
    void drop_last_host() noexcept {  // its Host could not be made: nothing refers to it
        hosts_.pop_back();
        next_ephemeral_.pop_back();
        next_udp_ephemeral_.pop_back();
    }
    std::size_t host_count() const noexcept { return hosts_.size(); }
    const std::string& name_of(std::size_t host) const { return hosts_[host].name; }
    std::uint32_t ip_of(std::size_t host) const noexcept { return kFirstIp + static_cast<std::uint32_t>(host); }
    std::optional<std::size_t> host_of_ip(std::uint32_t ip) const noexcept;  // host byte order
    std::optional<std::size_t> host_named(std::string_view name) const noexcept;

    // ---- which hosts have something to do (the World runs them)
    void poke(std::size_t host) noexcept { hosts_[host].runnable = true; }
    bool runnable(std::size_t host) const noexcept { return hosts_[host].runnable; }
    void rest(std::size_t host) noexcept { hosts_[host].runnable = false; }
    void poke_all() noexcept;
    // A crashed host (World::crash) and its restart.
    void set_down(std::size_t host, bool down) noexcept { hosts_[host].down = down; }
    // A cross-loop post was made to the host's resting loop (call_soon_
    // threadsafe, futures::submit_to), on the world's thread: its kernel
    // passes on the wake-up its loop would write to its eventfd
    // (Kernel::wake_loop). Runnable at once if it is up, drawn from the seed
    // among the others at the next step; waking a host at rest is an event
    // of the trace, so that a replay shows when each was woken so.
    void wake_for_post(std::size_t host);
    // The host's loop sleeps until `at` (its earliest timer): poke it then.
    void wake_at(std::size_t host, TimePoint at);

    // ---- ports of a host (host byte order)
    bool port_in_use(std::size_t host, std::uint16_t port) const;
    void claim_port(std::size_t host, std::uint16_t port) { ports_.insert({host, port}); }
    void release_port(std::size_t host, std::uint16_t port) { ports_.erase({host, port}); }
    std::optional<std::uint16_t> ephemeral_port(std::size_t host);
    void add_listener(std::size_t host, std::uint16_t port, Socket& s) { listeners_[{host, port}] = &s; }
    void remove_listener(std::size_t host, std::uint16_t port) { listeners_.erase({host, port}); }

    // ---- TCP: what crosses the wire
    // Starts the handshake of `s` (bound to `from`'s address) to `to`: the
    // request arrives after the link's latency; the answer (accepted,
    // refused, unreachable) comes back the same way. Sets s.side.
    void connect(std::size_t from, Socket& s, const sockaddr_in& to);
    // Bytes, an end of stream or a reset from `from` to its peer, after
    // everything `from` sent before.
    void send(const SideRef& from, std::string bytes);
    void send_fin(const SideRef& from);
    void send_reset(const SideRef& from);
    // `reader` read n bytes: the sender may send that much more.
    void consumed(const SideRef& reader, std::size_t n) noexcept;

    // ---- UDP (udp.hpp, network_udp.cpp): ports apart from TCP's, as on Linux
    bool udp_port_in_use(std::size_t host, std::uint16_t port) const { return udp_ports_.count({host, port}) != 0; }
    std::optional<std::uint16_t> udp_ephemeral_port(std::size_t host);
    void bind_udp(std::size_t host, std::uint16_t port, Socket& s) { udp_ports_[{host, port}] = &s; }
    void unbind_udp(std::size_t host, std::uint16_t port) { udp_ports_.erase({host, port}); }
    // One datagram from host `host`, whose socket is bound to `from`, to
    // `to`: after the pair's latency and jitter, unless the faults draw it
    // lost, duplicated or reordered.
    void send_datagram(std::size_t host, const sockaddr_in& from, const sockaddr_in& to, std::string bytes);

private:
    static constexpr std::uint32_t kFirstIp = 0x0a000001;  // 10.0.0.1
    static constexpr std::uint16_t kFirstEphemeral = 49152;

    struct HostEntry {
        std::string name;
        bool runnable = true;
        std::optional<TimePoint> wake;  // the wake-up event pending, if any
        bool down = false;              // crashed: answers nothing
    };
    // A connect request that finds its host down is sent again after 1 s,
    // 2 s, 4 s... (Linux's SYN retransmission, tcp_syn_retries = 6); after
    // the last the connect fails with ETIMEDOUT, 127 s after it began.
    static constexpr int kSynRetries = 6;

    Duration latency(std::size_t from, std::size_t to);  // drawn once per ordered pair
    // now + latency + jitter (+ a clog, or held by a partition), in order.
    TimePoint arrival(Link& link, int from);
    void syn_arrives(const std::shared_ptr<Link>& link);
    void note(const char* kind, const Link& link, int from, std::string_view bytes);
    void note_cut(const Faults::Cut& cut);
    // The drawn break happens: side `from` sent its last byte that arrives;
    // both sides are reset, each after the way to it takes.
    void break_link(const std::shared_ptr<Link>& link, int from);

    // UDP: a datagram's arrival and the ICMP port-unreachable it may cause.
    TimePoint datagram_arrival(std::size_t from, std::size_t to);
    void datagram_arrives(std::size_t from, std::size_t to, const sockaddr_in& source, const sockaddr_in& target,
                          const std::string& bytes, const char* kind);
    void unreachable_arrives(std::size_t host, const sockaddr_in& source, const sockaddr_in& target);
    void note_datagram(const char* kind, const sockaddr_in& from, const sockaddr_in& to, std::string_view bytes);

    Params params_;
    VirtualClock clock_;
    EventQueue events_;
    Trace trace_;
    Random latency_random_;
    Random io_random_;
    Random order_random_;
    Faults faults_;  // after clock_ and trace_: it notes partitions in the trace
    // UDP's own streams: its jitter, and its faults (drawn only when on), so
    // that datagrams change no TCP draw and turning their faults on changes
    // no other draw.
    Random udp_random_;
    Random udp_faults_;
    Random resource_faults_;  // Params::resource_fault_percent, its own stream
    std::vector<std::uint64_t> resource_fault_counts_;  // per host
    std::vector<HostEntry> hosts_;
    std::map<std::pair<std::size_t, std::size_t>, Duration> latencies_;
    std::set<std::pair<std::size_t, std::uint16_t>> ports_;
    std::map<std::pair<std::size_t, std::uint16_t>, Socket*> listeners_;
    std::vector<std::uint16_t> next_ephemeral_;
    std::map<std::pair<std::size_t, std::uint16_t>, Socket*> udp_ports_;
    std::vector<std::uint16_t> next_udp_ephemeral_;
    // The latest arrival scheduled per ordered pair of hosts: a datagram not
    // drawn to be reordered never arrives before one sent before it.
    std::map<std::pair<std::size_t, std::size_t>, TimePoint> udp_last_arrival_;
    std::uint64_t links_ = 0;
};

}  // namespace reactor::testing::sim::detail
