// SPDX-License-Identifier: MIT
#include "reactor/net/connector.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "reactor/net/resolve_error.hpp"
#include "reactor/detail/kernel_calls.hpp"
#include "reactor/detail/world_mark.hpp"
#include "socket_ops.hpp"

namespace reactor {

namespace {
std::error_code errno_code(int error) { return {error, std::generic_category()}; }
}  // namespace

std::shared_ptr<Connector> Connector::start(Scheduler& sched, const Address& address, ConnectCallback cb, Options options,
                                            std::source_location where) {
    return start(sched, std::vector<Address>{address}, std::move(cb), options, where);
}

std::shared_ptr<Connector> Connector::start(Scheduler& sched, std::vector<Address> addresses, ConnectCallback cb,
                                            Options options, std::source_location where) {
    if (addresses.empty()) throw std::invalid_argument("reactor: connect needs at least one address");
    for (const Address& a : addresses)
        if (!a.is_ip() && !a.is_unix()) throw std::invalid_argument("reactor: connect needs IPv4, IPv6 or Unix addresses");
    auto c = std::make_shared<Connector>(Passkey{}, sched, std::string(), std::move(cb), options, where);
    c->arm_timeout();
    c->try_addresses(std::move(addresses));
    return c;
}

std::shared_ptr<Connector> Connector::start(Scheduler& sched, std::string_view host, std::uint16_t port,
                                            ConnectCallback cb, Options options, std::source_location where) {
    auto c = std::make_shared<Connector>(Passkey{}, sched, std::string(host), std::move(cb), options, where);
    c->arm_timeout();
    try {
        c->try_addresses({Address::parse(host, port)});
    } catch (const std::invalid_argument&) {
        c->look_up(port);  // not a numeric host: a name
    }
    return c;
}

Connector::Connector(Passkey, Scheduler& sched, std::string host, ConnectCallback cb, Options options,
                     std::source_location where)
    : sched_(sched),
      kernel_(sched.shared_kernel()),
      where_(where),
      host_(std::move(host)),
      cb_(std::move(cb)),
      options_(options) {
    // Refused here, before anything is resolved or scheduled: a throw from
    // begin() would reach the loop's exception handler, not the caller.
    detail::refuse_real_socket(kernel_.get(), "reactor::connect");
}

void Connector::describe(int fd, std::vector<LiveItem>& out) const {
    out.push_back(LiveItem{LiveItem::Kind::connecting, fmt::format("fd {}, to {}", fd, address_.to_string()), where_, true});
}

Connector::~Connector() {
    if (fd_ >= 0) detail::close_fd(kernel_.get(), fd_);  // only if the loop was torn down mid-connect
}

void Connector::arm_timeout() {
    if (options_.timeout.count() > 0)
        timer_ = sched_.call_later(
            options_.timeout, [self = shared_from_this()] { self->finish(errno_code(ETIMEDOUT)); }, where_);
}

// getaddrinfo on the pool; the job's `done` holds us until the answer is back.
// A loop with a kernel of its own (a simulated host) asks that kernel, on the
// loop: it answers at once, and no other thread may touch it.
void Connector::look_up(std::uint16_t port) {
    state_ = State::resolving;
    if (Kernel* kernel = kernel_.get()) {
        try {
            auto found = Address::resolve(kernel, host_, port);
            soon_ = sched_.call_soon(
                [self = shared_from_this(), found = std::move(found)] {
                    if (self->state_ == State::resolving) self->try_addresses(found);
                },
                where_);
        } catch (const std::system_error& e) {
            finish_later(e.code());
        }
        return;
    }
    ThreadPool& pool = options_.resolver ? *options_.resolver : default_thread_pool();
    try {
        lookup_ = pool.submit(
            sched_, [host = host_, port] { return Address::resolve(host, port); },
            [self = shared_from_this()](JobResult<std::vector<Address>>&& result) { self->on_resolved(std::move(result)); },
            where_);
    } catch (const ThreadPoolFull&) {
        finish_later(make_error_code(resolve_errc::again));
    } catch (const ThreadPoolClosed&) {
        finish_later(errno_code(ECANCELED));
    }
}

void Connector::on_resolved(JobResult<std::vector<Address>>&& result) {
    lookup_ = {};
    if (state_ != State::resolving) return;
    switch (result.status) {
    case JobStatus::done:
        if (result.value->empty()) return finish(make_error_code(resolve_errc::no_data));
        return try_addresses(std::move(*result.value));
    case JobStatus::failed:
        try {
            std::rethrow_exception(result.error);
        } catch (const std::system_error& e) {
            return finish(e.code());
        } catch (...) {
            return finish(make_error_code(resolve_errc::fail));  // e.g. bad_alloc on the worker
        }
    case JobStatus::cancelled: return finish(errno_code(ECANCELED));
    }
}

void Connector::try_addresses(std::vector<Address> addresses) {
    state_ = State::connecting;
    std::reverse(addresses.begin(), addresses.end());
    untried_ = std::move(addresses);
    address_ = untried_.back();
    untried_.pop_back();
    begin();
}

void Connector::begin() {
    try {
        fd_ = detail::make_socket(kernel_.get(), address_.family(), SOCK_STREAM).release();
    } catch (const std::system_error& e) {
        return finish_later(errno_code(e.code().value()));
    }
    if (detail::sys::connect(kernel_.get(), fd_, address_.data(), address_.size()) == 0)
        return finish_later({});  // Unix sockets usually do
    // EINTR is not retried: the attempt goes on in the background, as with EINPROGRESS.
    int err = errno;
    if (err != EINPROGRESS && err != EINTR) return finish_later(errno_code(err));
    try {
        // The waiter holds us: a pending connect needs no other owner. It
        // stays registered until we have heard if the loop cannot watch the
        // socket (see FdOwner), so that holds then too.
        sched_.write_wait(fd_, [self = shared_from_this()] { self->on_writable(); }, where_);
        sched_.set_fd_owner(fd_, *this);  // close_socket forgets it before closing
    } catch (const std::invalid_argument&) {
        return finish_later(errno_code(EMFILE));  // select cannot watch this fd
    }
    waiting_ = true;
}

void Connector::on_unwatchable(int /*fd*/, std::error_code error) {
    // Our waiter, which holds us, is still registered: forgetting the fd
    // (close_socket) destroys it, and must not destroy us meanwhile.
    auto self = shared_from_this();
    waiting_ = false;
    attempt_done(error.value());
}

void Connector::on_writable() {
    waiting_ = false;  // one-shot: already deregistered
    attempt_done(detail::take_socket_error(kernel_.get(), fd_));
}

// One address answered: connected, or on to the next address if any is left.
void Connector::attempt_done(int error) {
    if (state_ != State::connecting) return;
    if (error == 0 || untried_.empty()) return finish(errno_code(error));
    close_socket();
    address_ = untried_.back();
    untried_.pop_back();
    begin();
}

// An outcome known at once is delivered on the next iteration, never from
// inside start(); a socket error there still moves on to the next address.
void Connector::finish_later(std::error_code error) {
    soon_ = sched_.call_soon(
        [self = shared_from_this(), error] {
            if (error.category() == std::generic_category() && self->state_ == State::connecting)
                self->attempt_done(error.value());
            else
                self->finish(error);
        },
        where_);
}

void Connector::finish(std::error_code error) {
    if (state_ != State::connecting && state_ != State::resolving) return;
    state_ = State::done;
    timer_.cancel();
    soon_.cancel();
    lookup_.cancel();
    if (waiting_) sched_.remove_writer(fd_);  // the timeout fired first
    waiting_ = false;
    untried_.clear();
    ConnectCallback cb = std::move(cb_);
    if (!error && fd_ >= 0) {
        if (options_.no_delay && address_.is_ip()) detail::set_no_delay(kernel_.get(), fd_);
        ConnectionPtr conn;
        try {
            conn = Connection::adopt(sched_, std::exchange(fd_, -1), options_.connection, where_);  // closes it on failure
        } catch (const std::invalid_argument&) {
            error = errno_code(EMFILE);
        }
        if (conn) {
            if (cb) cb(std::move(conn), {});
            return;  // without a callback the connection lives on until the peer closes it
        }
    }
    close_socket();
    if (cb) cb(nullptr, error);
}

void Connector::close_socket() {
    waiting_ = false;
    if (fd_ < 0) return;
    sched_.forget_fd(fd_);  // before close: see Scheduler::forget_fd
    detail::close_fd(kernel_.get(), std::exchange(fd_, -1));
}

bool Connector::cancel() {
    if (!is_pending()) return false;
    state_ = State::cancelled;
    timer_.cancel();
    soon_.cancel();
    lookup_.cancel();
    untried_.clear();
    close_socket();
    cb_ = nullptr;
    return true;
}

}  // namespace reactor
