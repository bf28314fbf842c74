#include "reactor/net/connector.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <stdexcept>
#include <utility>

#include "socket_ops.hpp"

namespace reactor {

std::shared_ptr<Connector> Connector::start(Scheduler& sched, const Address& address, ConnectCallback cb, Options options) {
    if (!address.is_ip() && !address.is_unix())
        throw std::invalid_argument("reactor: connect needs an IPv4, IPv6 or Unix address");
    auto c = std::make_shared<Connector>(Passkey{}, sched, address, std::move(cb), options);
    c->begin();
    return c;
}

Connector::Connector(Passkey, Scheduler& sched, Address address, ConnectCallback cb, Options options)
    : sched_(sched), address_(address), cb_(std::move(cb)), options_(options) {}

Connector::~Connector() {
    if (fd_ >= 0) detail::close_fd(fd_);  // only if the loop was torn down mid-connect
}

void Connector::begin() {
    try {
        fd_ = detail::make_socket(address_.family(), SOCK_STREAM).release();
    } catch (const std::system_error& e) {
        return finish_later(e.code().value());
    }
    if (::connect(fd_, address_.data(), address_.size()) == 0) return finish_later(0);  // Unix sockets usually do
    // EINTR is not retried: the attempt goes on in the background, as with EINPROGRESS.
    int err = errno;
    if (err != EINPROGRESS && err != EINTR) return finish_later(err);
    try {
        // The waiter holds us: a pending connect needs no other owner.
        sched_.write_wait(fd_, [self = shared_from_this()] { self->on_writable(); });
    } catch (const std::invalid_argument&) {
        return finish_later(EMFILE);  // select cannot watch this fd
    }
    waiting_ = true;
    if (options_.timeout.count() > 0)
        timer_ = sched_.call_later(options_.timeout, [self = shared_from_this()] { self->finish(ETIMEDOUT); });
}

void Connector::on_writable() {
    waiting_ = false;  // one-shot: already deregistered
    finish(detail::take_socket_error(fd_));
}

void Connector::finish_later(int error) {
    soon_ = sched_.call_soon([self = shared_from_this(), error] { self->finish(error); });
}

void Connector::finish(int error) {
    if (state_ != State::connecting) return;
    state_ = State::done;
    timer_.cancel();
    if (waiting_) sched_.remove_writer(fd_);  // the timeout fired first
    waiting_ = false;
    ConnectCallback cb = std::move(cb_);
    if (error == 0) {
        if (options_.no_delay && address_.is_ip()) detail::set_no_delay(fd_);
        ConnectionPtr conn;
        try {
            conn = Connection::adopt(sched_, std::exchange(fd_, -1), options_.connection);  // closes it on failure
        } catch (const std::invalid_argument&) {
            error = EMFILE;
        }
        if (conn) {
            if (cb) cb(std::move(conn), {});
            return;  // without a callback the connection lives on until the peer closes it
        }
    }
    close_socket();
    if (cb) cb(nullptr, std::error_code(error, std::generic_category()));
}

void Connector::close_socket() {
    waiting_ = false;
    if (fd_ < 0) return;
    sched_.forget_fd(fd_);  // before close: see Scheduler::forget_fd
    detail::close_fd(std::exchange(fd_, -1));
}

bool Connector::cancel() {
    if (state_ != State::connecting) return false;
    state_ = State::cancelled;
    timer_.cancel();
    soon_.cancel();
    close_socket();
    cb_ = nullptr;
    return true;
}

}  // namespace reactor
