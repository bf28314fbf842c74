// SPDX-License-Identifier: MIT
#include "reactor/net/udp_socket.hpp"

#include <linux/errqueue.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "loop_sockets.hpp"
#include "reactor/detail/kernel_calls.hpp"
#include "reactor/detail/world_mark.hpp"
#include "socket_ops.hpp"

namespace reactor {
namespace {

// Larger than any UDP payload over IPv4 or IPv6 (65,507 / 65,527 bytes), so
// no datagram is ever truncated.
constexpr std::size_t kMaxDatagram = 64 * 1024;
// Datagrams read per wake-up: enough to amortise the wait, few enough that a
// flooded socket cannot starve the rest of the loop.
constexpr int kMaxDatagramsPerWakeup = 64;
// Room for the one control message an error-queue entry carries: the
// extended error followed by the address of the host that reported it.
constexpr std::size_t kErrorControlSize = CMSG_SPACE(sizeof(sock_extended_err) + sizeof(sockaddr_in6));

bool is_transient_send_error(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS; }

// Without these the kernel keeps ICMP errors for an unconnected UDP socket to
// itself; with them it queues each one, with the datagram's destination, on
// the socket's error queue. An IPv6 socket also carries IPv4 traffic through
// IPv4-mapped addresses, whose ICMP errors follow IP_RECVERR, not IPV6_RECVERR;
// that one is best effort (an IPv6-only socket has no IPv4 traffic).
void enable_error_queue(Kernel* kernel, int fd, int family) {
    int one = 1;
    int level = family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP;
    int option = family == AF_INET6 ? IPV6_RECVERR : IP_RECVERR;
    if (detail::sys::setsockopt(kernel, fd, level, option, &one, sizeof one) != 0)
        throw detail::system_error(errno, family == AF_INET6 ? "reactor: setsockopt(IPV6_RECVERR)"
                                                             : "reactor: setsockopt(IP_RECVERR)");
    if (family == AF_INET6) detail::sys::setsockopt(kernel, fd, IPPROTO_IP, IP_RECVERR, &one, sizeof one);
}

struct QueuedError {
    int error;
    Address destination;
};

// Empties the socket's error queue; returns its ICMP errors, oldest first.
// Entries of local origin are skipped: the kernel queues those (EMSGSIZE) as
// well as failing the send that caused them, which already reported it.
std::vector<QueuedError> read_error_queue(Kernel* kernel, int fd) {
    std::vector<QueuedError> out;
    for (;;) {
        sockaddr_storage name;
        alignas(cmsghdr) char control[kErrorControlSize];
        msghdr msg{};
        msg.msg_name = &name;
        msg.msg_namelen = sizeof name;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        // No iovec: the returned copy of the failed datagram is not wanted.
        if (detail::sys::recvmsg(kernel, fd, &msg, MSG_ERRQUEUE) < 0) {
            if (errno == EINTR) continue;
            return out;  // EAGAIN: empty
        }
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
            bool is_error = (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
                            (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR);
            if (!is_error) continue;
            sock_extended_err ee;
            std::memcpy(&ee, CMSG_DATA(c), sizeof ee);
            if (ee.ee_origin != SO_EE_ORIGIN_ICMP && ee.ee_origin != SO_EE_ORIGIN_ICMP6) continue;
            // msg_name is the failed datagram's destination (the ICMP sender
            // is in the control message, after `ee`).
            out.push_back(QueuedError{static_cast<int>(ee.ee_errno),
                                      Address::from_sockaddr(reinterpret_cast<sockaddr*>(&name), msg.msg_namelen)});
        }
    }
}

}  // namespace

std::shared_ptr<UdpSocket> UdpSocket::bind(Scheduler& sched, const Address& local, Options options,
                                           std::source_location where) {
    if (!local.is_ip()) throw std::invalid_argument("reactor: a UDP socket needs an IPv4 or IPv6 address");
    Kernel* const kernel = sched.kernel();
    detail::refuse_real_socket(kernel, "UdpSocket::bind");
    auto fd = detail::make_socket(kernel, local.family(), SOCK_DGRAM);
    if (options.reuse_address) detail::set_reuse_address(kernel, fd.get());
    enable_error_queue(kernel, fd.get(), local.family());
    if (detail::sys::bind(kernel, fd.get(), local.data(), local.size()) != 0)
        throw detail::system_error(errno, fmt::format("reactor: bind {}", local.to_string()));
    Address bound = Address::local_of(kernel, fd.get());
    auto sock = std::make_shared<UdpSocket>(Passkey{}, sched, fd.release(), bound, options, where);
    sched.service<detail::LoopSockets>().add(*sock);
    sched.set_fd_owner(sock->fd_, *sock);  // close() forgets the fd before closing it
    sched.add_reader(sock->fd_, [s = sock.get()] { s->on_readable(); }, where);  // on throw, ~UdpSocket closes
    return sock;
}

std::shared_ptr<UdpSocket> UdpSocket::connect(Scheduler& sched, const Address& remote, Options options,
                                              std::source_location where) {
    if (!remote.is_ip()) throw std::invalid_argument("reactor: a UDP socket needs an IPv4 or IPv6 address");
    Address any = Address::parse(remote.family() == AF_INET6 ? "::" : "0.0.0.0", 0);
    auto sock = bind(sched, any, options, where);
    sock->connect(remote);  // on throw, ~UdpSocket closes
    return sock;
}

UdpSocket::UdpSocket(Passkey, Scheduler& sched, int fd, Address local, Options options, std::source_location where)
    : sched_(sched), fd_(fd), where_(where), local_(local), options_(options) {}

void UdpSocket::describe(int /*fd*/, std::vector<LiveItem>& out) const {
    std::string detail = fmt::format("fd {}, {}", fd_, local_.to_string());
    if (peer_.family() != AF_UNSPEC) detail += fmt::format(" -> {}", peer_.to_string());
    out.push_back(LiveItem{LiveItem::Kind::udp_socket, std::move(detail), where_, true});
}

UdpSocket::~UdpSocket() { close(); }

void UdpSocket::set_datagram_callback(DatagramCallback cb) {
    if (is_open()) on_datagram_.set(std::move(cb));  // a closed socket keeps none (no cycle)
}

void UdpSocket::set_error_callback(ErrorCallback cb) {
    if (is_open()) on_error_.set(std::move(cb));
}

void UdpSocket::connect(const Address& remote) {
    if (fd_ < 0) throw std::logic_error("reactor: connect() on a closed UdpSocket");
    if (is_connected())
        throw std::logic_error(fmt::format("reactor: UDP socket {} is already connected to {}", local_.to_string(),
                                           peer_.to_string()));
    if (remote.family() != local_.family())
        throw std::invalid_argument(fmt::format("reactor: cannot connect UDP socket {} to {}: another address family",
                                                local_.to_string(), remote.to_string()));
    if (detail::sys::connect(sched_.kernel(), fd_, remote.data(), remote.size()) != 0)
        throw detail::system_error(errno, fmt::format("reactor: connect UDP {} to {}", local_.to_string(),
                                                      remote.to_string()));
    // The kernel may have narrowed the local address (any-address -> the
    // source that routes to `remote`); read both back so that `from` of the
    // peer's datagrams compares equal to peer_.
    local_ = Address::local_of(sched_.kernel(), fd_);
    peer_ = Address::peer_of(sched_.kernel(), fd_);
}

void UdpSocket::close_with_loop() noexcept { close(); }

void UdpSocket::close() {
    if (fd_ < 0) return;
    LoopSocket::unlink();  // from the loop's sockets
    sched_.forget_fd(fd_);  // before close: see Scheduler::forget_fd
    detail::close_fd(sched_.kernel(), fd_);
    fd_ = -1;
    queue_.clear();
    queued_bytes_ = 0;
    on_datagram_.reset();  // a running one lives on until it returns (callback_slot.hpp)
    on_error_.reset();
}

bool UdpSocket::send(std::string_view data) {
    if (!is_connected())
        throw std::logic_error(fmt::format("reactor: send() on UDP socket {}, which is not connected: use send_to()",
                                           local_.to_string()));
    return send_datagram(data, Address{});
}

bool UdpSocket::send_to(std::string_view data, const Address& to) {
    if (!is_connected()) return send_datagram(data, to);
    if (!(to == peer_))
        throw std::invalid_argument(fmt::format("reactor: UDP socket {} is connected to {}; cannot send to {}",
                                                local_.to_string(), peer_.to_string(), to.to_string()));
    return send_datagram(data, Address{});  // the kernel's cached route to the peer
}

bool UdpSocket::send_datagram(std::string_view data, const Address& to) {
    if (fd_ < 0) return false;
    if (queue_.empty()) {
        int err = try_send(data, to);
        if (err == 0) return true;
        if (!is_transient_send_error(err)) return false;
    }
    if (queued_bytes_ + data.size() > options_.max_queued_bytes) {
        ++dropped_;
        return false;
    }
    if (queue_.empty()) sched_.add_writer(fd_, [this] { on_writable(); }, where_);  // close() deregisters before we die
    queue_.push_back(Datagram{std::string(data), to});
    queued_bytes_ += data.size();
    return true;
}

// One datagram: 0 when sent, a transient errno when it should wait for
// writability, any other errno when it was dropped (already reported).
int UdpSocket::try_send(std::string_view data, const Address& to) {
    auto send_once = [&] {
        const sockaddr* addr = to.family() == AF_UNSPEC ? nullptr : to.data();
        socklen_t addr_len = to.family() == AF_UNSPEC ? 0 : to.size();
        ssize_t n;
        do {
            n = detail::sys::sendto(sched_.kernel(), fd_, data.data(), data.size(), MSG_NOSIGNAL, addr, addr_len);
        } while (n < 0 && errno == EINTR);
        return n < 0 ? errno : 0;
    };
    int err = send_once();
    if (err == 0 || is_transient_send_error(err)) return err;
    // An ICMP error pending on the socket fails the next send, whatever its
    // destination, and is consumed by it: then `err` belongs to an earlier
    // datagram, whose entry, with its destination, is still on the error
    // queue. Report those and try this datagram again rather than lose it.
    if (report_error_queue_later() > 0) {
        err = send_once();
        if (err == 0 || is_transient_send_error(err)) return err;
    }
    report_later(err, destination_of(to));
    return err;
}

int UdpSocket::report_error_queue_later() {
    auto errors = read_error_queue(sched_.kernel(), fd_);
    for (const auto& e : errors) report_later(e.error, e.destination);
    return static_cast<int>(errors.size());
}

void UdpSocket::on_writable() {
    while (!queue_.empty()) {
        const Datagram& d = queue_.front();
        int err = try_send(d.data, d.to);
        if (is_transient_send_error(err)) return;
        queued_bytes_ -= d.data.size();
        queue_.pop_front();  // sent, or dropped and reported by try_send
    }
    sched_.remove_writer(fd_);
}

void UdpSocket::on_readable() {
    auto keep_alive = shared_from_this();  // a callback may drop the last reference
    char* buf = detail::read_scratch(kMaxDatagram);
    Kernel* const kernel = sched_.kernel();
    for (int i = 0; i < kMaxDatagramsPerWakeup && fd_ >= 0; ++i) {
        sockaddr_storage from;
        socklen_t from_len = sizeof from;
        ssize_t n =
            detail::sys::recvfrom(kernel, fd_, buf, kMaxDatagram, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
        if (n < 0) {
            int err = errno;
            if (err == EINTR) continue;
            // An error here is a pending ICMP error, which recvfrom returns
            // (and consumes) before any datagram; its details are on the error
            // queue. EAGAIN: the wake-up may have been for the error queue
            // alone, which keeps the socket readable on every backend until
            // it is emptied. A wake-up that brought datagrams leaves the queue
            // to the next one (which then finds no datagram), so the common
            // case pays no extra system call and the loop still cannot spin.
            const bool again = err == EAGAIN || err == EWOULDBLOCK;
            if (again && i > 0) return;
            auto errors = read_error_queue(kernel, fd_);
            for (const auto& e : errors) {
                if (fd_ < 0) return;  // an error callback closed the socket
                report(e.error, e.destination);
            }
            if (again) return;
            if (errors.empty() && fd_ >= 0) report(err, peer_);  // the kernel kept no details
            continue;
        }
        Address sender = Address::from_sockaddr(reinterpret_cast<sockaddr*>(&from), from_len);
        // The kernel filters by peer only from connect() on; what others sent
        // before it still waits in the receive queue.
        if (is_connected() && !(sender == peer_)) continue;
        on_datagram_.invoke(*this, std::string_view(buf, static_cast<std::size_t>(n)), sender);
    }
}

void UdpSocket::on_unwatchable(int /*fd*/, std::error_code error) {
    auto keep_alive = shared_from_this();  // the error callback may drop the last reference
    report(error.value(), Address{});
    close();
}

void UdpSocket::report(int error, const Address& destination) {
    if (on_error_.invoke(*this, std::error_code(error, std::generic_category()), destination)) return;
    ErrorContext ctx;
    ctx.message = fmt::format("UDP socket {}: {}", local_.to_string(), std::strerror(error));
    if (destination.family() != AF_UNSPEC) ctx.message += fmt::format(" (datagram to {})", destination.to_string());
    ctx.fd = fd_;
    sched_.call_exception_handler(ctx);
}

void UdpSocket::report_later(int error, const Address& destination) {
    sched_.call_soon([weak = weak_from_this(), error, destination] {
        if (auto self = weak.lock(); self && self->is_open()) self->report(error, destination);
    });
}

}  // namespace reactor
