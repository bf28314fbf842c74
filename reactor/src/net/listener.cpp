// SPDX-License-Identifier: MIT
#include "reactor/net/listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "loop_sockets.hpp"
#include "reactor/detail/kernel_calls.hpp"
#include "reactor/detail/world_mark.hpp"
#include "socket_ops.hpp"

namespace reactor {
namespace {

// A socket file left behind by a server that died is replaced; one that a live
// server still answers on is not (asyncio removes any socket file; we probe first).
// Unix socket files are the real file system's: only the real kernel has them.
void remove_stale_socket_file(const Address& address) {
    std::string path = address.host();
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return;  // absent, or not ours to remove
    auto probe = detail::make_socket(nullptr, AF_UNIX, SOCK_STREAM);
    int rc;
    do {
        rc = ::connect(probe.get(), address.data(), address.size());
    } while (rc != 0 && errno == EINTR);
    if (rc == 0 || errno == EAGAIN)
        throw detail::system_error(EADDRINUSE, fmt::format("reactor: a server is listening on {}", address.to_string()));
    if (errno == ECONNREFUSED) ::unlink(path.c_str());
}

// accept(2) failures that concern only the connection being accepted (it died
// in the backlog, or a firewall refused it): Linux documents that the caller
// should simply try the next one.
bool is_per_connection_error(int err) {
    switch (err) {
    case ECONNABORTED:
    case EPROTO:
    case EPERM:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
        return true;
    default:
        return false;
    }
}

}  // namespace

std::shared_ptr<Listener> Listener::listen(Scheduler& sched, const Address& address, AcceptCallback on_accept,
                                           Options options, std::source_location where) {
    if (!address.is_ip() && !address.is_unix())
        throw std::invalid_argument("reactor: listen needs an IPv4, IPv6 or Unix address");
    if (options.accept_batch == 0)
        throw std::invalid_argument(
            "reactor: Listener::Options::accept_batch must be at least 1 (0 would never accept)");
    Kernel* const kernel = sched.kernel();
    detail::refuse_real_socket(kernel, "Listener::listen");
    auto fd = detail::make_socket(kernel, address.family(), SOCK_STREAM);
    if (address.is_ip()) {
        if (options.reuse_address) detail::set_reuse_address(kernel, fd.get());
        if (options.reuse_port) detail::set_reuse_port(kernel, fd.get());
    }
    // A simulated kernel's Unix addresses are its own: no file to look at.
    bool file_path = kernel == nullptr && address.is_unix() && address.host().front() != '@';
    if (file_path) remove_stale_socket_file(address);
    if (detail::sys::bind(kernel, fd.get(), address.data(), address.size()) != 0)
        throw detail::system_error(errno, fmt::format("reactor: bind {}", address.to_string()));

    struct stat st {};
    bool owns_path = file_path && ::stat(address.host().c_str(), &st) == 0;
    if (detail::sys::listen(kernel, fd.get(), options.backlog) != 0) {
        int err = errno;
        if (owns_path) ::unlink(address.host().c_str());
        throw detail::system_error(err, fmt::format("reactor: listen {}", address.to_string()));
    }
    Address bound = address.is_unix() ? address : Address::local_of(kernel, fd.get());
    auto listener = std::make_shared<Listener>(Passkey{}, sched, fd.release(), bound, std::move(on_accept), options,
                                               where);
    listener->owns_path_ = owns_path;
    listener->path_dev_ = st.st_dev;
    listener->path_ino_ = st.st_ino;
    // Every connection it accepts shares this one (the destructor lets it go).
    listener->profile_.reset(&(new detail::ConnectionProfile(sched, where, options.connection))->hold());
    sched.service<detail::LoopSockets>().add(*listener);
    listener->start_accepting();  // may throw (select: fd >= FD_SETSIZE); the destructor cleans up
    return listener;
}

Listener::Listener(Passkey, Scheduler& sched, int fd, Address bound, AcceptCallback on_accept, Options options,
                   std::source_location where)
    : sched_(sched),
      fd_(fd),
      address_(bound),
      where_(where),
      on_accept_(std::move(on_accept)),
      connections_(ConnectionSet::create(sched)),
      options_(options),
      accept_failure_reports_(options.report_interval),
      refusal_reports_(options.report_interval),
      turned_away_reports_(options.report_interval) {}

// Not checked for the thread (a destructor cannot refuse): the loop's
// forget_fd still reports a listener destroyed off its loop's thread in
// debug mode. reactor::ForeignPtr destroys one on its loop.
Listener::~Listener() {
    close_now();
}

void Listener::close() {
    if (fd_ < 0) return;
    sched_.check_owner_thread("Listener::close", nullptr, &where_, "listener");
    close_now();
}

void Listener::close_now() {
    if (fd_ < 0) return;
    LoopSocket::unlink();  // from the loop's sockets
    sched_.forget_fd(fd_);  // before close: see Scheduler::forget_fd
    resume_timer_.cancel();
    detail::close_fd(sched_.kernel(), fd_);
    fd_ = -1;
    if (owns_path_) {
        // Remove the socket file only if it is still the one we bound: another
        // server may have replaced it since.
        std::string path = address_.host();
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0 && st.st_dev == path_dev_ && st.st_ino == path_ino_) ::unlink(path.c_str());
        owns_path_ = false;
    }
    // The callbacks may capture what holds us (a cycle): drop them. One that
    // is running lives on until it returns (callback_slot.hpp).
    on_accept_.reset();
    on_error_.reset();
    for (auto& cb : std::exchange(close_waiters_, {})) connections_->when_empty(std::move(cb));
}

