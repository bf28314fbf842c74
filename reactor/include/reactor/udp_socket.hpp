// reactor::UdpSocket: a non-blocking datagram socket (IPv4 or IPv6).
//
// Owns its fd. Owned by whoever holds the shared_ptr; destroying it, or
// close(), stops it. Destroy it before its Scheduler. Datagrams are never
// merged or split; a datagram the kernel cannot take at once is queued (up to
// Options::max_queued_bytes, then dropped and counted) and sent in order when
// the socket is writable. Loop thread only; never calls back synchronously.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "reactor/address.hpp"
#include "reactor/scheduler.hpp"

namespace reactor {

class UdpSocket : public std::enable_shared_from_this<UdpSocket> {
    struct Passkey {};

public:
    // `data` is valid only during the call.
    using DatagramCallback = std::function<void(UdpSocket&, std::string_view data, const Address& from)>;
    // A send the kernel refused (EMSGSIZE, ENETUNREACH, ...) or an error read
    // back from the socket (ECONNREFUSED after an ICMP port-unreachable).
    // Without one, errors go to the Scheduler's exception handler.
    using ErrorCallback = std::function<void(UdpSocket&, std::error_code)>;

    struct Options {
        std::size_t max_queued_bytes = 1024 * 1024;
        bool reuse_address = false;  // SO_REUSEADDR
    };

    // Binds to `local` (port 0: the kernel picks; see local_address()) and
    // starts receiving; datagrams arriving before a datagram callback is set
    // are discarded. Throws std::system_error or std::invalid_argument.
    [[nodiscard]] static std::shared_ptr<UdpSocket> bind(Scheduler& sched, const Address& local, Options options);
    [[nodiscard]] static std::shared_ptr<UdpSocket> bind(Scheduler& sched, const Address& local) {
        return bind(sched, local, Options{});
    }

    UdpSocket(Passkey, Scheduler& sched, int fd, Address local, Options options);
    ~UdpSocket();
    UdpSocket(const UdpSocket&) = delete;
    UdpSocket& operator=(const UdpSocket&) = delete;

    void set_datagram_callback(DatagramCallback cb);
    void set_error_callback(ErrorCallback cb);

    // Sends one datagram now, or queues it if the kernel buffer is full.
    // False if it was dropped: closed, queue full, or refused by the kernel
    // (the error then goes to the error callback on a later iteration).
    bool send_to(std::string_view data, const Address& to);

    // Stops receiving, drops queued datagrams, closes the fd. Safe from inside
    // a callback; idempotent.
    void close();
    bool is_open() const noexcept { return fd_ >= 0; }
    const Address& local_address() const noexcept { return local_; }
    int fd() const noexcept { return fd_; }
    std::size_t queued_bytes() const noexcept { return queued_bytes_; }
    std::uint64_t dropped() const noexcept { return dropped_; }

private:
    struct Datagram {
        std::string data;
        Address to;
    };
    struct Callbacks {
        DatagramCallback on_datagram;
        ErrorCallback on_error;
    };

    void on_readable();
    void on_writable();
    void report(int error);
    void report_later(int error);

    Scheduler& sched_;
    int fd_;
    Address local_;
    Options options_;
    std::shared_ptr<Callbacks> callbacks_;  // shared so that close() inside a callback is safe
    std::deque<Datagram> queue_;
    std::size_t queued_bytes_ = 0;
    std::uint64_t dropped_ = 0;
};

using UdpSocketPtr = std::shared_ptr<UdpSocket>;

}  // namespace reactor
