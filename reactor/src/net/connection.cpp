// SPDX-License-Identifier: MIT
// reactor::Connection: its lifetime (adopt, start, the self-reference),
// its protocol and callbacks, and its closing. Reading and writing are in
// connection_io.cpp.
#include "reactor/net/connection.hpp"
#include "reactor/net/connection_set.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "deadline_queues.hpp"
#include "open_connections.hpp"
#include "reactor/detail/kernel_calls.hpp"
#include "socket_ops.hpp"

namespace reactor {

std::string_view to_string(Connection::State state) noexcept {
    switch (state) {
    case Connection::State::open: return "open";
    case Connection::State::closing: return "closing";
    case Connection::State::closed: return "closed";
    }
    return "unknown";
}

// ---------------------------------------------------------------- lifetime

namespace detail {

ConnectionProfile::ConnectionProfile(Scheduler& loop, std::source_location line, const ConnectionOptions& options)
    : sched(&loop),
      kernel(loop.kernel()),
      where(line),
      high_water(options.high_water),
      low_water(options.low_water),
      read_size(options.read_size) {}

ConnectionProfile::ConnectionProfile(const ConnectionProfile& other) noexcept
    : sched(other.sched),
      kernel(other.kernel),
      where(other.where),
      high_water(other.high_water),
      low_water(other.low_water),
      read_size(other.read_size) {}

}  // namespace detail

void Connection::check_options(const ConnectionOptions& options) {
    if (options.low_water > options.high_water)
        throw std::invalid_argument(fmt::format("reactor: low water mark {} is above the high water mark {}",
                                                options.low_water, options.high_water));
    if (options.read_size == 0) throw std::invalid_argument("reactor: read_size must be positive");
}

ConnectionPtr Connection::adopt(Scheduler& sched, int fd, ConnectionOptions options, std::source_location where) {
    Kernel* const kernel = sched.kernel();
    detail::UniqueFd owned(kernel, fd);
    check_options(options);
    const FdKind kind = inspect_fd(kernel, fd);  // connection_fd.cpp
    // A profile of its own, freed here unless the connection joins it.
    auto profile = std::make_unique<detail::ConnectionProfile>(sched, where, options);
    ConnectionPtr conn(new Connection(Passkey{}, *profile, fd, options));
    profile.release();  // its member's now
    owned.release();    // ours now: ~Connection closes it
    conn->adapt_to_fd_kind(kind);
    if (kind.type == S_IFSOCK) conn->peer_ = Address::peer_of(kernel, fd);
    return start(std::move(conn));
}

// The listener accepted `fd` with accept4(SOCK_NONBLOCK): a connected stream
// socket, read-write, non-blocking. accept4 gave the peer's address.
ConnectionPtr Connection::adopt_accepted(detail::ConnectionProfile& profile, int fd, const Address& peer,
                                         const ConnectionOptions& options) {
    detail::UniqueFd owned(profile.kernel, fd);
    check_options(options);
    ConnectionPtr conn(new Connection(Passkey{}, profile, fd, options));
    owned.release();
    conn->peer_ = peer;
    return start(std::move(conn));
}

ConnectionPtr Connection::start(ConnectionPtr conn) {
    Scheduler& sched = conn->scheduler();
    sched.set_fd_owner(conn->fd_, *conn);  // release_fd forgets it before closing
    // Registering may throw (select: fd >= FD_SETSIZE); `conn` then dies here
    // and its destructor closes the fd. Only a registered connection owns itself.
    conn->update_reader();
    sched.service<detail::OpenConnections>().add(conn->fd_);
    conn->own_self();
    conn->start_deadlines();
    return conn;
}

Connection::Connection(Passkey, detail::ConnectionProfile& profile, int fd, const ConnectionOptions& options)
    : fd_(fd), profile_(&profile) {
    pause_above_high_ = options.pause_reading_above_high_water;
    direct_ = profile.kernel == nullptr;  // adapt_to_fd_kind clears it for a pipe or terminal
    const Duration zero = Duration::zero();
    if (options.read_timeout > zero || options.write_timeout > zero || options.idle_timeout > zero) {
        timeouts_ = &join_timeouts(std::max(options.read_timeout, zero), std::max(options.write_timeout, zero),
                                   std::max(options.idle_timeout, zero));  // start() puts it in the queues
    }
    // Last, as nothing can throw any more: ~Connection leaves it.
    profile.hold();
}

Connection::~Connection() {
    // Only reached open if adopt() failed before the reader was registered.
    if (fd_ >= 0) {
        leave_deadlines();
        scheduler().forget_fd(fd_);  // it may already have an owner: us
        detail::close_fd(kernel(), fd_);
    }
    profile_->leave();  // last: the loop may be gone, the profile is not
}

ConnectionPtr Connection::disown_self() noexcept {
    if (!owns_itself_) return nullptr;
    owns_itself_ = false;
    return ConnectionPtr::adopt(this);
}

Connection::Output& Connection::output() {
    if (!out_) out_ = std::make_unique<Output>();
    return *out_;
}

// ---------------------------------------------------------------- what it tells

void Connection::set_protocol(Protocol* protocol) {
    check_thread("Connection::set_protocol");
    if (callbacks_dropped_) return;  // nothing is told any more
    protocol_ = protocol;
    drain_wanted_ = protocol && protocol->wants_drained();
}

void Connection::set_data_callback(DataFunction cb) {
    check_thread("Connection::set_data_callback");
    Callbacks::set_data(*this, callbacks_, std::move(cb));
}
void Connection::set_close_callback(CloseFunction cb) {
    check_thread("Connection::set_close_callback");
    Callbacks::set_close(*this, callbacks_, std::move(cb));
}
void Connection::set_eof_callback(EventFunction cb) {
    check_thread("Connection::set_eof_callback");
    Callbacks::set_rare(*this, callbacks_, &Callbacks::Rare::eof, std::move(cb));
}
void Connection::set_drain_callback(EventFunction cb) {
    check_thread("Connection::set_drain_callback");
    Callbacks::set_rare(*this, callbacks_, &Callbacks::Rare::drain, std::move(cb));
    drain_wanted_ = protocol_ && protocol_->wants_drained();
}
void Connection::set_high_water_callback(EventFunction cb) {
    check_thread("Connection::set_high_water_callback");
    Callbacks::set_rare(*this, callbacks_, &Callbacks::Rare::high_water, std::move(cb));
}
void Connection::set_low_water_callback(EventFunction cb) {
    check_thread("Connection::set_low_water_callback");
    Callbacks::set_rare(*this, callbacks_, &Callbacks::Rare::low_water, std::move(cb));
}

void Connection::set_no_delay(bool on) noexcept {
    if (state_ != State::closed &&
        scheduler().off_owner_thread("Connection::set_no_delay", nullptr, &where(), "connection"))
        return;  // noexcept: reported, not done
    int v = on ? 1 : 0;
    if (fd_ >= 0 && is_socket_)
        detail::sys::setsockopt(kernel(), fd_, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v);
}

void Connection::set_water_marks(std::size_t high, std::size_t low) {
    check_thread("Connection::set_water_marks");
    if (low > high)
        throw std::invalid_argument(fmt::format("reactor: low water mark {} is above the high water mark {}", low, high));
    if (high == profile_->high_water && low == profile_->low_water) return;
    // Our siblings keep theirs: a shared profile is copied first. Not shared,
    // it is ours alone (nobody else can join it: only a listener adds
    // members, and it is one), also once the loop is gone.
    if (profile_->members.load(std::memory_order_acquire) > 1)
        std::exchange(profile_, &(new detail::ConnectionProfile(*profile_))->hold())->leave();
    profile_->high_water = high;
    profile_->low_water = low;
}

// ---------------------------------------------------------------- closing

void Connection::close(EndKind kind) {
    check_thread("Connection::close");
    begin_close(kind);
}

void Connection::abort() {
    if (state_ == State::closed) return;
    scheduler().check_owner_thread("Connection::abort", nullptr, &where(), "connection");
    drop_output();
    finish_close({EndKind::local, {}}, true);
}

void Connection::begin_close(EndKind kind) {
    if (state_ != State::open) return;
    if (!has_output()) return finish_close({kind, {}}, false);
    state_ = State::closing;
    closing_kind_ = kind;
    if (has_deadlines()) deadline_queues().unlink<detail::DeadlineKind::idle>(*timeouts_, fd_);
    update_reader();  // the writer stays: on_writable finishes the close once flushed
}

void Connection::fail(int error) {
    finish_close({detail::is_reset_error(error) ? EndKind::reset : EndKind::error,
                  std::error_code(error, std::generic_category())},
                 false);
}

// The queued call that tells the protocol how we ended (finish_close made
// the loop forget the fd and handed it our self-reference: we are released
// after the call, on a fresh stack). The protocol is let go as it is told,
// and anything set during the call is never told anything. Dropped unrun
// (the loop abandoned before its turn), it lets the protocol go all the
// same, telling it on_abandoned (drop_callbacks): a layer whose ownership
// runs through us, as a TLS connection's does, would otherwise live forever.
// It keeps the End's kind and error, not an End (a plain connection's has no
// detail), so that it fits a Callback's inline buffer.
struct Connection::CloseCall {
    ConnectionPtr self;
    EndKind kind;
    std::error_code error;