void Listener::close_with_loop() noexcept {
    try {
        close_now();
    } catch (...) {
        // out of memory handing the wait_closed callbacks on: they are dropped
    }
}

void Listener::wait_closed(std::function<void()> cb) {
    sched_.check_owner_thread("Listener::wait_closed", nullptr, &where_, "listener");
    if (is_listening()) {
        close_waiters_.push_back(std::move(cb));
    } else {
        connections_->when_empty(std::move(cb));
    }
}

void Listener::set_error_callback(ErrorCallback cb) {
    if (!is_listening()) return;  // a closed listener keeps none (no cycle); its loop may be gone
    sched_.check_owner_thread("Listener::set_error_callback", nullptr, &where_, "listener");
    on_error_.set(std::move(cb));  // a closed listener keeps none (no cycle)
}

void Listener::start_accepting() {
    if (fd_ < 0) return;
    sched_.set_fd_owner(fd_, *this);  // close() forgets the fd before closing it, and before we die
    sched_.add_reader(fd_, [this] { on_readable(); }, where_);
}

void Listener::describe(int /*fd*/, std::vector<LiveItem>& out) const {
    out.push_back(LiveItem{LiveItem::Kind::listener,
                           fmt::format("fd {}, {}, {} accepted", fd_, address_.to_string(), accepted_), where_, true});
}

// Reported once, through the error callback if there is one (it sees a
// listener that is no longer listening: that is how it tells this from
// accept trouble), else through the exception handler.
void Listener::on_unwatchable(int fd, std::error_code error) {
    if (fd_ < 0) return;
    auto keep_alive = shared_from_this();  // the error callback may drop the last reference
    failure_ = error;
    const std::string_view what = "the loop cannot watch the listening socket; stopped listening";
    auto on_error = on_error_.take();  // close() drops it
    close();
    if (on_error) return on_error(*this, error, what);
    ErrorContext ctx;
    ctx.message = fmt::format("listener {}: {} ({})", address_.to_string(), what, error.message());
    ctx.fd = fd;
    sched_.call_exception_handler(ctx);
}

