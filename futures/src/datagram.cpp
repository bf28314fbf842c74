// SPDX-License-Identifier: MIT
// DatagramSocket: receives from the UdpSocket's callbacks, handed to waiting
// receive() futures or buffered; sends written by hand on the socket's fd, so
// that each datagram's future can tell when the kernel took it.
#include "futures/datagram.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <reactor/detail/kernel_calls.hpp>

#include "futures/leaves.hpp"

namespace futures {
namespace {

bool is_transient(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS; }

std::string name_of(const reactor::Address& local) { return "the DatagramSocket on " + local.to_string(); }

}  // namespace

std::unique_ptr<DatagramSocket> DatagramSocket::bind(reactor::Scheduler& sched, const reactor::Address& local,
                                                     Options options) {
    reactor::UdpSocket::Options udp;
    udp.reuse_address = options.reuse_address;
    return std::make_unique<DatagramSocket>(sched, reactor::UdpSocket::bind(sched, local, udp), options);
}

std::unique_ptr<DatagramSocket> DatagramSocket::connect(reactor::Scheduler& sched, const reactor::Address& remote,
                                                        Options options) {
    reactor::UdpSocket::Options udp;
    udp.reuse_address = options.reuse_address;
    return std::make_unique<DatagramSocket>(sched, reactor::UdpSocket::connect(sched, remote, udp), options);
}

DatagramSocket::DatagramSocket(reactor::Scheduler& sched, reactor::UdpSocketPtr socket, Options options)
    : sched_(sched),
      socket_(std::move(socket)),
      local_(socket_->local_address()),
      options_(options),
      receivers_(sched, name_of(local_)),
      senders_(sched, name_of(local_)) {
    if (options.max_buffered == 0 || options.max_pending_sends == 0)
        throw std::invalid_argument("DatagramSocket: max_buffered and max_pending_sends must be at least 1");
    // The socket is ours alone and dies with us (close() resets both
    // callbacks), so they may hold `this`.
    socket_->set_datagram_callback([this](reactor::UdpSocket&, std::string_view data, const reactor::Address& from) {
        deliver(Datagram{std::string(data), from});
    });
    socket_->set_error_callback([this](reactor::UdpSocket&, std::error_code code, const reactor::Address& dest) {
        std::string what = fmt::format("UDP {}", local_.to_string());
        if (dest.family() != AF_UNSPEC) what += fmt::format(": datagram to {}", dest.to_string());
        deliver(std::make_exception_ptr(std::system_error(code, what)));
    });
}

DatagramSocket::~DatagramSocket() { close(); }

void DatagramSocket::deliver(Incoming in) {
    if (auto r = receivers_.pop()) {
        if (auto* d = std::get_if<Datagram>(&in)) {
            r->finish_value(std::move(*d));
        } else {
            r->finish_failed(std::get<std::exception_ptr>(in));
        }
    } else if (buffered_.size() < options_.max_buffered) {
        buffered_.push_back(std::move(in));
    } else {
        ++dropped_;  // UDP: a receiver that does not keep up loses datagrams, not memory
    }
}

Future<Datagram> DatagramSocket::receive(std::source_location where) {
    if (!buffered_.empty()) {
        Incoming in = std::move(buffered_.front());
        buffered_.pop_front();
        if (auto* d = std::get_if<Datagram>(&in)) return make_ready_future(sched_, std::move(*d), where);
        return make_exception_future<Datagram>(sched_, std::get<std::exception_ptr>(in), where);
    }
    if (!is_open()) return make_exception_future<Datagram>(sched_, closed_error("receive"), where);
    return receivers_.park(where);
}

Future<void> DatagramSocket::send_to(std::string data, const reactor::Address& to, std::source_location where) {
    if (!socket_->is_connected()) return send_datagram(std::move(data), to, where);
    if (!(to == socket_->peer_address()))
        throw std::invalid_argument(fmt::format("DatagramSocket: {} is connected to {}; cannot send to {}",
                                                local_.to_string(), socket_->peer_address().to_string(),
                                                to.to_string()));
    return send_datagram(std::move(data), reactor::Address{}, where);
}

Future<void> DatagramSocket::send(std::string data, std::source_location where) {
    if (!socket_->is_connected())
        throw std::logic_error(fmt::format("DatagramSocket: send() on {}, which is not connected: use send_to()",
                                           local_.to_string()));
    return send_datagram(std::move(data), reactor::Address{}, where);
}

Future<void> DatagramSocket::send_datagram(std::string data, const reactor::Address& to, std::source_location where) {
    if (!is_open()) return make_exception_future<void>(sched_, closed_error("send"), where);
    Outgoing out{std::move(data), to};
    if (senders_.empty()) {  // else it queues behind them: datagrams leave in order
        int err = try_send(out);
        if (err == 0) return make_ready_future(sched_, where);
        if (!is_transient(err)) {
            const reactor::Address& dest = to.family() == AF_UNSPEC ? socket_->peer_address() : to;
            return make_exception_future<void>(
                sched_,
                std::system_error(err, std::generic_category(),
                                  fmt::format("UDP {}: send to {}", local_.to_string(), dest.to_string())),
                where);
        }
    }
    if (senders_.size() >= options_.max_pending_sends)
        return make_exception_future<void>(
            sched_,
            std::system_error(ENOBUFS, std::generic_category(),
                              fmt::format("UDP {}: {} sends already wait for the kernel; wait for their futures",
                                          local_.to_string(), senders_.size())),
            where);
    Future<void> parked = senders_.park(where, std::move(out));
    if (!writing_) {
        sched_.add_writer(socket_->fd(), [this] { on_writable(); });  // close() removes it before we die
        writing_ = true;
    }
    return parked;
}

// 0 once sent, else the errno. A send can fail with the error of an earlier
// datagram (an ICMP report the kernel keeps for the socket's next call); that
// report also stays on the socket's error queue, where the UdpSocket reads it
// and we deliver it to a receive(). So a hard error is tried once more before
// it is taken as this datagram's own.
int DatagramSocket::try_send(const Outgoing& out) {
    const bool to_peer = out.to.family() == AF_UNSPEC;
    auto once = [&] {
        ssize_t n;
        do {
            n = reactor::detail::sys::sendto(sched_.kernel(), socket_->fd(), out.data.data(), out.data.size(),
                                             MSG_NOSIGNAL, to_peer ? nullptr : out.to.data(),
                                             to_peer ? 0 : out.to.size());
        } while (n < 0 && errno == EINTR);
        return n < 0 ? errno : 0;
    };
    int err = once();
    if (err != 0 && !is_transient(err)) err = once();
    return err;
}

void DatagramSocket::on_writable() {
    while (auto* next = senders_.front()) {
        int err = try_send(next->item());
        if (is_transient(err)) return;  // still full: wait for the next wake-up
        auto done = senders_.pop();
        if (err == 0) {
            done->finish_value();
        } else {
            const reactor::Address& to = done->item().to;
            done->finish_failed(std::make_exception_ptr(std::system_error(
                err, std::generic_category(),
                fmt::format("UDP {}: send to {}", local_.to_string(),
                            (to.family() == AF_UNSPEC ? socket_->peer_address() : to).to_string()))));
        }
    }
    sched_.remove_writer(socket_->fd());
    writing_ = false;
}

void DatagramSocket::close() {
    if (!is_open()) return;
    if (writing_) sched_.remove_writer(socket_->fd());
    writing_ = false;
    socket_->close();
    buffered_.clear();
    receivers_.fail_all(closed_error("receive"));
    senders_.fail_all(closed_error("send"));
}

std::exception_ptr DatagramSocket::closed_error(const char* operation) const {
    return std::make_exception_ptr(std::system_error(
        EBADF, std::generic_category(), fmt::format("{}: {} is closed", operation, name_of(local_))));
}

}  // namespace futures
