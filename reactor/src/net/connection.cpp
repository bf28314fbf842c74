#include "reactor/net/connection.hpp"
#include "reactor/net/connection_set.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "open_connections.hpp"
#include "socket_ops.hpp"

namespace reactor {

std::string_view to_string(CloseKind kind) noexcept {
    switch (kind) {
    case CloseKind::local: return "local";
    case CloseKind::eof: return "eof";
    case CloseKind::reset: return "reset";
    case CloseKind::error: return "error";
    case CloseKind::read_timeout: return "read timeout";
    case CloseKind::write_timeout: return "write timeout";
    case CloseKind::idle_timeout: return "idle timeout";
    case CloseKind::scheduler_closed: return "scheduler closed";
    }
    return "unknown";
}

std::string CloseReason::to_string() const {
    if (!error) return std::string(reactor::to_string(kind));
    return fmt::format("{}: {}", reactor::to_string(kind), error.message());
}

std::string_view to_string(Connection::State state) noexcept {
    switch (state) {
    case Connection::State::open: return "open";
    case Connection::State::closing: return "closing";
    case Connection::State::closed: return "closed";
    }
    return "unknown";
}

// ---------------------------------------------------------------- lifetime

std::shared_ptr<Connection> Connection::adopt(Scheduler& sched, int fd, ConnectionOptions options,
                                              std::source_location where) {
    detail::UniqueFd owned(fd);
    if (options.low_water > options.high_water)
        throw std::invalid_argument(fmt::format("reactor: low water mark {} is above the high water mark {}",
                                                options.low_water, options.high_water));
    if (options.read_size == 0) throw std::invalid_argument("reactor: read_size must be positive");
    const FdKind kind = inspect_fd(fd);  // connection_fd.cpp
    auto conn = std::make_shared<Connection>(Passkey{}, sched, owned.release(), options, where);
    conn->adapt_to_fd_kind(kind);
    sched.set_fd_owner(conn->fd_, *conn);  // release_fd forgets it before closing
    // Registering may throw (select: fd >= FD_SETSIZE); `conn` then dies here
    // and its destructor closes the fd. Only a registered connection owns itself.
    conn->update_reader();
    conn->self_ = conn;
    sched.service<detail::OpenConnections>().add(*conn);
    conn->arm_deadline_timer();
    return conn;
}

Connection::Connection(Passkey, Scheduler& sched, int fd, const ConnectionOptions& options,
                       std::source_location where)
    : sched_(sched),
      fd_(fd),
      where_(where),
      local_(Address::local_of(fd)),
      peer_(Address::peer_of(fd)),
      high_water_(options.high_water),
      low_water_(options.low_water),
      read_size_(options.read_size),
      read_timeout_(std::max(options.read_timeout, Duration::zero())),
      write_timeout_(std::max(options.write_timeout, Duration::zero())),
      idle_timeout_(std::max(options.idle_timeout, Duration::zero())) {
    update_has_deadlines();
    if (has_deadlines()) read_from_ = write_from_ = idle_from_ = sched_.now();
}

Connection::~Connection() {
    // Only reached open if adopt() failed before the reader was registered.
    if (fd_ >= 0) {
        sched_.forget_fd(fd_);  // it may already have an owner: us
        detail::close_fd(fd_);
    }
}

void Connection::set_no_delay(bool on) noexcept {
    int v = on ? 1 : 0;
    if (fd_ >= 0 && is_socket_) ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v);
}

void Connection::set_water_marks(std::size_t high, std::size_t low) {
    if (low > high)
        throw std::invalid_argument(fmt::format("reactor: low water mark {} is above the high water mark {}", low, high));
    high_water_ = high;
    low_water_ = low;
}

// ---------------------------------------------------------------- reading

void Connection::pause_reading() {
    reading_wanted_ = false;
    update_reader();
}

void Connection::resume_reading() {
    const bool was_reading = reader_registered_;
    reading_wanted_ = true;
    update_reader();
    if (!was_reading && reader_registered_ && has_deadlines()) {
        read_from_ = sched_.now();  // the read timeout counts from the resumption
        arm_deadline_timer();
    }
}

