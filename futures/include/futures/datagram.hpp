// SPDX-License-Identifier: MIT
// futures::DatagramSocket: UDP in the futures layer, over reactor::UdpSocket
// (asyncio's create_datagram_endpoint, as futures rather than a protocol).
//
// receive() is a Future<Datagram> (the payload and its sender): datagrams go
// to waiting receives in the order those were made; one that arrives with
// nobody waiting is kept (up to Options::max_buffered, then dropped and
// counted) for the next receive(). A receive cancelled (or dropped) while it
// waits never takes a datagram. What the kernel reports about datagrams
// already sent (ECONNREFUSED after an ICMP port-unreachable, ...) comes in
// the same order, as a receive() that fails with std::system_error naming
// the datagram's destination.
//
// send_to()/send() are a Future<void> done once the kernel took the
// datagram: that is the back-pressure. While the kernel's buffer is full,
// sends wait in order (at most Options::max_pending_sends; past that a send
// fails at once with ENOBUFS: wait for the earlier ones). Cancelling a send
// still waiting withdraws its datagram. A datagram the kernel refuses
// (EMSGSIZE, ...) fails its own future with std::system_error.
//
// Owns its UdpSocket; close() (or destruction) fails waiting receives and
// sends with std::system_error(EBADF). Its lifetime against the Scheduler's:
// docs/scheduler.md, "What outlives what".
// Loop thread only; never calls back synchronously.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>

#include <reactor/export.hpp>
#include <reactor/net/address.hpp>
#include <reactor/net/udp_socket.hpp>
#include <reactor/scheduler.hpp>

#include "futures/detail/parked.hpp"
#include "futures/future.hpp"

namespace futures {

// One received datagram: never merged with another or split.
struct Datagram {
    std::string data;
    reactor::Address from;
};

class REACTOR_API DatagramSocket {
public:
    struct Options {
        bool reuse_address = false;        // SO_REUSEADDR
        std::size_t max_buffered = 1024;   // datagrams kept for receives not yet made
        std::size_t max_pending_sends = 1024;  // sends waiting for room in the kernel
    };

    // Binds to `local` (port 0: the kernel picks; see local_address()).
    // Throws like UdpSocket::bind (std::system_error, std::invalid_argument),
    // and std::invalid_argument for a limit of 0.
    static std::unique_ptr<DatagramSocket> bind(reactor::Scheduler& sched, const reactor::Address& local,
                                                Options options);
    static std::unique_ptr<DatagramSocket> bind(reactor::Scheduler& sched, const reactor::Address& local) {
        return bind(sched, local, Options{});
    }
    // Connected to `remote` (UdpSocket::connect): send() needs no address and
    // only `remote`'s datagrams are received.
    static std::unique_ptr<DatagramSocket> connect(reactor::Scheduler& sched, const reactor::Address& remote,
                                                   Options options);
    static std::unique_ptr<DatagramSocket> connect(reactor::Scheduler& sched, const reactor::Address& remote) {
        return connect(sched, remote, Options{});
    }

    // Over an open UdpSocket of `sched`, whose datagram and error callbacks it
    // takes over (use bind() or connect()).
    DatagramSocket(reactor::Scheduler& sched, reactor::UdpSocketPtr socket, Options options);
    DatagramSocket(const DatagramSocket&) = delete;
    DatagramSocket& operator=(const DatagramSocket&) = delete;
    ~DatagramSocket();

    // The next datagram (or error report), FIFO among receives.
    [[nodiscard]] Future<Datagram> receive(std::source_location where = std::source_location::current());

    // Sends `data` to `to`: done once the kernel took it. A connected socket
    // takes only its peer as `to`, and send() only on a connected socket:
    // otherwise std::invalid_argument / std::logic_error is thrown here and
    // nothing is sent (UdpSocket's rules).
    [[nodiscard]] Future<void> send_to(std::string data, const reactor::Address& to,
                                       std::source_location where = std::source_location::current());
    [[nodiscard]] Future<void> send(std::string data, std::source_location where = std::source_location::current());

    // Closes the socket; waiting receives and sends fail with EBADF. Idempotent.
    void close();
    bool is_open() const noexcept { return socket_->is_open(); }
    const reactor::Address& local_address() const noexcept { return local_; }
    const reactor::Address& peer_address() const noexcept { return socket_->peer_address(); }
    // Datagrams dropped because max_buffered were already waiting for a receive().
    std::uint64_t dropped() const noexcept { return dropped_; }
    std::size_t buffered() const noexcept { return buffered_.size(); }
    std::size_t waiting_receives() const noexcept { return receivers_.size(); }
    std::size_t pending_sends() const noexcept { return senders_.size(); }

private:
    struct Outgoing {
        std::string data;
        reactor::Address to;  // AF_UNSPEC: the connected peer
    };
    using Incoming = std::variant<Datagram, std::exception_ptr>;

    void deliver(Incoming in);
    Future<void> send_datagram(std::string data, const reactor::Address& to, std::source_location where);
    int try_send(const Outgoing& out);
    void on_writable();
    std::exception_ptr closed_error(const char* operation) const;

    reactor::Scheduler& sched_;
    reactor::UdpSocketPtr socket_;
    reactor::Address local_;
    Options options_;
    std::deque<Incoming> buffered_;
    std::uint64_t dropped_ = 0;
    bool writing_ = false;  // a writer is registered: sends wait for the kernel
    detail::ParkedList<Datagram> receivers_;
    detail::ParkedList<void, Outgoing> senders_;
};

}  // namespace futures