// Accepts until EAGAIN, or until accept_batch calls were made: the rest of
// the backlog waits for the next iteration, so the loop's other work runs
// between batches. The socket is still readable then, and every backend
// reports it again (epoll's registration of a listener is level-triggered).
// One counter, no allocation: this is the accept path.
void Listener::on_readable() {
    auto keep_alive = shared_from_this();  // the accept callback may drop the last reference
    Kernel* const kernel = sched_.kernel();
    for (std::size_t calls = 0; fd_ >= 0 && calls < options_.accept_batch; ++calls) {
        sockaddr_storage peer{};
        socklen_t peer_len = sizeof peer;
        int fd = detail::sys::accept4(kernel, fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len,
                                      SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int err = errno;
            if (err == EINTR || is_per_connection_error(err)) continue;
            if (err == EAGAIN || err == EWOULDBLOCK) return;
            // EMFILE, ENFILE, ENOBUFS, ENOMEM, or something unexpected: the
            // socket stays readable, so retrying now would spin.
            return pause_accepting(err);
        }
        if (at_capacity()) {
            turn_away(fd);
            continue;
        }
        if (address_.is_ip()) detail::set_no_delay(kernel, fd);
        if (options_.hand_off) {
            ++accepted_;
            options_.hand_off(fd);
            // max_accepts counts hand-offs too (a GroupListener's --exit-after).
            if (options_.max_accepts > 0 && accepted_ >= options_.max_accepts) return close();
            continue;
        }
        ConnectionPtr conn;
        try {
            // Closes fd on failure.
            conn = Connection::adopt_accepted(*profile_, fd,
                                              Address::from_sockaddr(reinterpret_cast<sockaddr*>(&peer), peer_len),
                                              options_.connection);
        } catch (const std::invalid_argument& e) {
            ++refused_;
            report(refusal_reports_, EMFILE, fmt::format("accepted connection closed: {}", e.what()));
            continue;
        }
        ++accepted_;
        connections_->add(conn);
        report_left_out(accept_failure_reports_, "accept failed");
        report_left_out(refusal_reports_, "accepted connection closed");
        report_left_out(turned_away_reports_, "connection closed at once: max_connections open");
        on_accept_.invoke(conn);
        if (options_.max_accepts > 0 && accepted_ >= options_.max_accepts) close();
    }
}

// max_connections open: of ours (connections()), or of the layer that
// counts them (open_count).
bool Listener::at_capacity() const {
    if (options_.max_connections == 0) return false;
    if (options_.open_count) return options_.open_count() >= options_.max_connections;
    return !options_.hand_off && connections_->size() >= options_.max_connections;
}

// Closed at once, before it costs anything else: the client sees its
// connection end now instead of waiting in the backlog for a slot.
void Listener::turn_away(int fd) {
    detail::close_fd(sched_.kernel(), fd);
    ++turned_away_;
    report(turned_away_reports_, ECONNREFUSED,
           fmt::format("{} connections open (max_connections): a new one was closed at once",
                       options_.max_connections));
}

void Listener::pause_accepting(int error) {
    sched_.remove_reader(fd_);
    resume_timer_ = sched_.call_later(options_.accept_pause, [this] { start_accepting(); }, where_);
    ++accept_failures_;
    report(accept_failure_reports_, error,
           fmt::format("accept failed; not accepting for the next {} ms", options_.accept_pause.count()));
}

void Listener::report(ReportLimiter& limiter, int error, std::string_view what) {
    if (on_error_.invoke(*this, std::error_code(error, std::generic_category()), what)) return;
    std::uint64_t left_out = 0;
    if (!limiter.admit(sched_.now(), left_out)) return;
    ErrorContext ctx;
    ctx.message = fmt::format("listener {}: {} ({})", address_.to_string(), what, std::strerror(error));
    if (left_out > 0) ctx.message += fmt::format("; {} more since the last report", left_out);
    ctx.fd = fd_;
    sched_.call_exception_handler(ctx);
}

// Accepting works again: say how many failures the rate limit kept quiet.
void Listener::report_left_out(ReportLimiter& limiter, std::string_view what) {
    std::uint64_t left_out = limiter.take_left_out();
    if (left_out == 0) return;
    ErrorContext ctx;
    ctx.message = fmt::format("listener {}: accepting again; \"{}\" happened {} more times since the last report",
                              address_.to_string(), what, left_out);
    ctx.fd = fd_;
    sched_.call_exception_handler(ctx);
}

}  // namespace reactor
