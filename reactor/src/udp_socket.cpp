#include "reactor/udp_socket.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "socket_ops.hpp"

namespace reactor {
namespace {

// Larger than any UDP payload over IPv4 or IPv6 (65,507 / 65,527 bytes), so
// no datagram is ever truncated.
constexpr std::size_t kMaxDatagram = 64 * 1024;
// Datagrams read per wake-up: enough to amortise the wait, few enough that a
// flooded socket cannot starve the rest of the loop.
constexpr int kMaxDatagramsPerWakeup = 64;

bool is_transient_send_error(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS; }

}  // namespace

std::shared_ptr<UdpSocket> UdpSocket::bind(Scheduler& sched, const Address& local, Options options) {
    if (!local.is_ip()) throw std::invalid_argument("reactor: a UDP socket needs an IPv4 or IPv6 address");
    auto fd = detail::make_socket(local.family(), SOCK_DGRAM);
    if (options.reuse_address) detail::set_reuse_address(fd.get());
    if (::bind(fd.get(), local.data(), local.size()) != 0)
        throw detail::system_error(errno, fmt::format("reactor: bind {}", local.to_string()));
    Address bound = Address::local_of(fd.get());
    auto sock = std::make_shared<UdpSocket>(Passkey{}, sched, fd.release(), bound, options);
    sched.add_reader(sock->fd_, [s = sock.get()] { s->on_readable(); });  // on throw, ~UdpSocket closes
    return sock;
}

UdpSocket::UdpSocket(Passkey, Scheduler& sched, int fd, Address local, Options options)
    : sched_(sched), fd_(fd), local_(local), options_(options), callbacks_(std::make_shared<Callbacks>()) {}

UdpSocket::~UdpSocket() { close(); }

void UdpSocket::set_datagram_callback(DatagramCallback cb) {
    if (callbacks_) callbacks_->on_datagram = std::move(cb);
}

void UdpSocket::set_error_callback(ErrorCallback cb) {
    if (callbacks_) callbacks_->on_error = std::move(cb);
}

void UdpSocket::close() {
    if (fd_ < 0) return;
    sched_.forget_fd(fd_);  // before close: see Scheduler::forget_fd
    detail::close_fd(fd_);
    fd_ = -1;
    queue_.clear();
    queued_bytes_ = 0;
    callbacks_.reset();  // a running callback keeps its own copy alive
}

bool UdpSocket::send_to(std::string_view data, const Address& to) {
    if (fd_ < 0) return false;
    if (queue_.empty()) {
        ssize_t n;
        do {
            n = ::sendto(fd_, data.data(), data.size(), MSG_NOSIGNAL, to.data(), to.size());
        } while (n < 0 && errno == EINTR);
        if (n >= 0) return true;
        if (!is_transient_send_error(errno)) {
            report_later(errno);
            return false;
        }
    }
    if (queued_bytes_ + data.size() > options_.max_queued_bytes) {
        ++dropped_;
        return false;
    }
    if (queue_.empty()) sched_.add_writer(fd_, [this] { on_writable(); });  // close() deregisters before we die
    queue_.push_back(Datagram{std::string(data), to});
    queued_bytes_ += data.size();
    return true;
}

void UdpSocket::on_writable() {
    while (!queue_.empty()) {
        const Datagram& d = queue_.front();
        ssize_t n;
        do {
            n = ::sendto(fd_, d.data.data(), d.data.size(), MSG_NOSIGNAL, d.to.data(), d.to.size());
        } while (n < 0 && errno == EINTR);
        if (n < 0 && is_transient_send_error(errno)) return;
        int err = n < 0 ? errno : 0;
        queued_bytes_ -= d.data.size();
        queue_.pop_front();
        if (err != 0) report_later(err);
    }
    sched_.remove_writer(fd_);
}

void UdpSocket::on_readable() {
    auto keep_alive = shared_from_this();  // a callback may drop the last reference
    auto callbacks = callbacks_;           // ... or close()
    char* buf = detail::read_scratch(kMaxDatagram);
    for (int i = 0; i < kMaxDatagramsPerWakeup && fd_ >= 0; ++i) {
        sockaddr_storage from;
        socklen_t from_len = sizeof from;
        ssize_t n = ::recvfrom(fd_, buf, kMaxDatagram, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            report(errno);  // e.g. ECONNREFUSED from an earlier send; the socket stays usable
            continue;
        }
        if (callbacks && callbacks->on_datagram)
            callbacks->on_datagram(*this, std::string_view(buf, static_cast<std::size_t>(n)),
                                   Address::from_sockaddr(reinterpret_cast<sockaddr*>(&from), from_len));
    }
}

void UdpSocket::report(int error) {
    if (auto callbacks = callbacks_; callbacks && callbacks->on_error)
        return callbacks->on_error(*this, std::error_code(error, std::generic_category()));
    ErrorContext ctx;
    ctx.message = fmt::format("UDP socket {}: {}", local_.to_string(), std::strerror(error));
    ctx.fd = fd_;
    sched_.call_exception_handler(ctx);
}

void UdpSocket::report_later(int error) {
    sched_.call_soon([weak = weak_from_this(), error] {
        if (auto self = weak.lock(); self && self->is_open()) self->report(error);
    });
}

}  // namespace reactor