// The one place that decides whether the fd is watched for reading.
void Connection::update_reader() {
    bool want = state_ == State::open && (watch_reader_gone_ || (reading_wanted_ && !read_eof_));
    if (want && !reader_registered_) {
        sched_.add_reader(fd_, [this] { on_readable(); }, where_);  // self_ keeps `this` alive while registered
        reader_registered_ = true;
    } else if (!want && reader_registered_) {
        sched_.remove_reader(fd_);
        reader_registered_ = false;
    }
}

void Connection::on_readable() {
    if (watch_reader_gone_) return fail(EPIPE);  // see adapt_to_fd_kind
    char* buf = detail::read_scratch(read_size_);
    ssize_t n;
    do {
        n = is_socket_ ? ::recv(fd_, buf, read_size_, 0) : ::read(fd_, buf, read_size_);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
        note_read();
        on_data_.invoke(*this, std::string_view(buf, static_cast<std::size_t>(n)));
        return;
    }
    if (n == 0) return on_eof();
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // spurious readiness: wait again
    fail(errno);
}

void Connection::on_eof() {
    read_eof_ = true;
    update_reader();
    if (!on_eof_) return begin_close(CloseKind::eof);
    on_eof_.invoke(*this);
    // Both directions are finished: nothing more can happen on this socket.
    if (state_ == State::open && write_shut_) finish_close({CloseKind::eof, {}}, false);
}

// ---------------------------------------------------------------- writing

bool Connection::write(std::string_view data) {
    if (state_ != State::open || shutdown_requested_) return false;
    if (data.empty()) return true;
    if (out_.empty()) {
        // Nothing queued, so order allows sending straight away: the common
        // case costs one send(2) and no copy.
        ssize_t n = transfer_out(data.data(), data.size());
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                fail(errno);
                return false;
            }
            n = 0;
        }
        if (static_cast<std::size_t>(n) == data.size()) {
            note_written();
            if (on_drain_) schedule_drain();
            return true;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
        out_.append(data);
        register_writer();
        if (has_deadlines()) {
            note_written();  // the write timeout counts from here
            arm_deadline_timer();
        }
    } else {
        out_.append(data);  // the writer is registered: it sends in order
    }
    // Last, so the callback sees a consistent connection and may do anything.
    if (!above_high_ && out_.size() > high_water_) {
        above_high_ = true;
        on_high_water_.invoke(*this);
        // An abort() in the callback (or a failed write from it) discarded the
        // buffer, `data` included: say so. close() or write_eof() there
        // still flush it, so that data counts as accepted.
        return state_ != State::closed;
    }
    return true;
}

void Connection::register_writer() {
    if (writer_registered_) return;
    sched_.add_writer(fd_, [this] { on_writable(); }, where_);
    writer_registered_ = true;
}

void Connection::on_writable() {
    if (!out_.empty()) {
        ssize_t n = transfer_out(out_.data(), out_.size());
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            return fail(errno);
        }
        out_.consume(static_cast<std::size_t>(n));
        note_written();
    }
    if (above_high_ && out_.size() <= low_water_) {
        above_high_ = false;
        on_low_water_.invoke(*this);  // may write, close, abort...
        if (state_ == State::closed) return;
    }
    if (!out_.empty()) return;

    sched_.remove_writer(fd_);
    writer_registered_ = false;
    if (state_ == State::closing) return finish_close({closing_kind_, {}}, false);
    if (shutdown_requested_) return do_write_eof();
    on_drain_.invoke(*this);
}

void Connection::schedule_drain() {
    if (drain_scheduled_) return;
    drain_scheduled_ = true;
    sched_.call_soon(
        [self = shared_from_this()] {
            self->drain_scheduled_ = false;
            // Later writes may have queued output again: on_writable reports that drain.
            if (self->state_ == State::open && self->out_.empty()) self->on_drain_.invoke(*self);
        },
        where_);
}

void Connection::write_eof() {
    if (state_ != State::open || shutdown_requested_) return;
    shutdown_requested_ = true;
    if (out_.empty()) do_write_eof();  // else on_writable does it once flushed
}