    CloseCall(ConnectionPtr c, const End& r) : self(std::move(c)), kind(r.kind), error(r.error) {}
    CloseCall(CloseCall&&) noexcept = default;
    CloseCall& operator=(CloseCall&&) = delete;
    ~CloseCall() {
        if (self) self->drop_callbacks();
    }

    void operator()() {
        Protocol* told = std::exchange(self->protocol_, nullptr);
        self->callbacks_dropped_ = true;
        if (told) told->on_closed(End{kind, error, {}});
    }
};

void Connection::finish_close(End reason, bool abortive) {
    if (state_ == State::closed) return;
    release_fd(abortive);
    scheduler().call_soon(CloseCall(disown_self(), reason), where());
    // After queueing the close callback: the set's when_empty waiters run after it.
    if (ConnectionSet* set = std::exchange(set_, nullptr)) set->remove(*this);
}

void Connection::release_fd(bool abortive) {
    leave_deadlines();
    state_ = State::closed;
    if (auto* open = scheduler().find_service<detail::OpenConnections>()) open->remove(fd_);
    scheduler().forget_fd(fd_);
    reader_registered_ = writer_registered_ = false;
    Kernel* const k = kernel();
    if (abortive && is_socket_) detail::set_linger_zero(k, fd_);
    if (restore_blocking_) {  // adopt_stdio: the description outlives us
        const int flags = detail::sys::fcntl(k, fd_, F_GETFL);
        if (flags >= 0) detail::sys::fcntl(k, fd_, F_SETFL, flags & ~O_NONBLOCK);
    }
    detail::close_fd(k, fd_);
    fd_ = -1;
    drop_output();
}

// The protocol, let go for good; the callbacks dropped (what captures we are
// in is released). Let go before the close could be told (the loop abandoned
// us open, or our queued close unrun), the protocol hears on_abandoned first.
void Connection::drop_callbacks() noexcept {
    Protocol* abandoned = std::exchange(protocol_, nullptr);
    const bool told = callbacks_dropped_;
    callbacks_dropped_ = true;
    if (!told && abandoned) abandoned->on_abandoned();
    drain_wanted_ = false;
    if (callbacks_) callbacks_->clear();
}

void Connection::on_unwatchable(int /*fd*/, std::error_code error) {
    if (state_ == State::closed) return;
    drop_output();
    finish_close({EndKind::error, error}, true);
}

// Scheduler::close(): aborted; close() runs the close callback it queues.
void Connection::end_with_loop_closing() {
    if (state_ == State::closed) return;
    drop_output();
    finish_close({EndKind::scheduler_closed, {}}, true);
}

// The loop will never run a callback of ours again: abort and release
// ourselves now. No user callback runs (see the comment after EndKind):
// they are only destroyed, as the Scheduler destroys every callback still
// scheduled.
void Connection::end_with_loop_abandoned() noexcept {
    if (state_ == State::closed) return;
    drop_output();
    release_fd(true);
    auto self = disown_self();  // freed when this returns, unless a callback's capture holds it
    drop_callbacks();
    if (ConnectionSet* set = std::exchange(set_, nullptr)) set->remove(*this);
}

Address Connection::local_address() const {
    return fd_ >= 0 && is_socket_ ? Address::local_of(kernel(), fd_) : Address();
}

void Connection::describe_for_live(std::vector<LiveItem>& out) const {
    out.push_back(LiveItem{LiveItem::Kind::connection,
                           fmt::format("fd {}, {} <-> {}, {} byte(s) unsent", fd_, local_address().to_string(),
                                       peer_.get().to_string(), buffered()),
                           where(), true});
}

}  // namespace reactor
