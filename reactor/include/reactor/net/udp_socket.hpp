// SPDX-License-Identifier: MIT
// reactor::UdpSocket: a non-blocking datagram socket (IPv4 or IPv6), either
// unconnected (send_to() anyone, hear from anyone) or connected to one peer.
//
// Owns its fd. Owned by whoever holds the shared_ptr; destroying it, or
// close(), stops it; so does the loop's end (docs/scheduler.md, "What outlives
// what"), after which it may outlive its Scheduler. Datagrams are never
// merged or split; a datagram the kernel cannot take at once is queued (up to
// Options::max_queued_bytes, then dropped and counted) and sent in order when
// the socket is writable. Loop thread only; never calls back synchronously.
//
// Errors take one of two paths, never both:
//   - a caller bug the socket sees at once throws from the call and sends
//     nothing: connect() to another address family, connect() twice, send()
//     while unconnected, send_to() a connected socket to anyone but its peer;
//   - what the kernel or the network says reaches the error callback on a
//     later iteration, with the destination of the datagram it is about: a
//     send the kernel refused (EMSGSIZE, ...) and ICMP errors for datagrams
//     already sent (ECONNREFUSED after a port-unreachable, EHOSTUNREACH, ...).
//     Unconnected sockets get them too: every socket enables IP_RECVERR
//     (IPv6 sockets IPV6_RECVERR and, for their IPv4-mapped traffic,
//     IP_RECVERR) and reads the socket's error queue (MSG_ERRQUEUE).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "reactor/export.hpp"
#include "reactor/callback_slot.hpp"
#include "reactor/net/address.hpp"
#include "reactor/fd_owner.hpp"
#include "reactor/net/detail/loop_socket.hpp"
#include "reactor/scheduler.hpp"

namespace reactor {

class REACTOR_API UdpSocket final : public std::enable_shared_from_this<UdpSocket>, private FdOwner, private detail::LoopSocket {
    struct Passkey {};

public:
    // `data` is valid only during the call.
    using DatagramCallback = std::function<void(UdpSocket&, std::string_view data, const Address& from)>;
    // One error per failed datagram: a send the kernel refused, or an ICMP
    // error for one already sent (ECONNREFUSED: nothing listens on that port).
    // `destination` is where that datagram was going. It is unspecified
    // (Address{}, AF_UNSPEC) only when the kernel kept no record of it (its
    // per-socket error queue was full) on an unconnected socket.
    // Without a callback, errors go to the Scheduler's exception handler.
    using ErrorCallback = std::function<void(UdpSocket&, std::error_code, const Address& destination)>;

    struct Options {
        std::size_t max_queued_bytes = 1024 * 1024;
        bool reuse_address = false;  // SO_REUSEADDR
    };

    // Binds to `local` (port 0: the kernel picks; see local_address()) and
    // starts receiving; datagrams arriving before a datagram callback is set
    // are discarded. Throws std::system_error or std::invalid_argument.
    // Scheduler::live() names the socket by `where`, the line that made it.
    [[nodiscard]] static std::shared_ptr<UdpSocket> bind(
        Scheduler& sched, const Address& local, Options options,
        std::source_location where = std::source_location::current());
    [[nodiscard]] static std::shared_ptr<UdpSocket> bind(
        Scheduler& sched, const Address& local, std::source_location where = std::source_location::current()) {
        return bind(sched, local, Options{}, where);
    }

    // A socket connected to `remote` (asyncio's create_datagram_endpoint with
    // remote_addr): bound to the any-address of remote's family, port 0, then
    // connect(remote), which narrows the local address to the one that routes
    // there. Throws like bind() and connect().
    [[nodiscard]] static std::shared_ptr<UdpSocket> connect(
        Scheduler& sched, const Address& remote, Options options,
        std::source_location where = std::source_location::current());
    [[nodiscard]] static std::shared_ptr<UdpSocket> connect(
        Scheduler& sched, const Address& remote, std::source_location where = std::source_location::current()) {
        return connect(sched, remote, Options{}, where);
    }

    UdpSocket(Passkey, Scheduler& sched, int fd, Address local, Options options, std::source_location where);
    ~UdpSocket();
    UdpSocket(const UdpSocket&) = delete;
    UdpSocket& operator=(const UdpSocket&) = delete;

    void set_datagram_callback(DatagramCallback cb);
    void set_error_callback(ErrorCallback cb);

    // Connects this (bound) socket to `remote`, like libuv's uv_udp_connect:
    // from now on send() needs no address, only `remote`'s datagrams are
    // delivered (ones already waiting from others are discarded), and an ICMP
    // port-unreachable for what we sent comes back as ECONNREFUSED. Datagrams
    // queued before the call still go to the address they were sent to.
    // Synchronous (a UDP connect sends nothing). Throws std::invalid_argument
    // if `remote` is not of the socket's family (an IPv6 socket takes
    // "::ffff:a.b.c.d" for IPv4 peers), std::logic_error if already connected
    // or closed, std::system_error if the kernel refuses (no route).
    void connect(const Address& remote);

    // Sends one datagram now, or queues it if the kernel buffer is full.
    // False if it was dropped: closed, queue full, or refused by the kernel
    // (the error then goes to the error callback on a later iteration).
    // A connected socket takes only its peer as `to` (std::invalid_argument).
    bool send_to(std::string_view data, const Address& to);
    // send_to(data, peer_address()); std::logic_error on an unconnected socket.
    bool send(std::string_view data);

    // Stops receiving, drops queued datagrams, closes the fd. Safe from inside
    // a callback; idempotent.
    void close();
    bool is_open() const noexcept { return fd_ >= 0; }
    bool is_connected() const noexcept { return peer_.family() != AF_UNSPEC; }
    const Address& local_address() const noexcept { return local_; }
    // The connected peer; unspecified (AF_UNSPEC) if not connected.
    const Address& peer_address() const noexcept { return peer_; }
    int fd() const noexcept { return fd_; }
    std::size_t queued_bytes() const noexcept { return queued_bytes_; }
    std::uint64_t dropped() const noexcept { return dropped_; }

private:
    // The loop cannot watch the socket (epoll_ctl: ENOMEM, ENOSPC): the error
    // callback (or the exception handler) hears it, and the socket closes.
    void on_unwatchable(int fd, std::error_code error) override;
    void close_with_loop() noexcept override;  // Scheduler::close(), ~Scheduler: see loop_sockets.hpp
    void describe(int fd, std::vector<LiveItem>& out) const override;
    struct Datagram {
        std::string data;
        Address to;  // AF_UNSPEC: the connected peer (sent without an address)
    };

    bool send_datagram(std::string_view data, const Address& to);
    int try_send(std::string_view data, const Address& to);
    int report_error_queue_later();
    void on_readable();
    void on_writable();
    const Address& destination_of(const Address& to) const noexcept { return to.family() == AF_UNSPEC ? peer_ : to; }
    void report(int error, const Address& destination);
    void report_later(int error, const Address& destination);

    Scheduler& sched_;
    int fd_;
    std::source_location where_;  // the user's bind() or connect() call
    Address local_;
    Address peer_;
    Options options_;
    // close() resets both, also from inside one of them: see callback_slot.hpp.
    CallbackSlot<void(UdpSocket&, std::string_view, const Address&)> on_datagram_;
    CallbackSlot<void(UdpSocket&, std::error_code, const Address&)> on_error_;
    std::deque<Datagram> queue_;
    std::size_t queued_bytes_ = 0;
    std::uint64_t dropped_ = 0;
};

using UdpSocketPtr = std::shared_ptr<UdpSocket>;

}  // namespace reactor