void Connection::do_write_eof() {
    // ENOTCONN: the peer already reset; reading reports that, nothing to do here.
    // Not a socket: a write-only pipe has read_eof_ set, so it closes just
    // below (its reader sees EOF); a terminal cannot half-close.
    if (is_socket_) ::shutdown(fd_, SHUT_WR);
    write_shut_ = true;
    if (read_eof_) finish_close({CloseKind::eof, {}}, false);
}

// ---------------------------------------------------------------- closing

void Connection::close() { begin_close(CloseKind::local); }

void Connection::abort() {
    if (state_ == State::closed) return;
    out_.clear();
    finish_close({CloseKind::local, {}}, true);
}

void Connection::begin_close(CloseKind kind) {
    if (state_ != State::open) return;
    if (out_.empty()) return finish_close({kind, {}}, false);
    state_ = State::closing;
    closing_kind_ = kind;
    update_reader();  // the writer stays: on_writable finishes the close once flushed
}

void Connection::fail(int error) {
    finish_close({detail::is_reset_error(error) ? CloseKind::reset : CloseKind::error,
                  std::error_code(error, std::generic_category())},
                 false);
}

// Makes the loop forget the fd before closing it (a closed fd must never stay
// in the selector, and epoll must not pass its registration on to a reused
// fd number), then hands the self-reference to the close-callback call: the
// connection is released after that callback, on a fresh stack.
void Connection::finish_close(CloseReason reason, bool abortive) {
    if (state_ == State::closed) return;
    release_fd(abortive);
    sched_.call_soon(
        [self = std::move(self_), reason] {
            // All dropped before the close callback runs (it runs once: taken
            // out), so a cycle through their captures is broken even if it throws.
            auto on_close = self->on_close_.take();
            self->clear_callbacks();
            if (on_close) on_close(*self, reason);
        },
        where_);
    // After queueing the close callback: the set's when_empty waiters run after it.
    if (auto set = std::move(set_)) set->remove(*this);
}

void Connection::release_fd(bool abortive) {
    state_ = State::closed;
    unlink();  // from the open connections of the loop
    deadline_timer_.cancel();
    sched_.forget_fd(fd_);
    reader_registered_ = writer_registered_ = false;
    if (abortive && is_socket_) detail::set_linger_zero(fd_);
    if (restore_flags_ >= 0) ::fcntl(fd_, F_SETFL, restore_flags_);  // adopt_stdio: the description outlives us
    detail::close_fd(fd_);
    fd_ = -1;
    out_.release();
}

// Every callback slot, dropped at once: after the close callback was taken
// out, or unrun when the loop is abandoned.
void Connection::clear_callbacks() noexcept {
    on_close_.reset();
    on_data_.reset();
    on_eof_.reset();
    on_drain_.reset();
    on_high_water_.reset();
    on_low_water_.reset();
}

void Connection::on_unwatchable(int /*fd*/, std::error_code error) {
    if (state_ == State::closed) return;
    out_.clear();
    finish_close({CloseKind::error, error}, true);
}

// Scheduler::close(): aborted; close() runs the close callback it queues.
void Connection::end_with_loop_closing() {
    if (state_ == State::closed) return;
    out_.clear();
    finish_close({CloseKind::scheduler_closed, {}}, true);
}

// The loop will never run a callback of ours again: abort and release
// ourselves now. No user callback runs (see the comment after CloseKind):
// they are only destroyed, as the Scheduler destroys every callback still
// scheduled.
void Connection::end_with_loop_abandoned() noexcept {
    if (state_ == State::closed) return;
    out_.clear();
    release_fd(true);
    auto self = std::move(self_);  // freed when this returns, unless a callback's capture holds it
    clear_callbacks();
    if (auto set = std::move(set_)) set->remove(*this);
}

void Connection::describe_for_live(std::vector<LiveItem>& out) const {
    out.push_back(LiveItem{LiveItem::Kind::connection,
                           fmt::format("fd {}, {} <-> {}, {} byte(s) unsent", fd_, local_.to_string(),
                                       peer_.to_string(), out_.size()),
                           where_, true});
}

}  // namespace reactor
