// SPDX-License-Identifier: MIT
// reactor::Connection: one connected non-blocking stream socket, TCP or Unix
// domain, or any other pollable stream fd: a pipe end, a terminal, stdin or
// stdout when they are one of these (reactor/net/pipe.hpp has the helpers).
//
// Owns its fd. Held by ConnectionPtr handles (reactor::Ref, reactor/ref.hpp);
// an open connection holds one itself (nobody has to keep a pointer); once
// closed it lets it go on a later loop iteration, after its close callback
// has run, so it is never freed while one of its callbacks is on the stack.
// Loop thread only (debug mode refuses and reports a call from another
// thread: docs/cores.md, "The ownership rule"). No member calls back
// synchronously, except write(), which may run the high-water callback
// before it returns (as asyncio's pause_writing()).
//
// State diagram:
//
//            close() with output pending          output flushed (or write error)
//   open ───────────────────────────────> closing ──────────────────────────────> closed
//     │                                                                             ^
//     └── abort(), reset, error, close() with nothing pending, EOF after shutdown ──┘
//
// Reading and writing are independent half-duplex flags inside `open`: reading
// can be paused and resumed, and stops for good at EOF; writing stops for good
// after write_eof().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "reactor/export.hpp"
#include "reactor/callback_slot.hpp"
#include "reactor/net/address.hpp"
#include "reactor/net/byte_buffer.hpp"
#include "reactor/net/connection_options.hpp"
#include "reactor/net/detail/callback_protocol.hpp"
#include "reactor/net/detail/connection_profile.hpp"
#include "reactor/net/detail/fd_queue.hpp"
#include "reactor/net/detail/packed_address.hpp"
#include "reactor/net/end.hpp"
#include "reactor/net/transport.hpp"
#include "reactor/fd_owner.hpp"
#include "reactor/scheduler.hpp"

namespace reactor {

class ConnectionSet;
class Connection;
using ConnectionPtr = Ref<Connection>;

// Why a connection closed, as given to its close callback: a reactor::End
// (reactor/net/end.hpp). Scheduler::close() aborts the connections still
// open, and their close callbacks run with EndKind::scheduler_closed;
// ~Scheduler without close() aborts and frees them with their callbacks
// destroyed WITHOUT running (what they would touch may be gone by then).

namespace detail {
class OpenConnections;
class DeadlineQueues;
struct TimeoutGroup;
enum class DeadlineKind : unsigned char;
}  // namespace detail

// FdOwner first: the loop's calls (on_ready) and the deadline queues' casts
// from FdOwner need no adjustment of `this`.
class REACTOR_API Connection final : private FdOwner, public Transport {
    struct Passkey {};

public:
    enum class State : std::uint8_t { open, closing, closed };

    // `data` is valid only during the call: copy what you keep.
    using DataCallback = std::function<void(Connection&, std::string_view data)>;
    using EventCallback = std::function<void(Connection&)>;
    using CloseCallback = std::function<void(Connection&, const End&)>;
    // What the setters take and keep (reactor/callback_slot.hpp): a lambda,
    // a std::function, a function pointer or nullptr converts to it.
    using DataFunction = SlotFunction<void(Connection&, std::string_view data)>;
    using EventFunction = SlotFunction<void(Connection&)>;
    using CloseFunction = SlotFunction<void(Connection&, const End&)>;

    // Takes ownership of `fd` and starts reading (the data callback can first
    // run on the next iteration, so set callbacks right after adopting).
    // Listener and connect() call this for you. `fd` is a connected stream
    // socket, a pipe (FIFO) end or a character device such as a terminal; it
    // is made non-blocking if it is not yet (O_NONBLOCK belongs to the open
    // file description: a process sharing it sees the change too). Its
    // access mode decides the directions (reactor/net/pipe.hpp says how a
    // read-only and a write-only end behave); a socket or a terminal does
    // both, and on a terminal write_eof() only ends writing.
    // Throws std::invalid_argument, after closing the fd, if the options are
    // inconsistent, if `fd` is a regular file, a directory or a block device
    // (readiness means nothing for them: the message names the type), or if
    // the backend cannot watch the fd (select: fd >= FD_SETSIZE); and
    // std::system_error if fstat/fcntl fail (EBADF: not an open fd). Loop
    // thread only. `where` is what Scheduler::live() names the connection
    // by: a connection a Listener accepts is named by the line that made the
    // listener, one connect() makes by the connect() call.
    static ConnectionPtr adopt(Scheduler& sched, int fd, ConnectionOptions options = {},
                               std::source_location where = std::source_location::current());

    // Joins `profile` (its loop, line, marks and read size: its listener's,
    // or one adopt() makes for it).
    Connection(Passkey, detail::ConnectionProfile& profile, int fd, const ConnectionOptions& options);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // A handle to this connection (as std::enable_shared_from_this's), for
    // a callback to keep it: never in its destructor.
    ConnectionPtr shared_from_this() const noexcept { return ConnectionPtr(const_cast<Connection*>(this)); }

    // ---- what it tells (reactor/net/transport.hpp) ----
    // One Protocol at a time: a layer over the connection (a futures::Stream,
    // a TLS connection) or a protocol of your own, or the callbacks below,
    // which are a Protocol the connection makes when one is first set
    // (detail::CallbackProtocol). Setting a protocol replaces the
    // callbacks; setting a callback makes them the protocol again. See
    // Transport::set_protocol for the protocol's lifetime; if the loop ends
    // before the close could be told, it hears Protocol::on_abandoned.
    void set_protocol(Protocol* protocol) override;
    Protocol* protocol() const noexcept { return protocol_; }
    // The close was told (or the loop ended first): from now on nothing is
    // told to anyone, whatever is set.
    bool callbacks_dropped() const noexcept { return callbacks_dropped_; }

    // ---- callbacks (set or replace them any time, also from inside the
    //      callback being replaced; an empty one means "nothing to do") ----
    // Data received. Without a data callback, received bytes are discarded.
    void set_data_callback(DataFunction cb);
    // The peer shut down its sending side. Without an EOF callback the
    // connection then closes by itself (flushing pending output first; close
    // reason eof). With one, it stays open for writing: finish with
    // write_eof() (which then closes it, reason eof) or close().
    void set_eof_callback(EventFunction cb);
    // The output buffer became empty: everything written so far was handed to
    // the kernel. Runs on a later iteration, never from inside write().
    void set_drain_callback(EventFunction cb);
    // buffered() grew above the high mark (called from write(): the only
    // synchronous callback), and later fell to the low mark (from the loop).
    // Each crossing is reported once; high and low alternate.
    void set_high_water_callback(EventFunction cb);
    void set_low_water_callback(EventFunction cb);
    // Exactly once, on a later iteration than the event that closed it. After
    // it returns every callback is dropped (breaking cycles through captures)
    // and the connection releases itself.
    void set_close_callback(CloseFunction cb);

    // ---- writing ----
    // Sends now what the kernel takes and buffers the rest, which goes out in
    // order as the socket becomes writable (write interest is registered only
    // after EAGAIN). Never refuses data for being large: watch the high-water
    // callback. Returns false, dropping `data`, once the connection is closing
    // or closed or after write_eof(); a send error (e.g. peer reset) also
    // returns false and closes the connection (close callback on a later
    // iteration); so does a high-water callback, run from this call, that
    // aborted the connection (its abort() discarded `data` with the rest of
    // the buffer). True means `data` is sent or buffered to be sent, in order
    // (a close() or write_eof() in that callback still flushes it).
    // Never raises SIGPIPE (MSG_NOSIGNAL; a pipe's is blocked and consumed
    // in the writing thread: the process's disposition is never touched).
    bool write(std::string_view data) override;
    std::size_t buffered() const noexcept override { return out_ ? out_->size() : 0; }
    // Requires low <= high (std::invalid_argument). Takes effect at the next
    // write or flush.
    void set_water_marks(std::size_t high, std::size_t low) override;
    bool above_high_water() const noexcept override { return above_high_; }
    // The marks in force, for layers over a connection that buffer data of
    // their own (reactor::tls counts its plaintext against them).
    std::size_t high_water() const noexcept { return profile_->high_water; }
    std::size_t low_water() const noexcept { return profile_->low_water; }

    // ---- reading ----
    // Stops/restarts delivering data (the bytes wait in the kernel, and the
    // peer is eventually held back by TCP flow control). Idempotent.
    void pause_reading() override;
    void resume_reading() override;
    // True while data can still arrive: open, not paused (by the user or by
    // pause_reading_above_high_water), no EOF yet; never for a write-only pipe.
    bool is_reading() const noexcept { return reader_registered_ && !watch_reader_gone_; }
    // EOF was read (always true of a write-only pipe, which never reads).
    bool at_eof() const noexcept override { return read_eof_; }

    // ---- ending ----
    // Half-close: after the buffered output is flushed, shut down the sending
    // side (the peer reads EOF); reading continues. Later writes return false.
    void write_eof() override;
    // Graceful: stop reading, flush buffered output, then close (reason local,
    // unless the flush fails). A peer that never reads keeps it `closing`
    // forever: use abort() if you cannot wait. Idempotent.
    void close() override { close(EndKind::local); }
    // The same graceful close, reporting `kind` as the reason: for a layer
    // that ends the connection for a reason of its own (LineReader closes
    // with line_too_long). No effect once closing or closed.
    void close(EndKind kind) override;
    // Immediate: discard buffered output and close now; the peer sees a reset
    // (TCP). Reason local. Idempotent.
    void abort() override;
    // Whether the fd is a socket (else a pipe or a terminal: see adopt()).
    bool is_socket() const noexcept { return is_socket_; }

    // ---- inspection ----
    State state() const noexcept { return state_; }
    bool is_open() const noexcept override { return state_ == State::open; }
    Connection& socket() const noexcept override { return const_cast<Connection&>(*this); }
    int fd() const noexcept { return fd_; }  // -1 once closed
    // The peer's address is read once, at adoption, and kept: the close
    // callback can still log who the peer was, even after a reset
    // (unspecified only if the peer was gone before adoption). The local
    // address is asked of the kernel (getsockname) when called, as libuv and
    // Asio do: unspecified once closed, and for a pipe or a terminal.
    Address local_address() const;
    Address peer_address() const { return peer_.get(); }
    Scheduler& scheduler() const noexcept { return *profile_->sched; }
    // The line that made us (adopt's caller, or the Listener's or connect()'s):
    // what debug mode's reports name (a layer above, TLS, names it too).
    const std::source_location& made_at() const noexcept { return where(); }
    // TCP_NODELAY (Listener and connect() turn it on for TCP). No-op on Unix sockets.
    void set_no_delay(bool on) noexcept;
    // Change a deadline of ConnectionOptions (zero: none); its count starts now.
    void set_read_timeout(Duration d);
    void set_write_timeout(Duration d);
    void set_idle_timeout(Duration d);

private:
    // The loop's kernel (Scheduler::kernel()), kept in the profile: the
    // send and receive paths read it with one load.
    Kernel* kernel() const noexcept { return profile_->kernel; }
    // Debug mode: a member called from a thread other than the one running
    // the loop is reported, naming the line that made us, and refused
    // (Scheduler::check_owner_thread). A closed connection is not checked:
    // its members do nothing, and its loop may be gone.
    void check_thread(const char* member) {
        if (state_ != State::closed) scheduler().check_owner_thread(member, nullptr, &where(), "connection");
    }
    // The line that made us (see adopt()), kept in our profile.
    const std::source_location& where() const noexcept { return profile_->where; }
    void on_readable();
    void on_writable();
    void on_eof();
    void update_reader();
    void register_writer();
    void do_write_eof();
    void begin_close(EndKind kind);
    void fail(int error);
    void finish_close(End reason, bool abortive);
    struct CloseCall;  // the queued close-callback call (connection.cpp)
    void schedule_drain();
    void release_fd(bool abortive);
    using Callbacks = detail::CallbackProtocol<Connection>;
    void drop_callbacks() noexcept;  // lets the protocol go, telling it on_abandoned if the close was never told
    // The end of the loop (detail::OpenConnections, a service of the loop):
    // close() aborts us with EndKind::scheduler_closed and runs our close
    // callback; abandon() aborts us with no callback run, only destroyed.
    friend class detail::OpenConnections;
    void end_with_loop_closing();
    void end_with_loop_abandoned() noexcept;
    void describe_for_live(std::vector<LiveItem>& out) const;
    // The loop cannot watch our fd (epoll_ctl failed): aborted, the close
    // reason carrying the error (EndKind::error), so the peer sees a reset.
    void on_unwatchable(int fd, std::error_code error) override;
    void on_ready(int fd, Interest which) override;
    std::source_location origin() const noexcept override { return where(); }
    void watch_fd(bool read, bool write);
    // What adopt() learns of the fd, and what follows from it (connection_fd.cpp).
    struct FdKind {
        int type;         // S_IFSOCK, S_IFIFO or S_IFCHR
        int access_mode;  // O_RDONLY, O_WRONLY or O_RDWR
    };
    static FdKind inspect_fd(Kernel* kernel, int fd);
    void adapt_to_fd_kind(FdKind kind) noexcept;
    long transfer_out(const char* data, std::size_t n) noexcept;  // send(2) or write(2), -1 and errno on error
    // recv(2) or read(2) through the loop's kernel (Scheduler::kernel()), or
    // read(2) of a pipe or terminal: everything but a real socket (direct_).
    long transfer_in_indirect(char* buffer, std::size_t n) noexcept;
    friend ConnectionPtr adopt_stdio(Scheduler& sched, int fd, ConnectionOptions options);
    // Deadlines (connection_deadlines.cpp): the loop's DeadlineQueues time
    // them, in the group of connections with our three timeouts.
    friend class detail::DeadlineQueues;
    // On every read and send: one load (a group once any timeout was set).
    bool has_deadlines() const noexcept { return timeouts_ != nullptr; }
    detail::DeadlineQueues& deadline_queues() const noexcept;
    detail::TimeoutGroup& join_timeouts(Duration read, Duration write, Duration idle);
    void change_timeout(detail::DeadlineKind kind, Duration t);
    void start_deadlines();
    void leave_deadlines() noexcept;
    void reading_started();
    void reading_stopped() noexcept;
    void on_deadline(detail::DeadlineKind kind);
    void note_read() {
        if (has_deadlines()) [[unlikely]]
            note_read_time();
    }
    void note_written() {
        if (has_deadlines()) [[unlikely]]
            note_write_time();
    }
    void note_read_time() noexcept;
    void note_write_time() noexcept;
    [[gnu::noinline]] void note_output_time(detail::DeadlineQueues& queues) noexcept;
    void output_queued();  // the first bytes the kernel did not take: the write clock starts
    bool has_output() const noexcept { return out_ && !out_->empty(); }
    // Output the kernel has not taken yet, with the write deadline's clock
    // and queue links: a write deadline runs only while there is output.
    struct Output : ByteBuffer {
        TimePoint write_start{};  // bytes sent, output queued, the timeout set
        detail::FdLinks writes;
    };
    Output& output();  // made on first partial write
    void drop_output() noexcept;  // released once drained or discarded
    // Listener: an accepted socket, whose kind, flags and addresses the
    // listener already knows (no fstat, fcntl or getpeername per accept),
    // as it knows the profile its connections share (it holds it); a
    // GroupListener's loops, as theirs.
    friend class Listener;
    friend class GroupListener;
    static ConnectionPtr adopt_accepted(detail::ConnectionProfile& profile, int fd, const Address& peer,
                                        const ConnectionOptions& options);
    static void check_options(const ConnectionOptions& options);
    static ConnectionPtr start(ConnectionPtr conn);

    // fd_ first: it takes the four bytes after the count (Transport's
    // tail); then the largest members, so the bytes pack without holes.
    int fd_;
    // Our loop, the line that made us, the water marks and the read size:
    // shared with the connections its listener accepted (detail::ConnectionProfile).
    detail::ConnectionProfile* profile_;
    // While open or closing it holds one count of itself (owns_itself_),
    // given up as the close is told: the returned handle, dropped when done.
    void own_self() noexcept {
        add_ref();
        owns_itself_ = true;
    }
    ConnectionPtr disown_self() noexcept;
    friend class ConnectionSet;
    // The set it is in, if any; left as it closes. A plain pointer: a set
    // keeps itself alive while it has members (a count of its own).
    ConnectionSet* set_ = nullptr;
    std::unique_ptr<Output> out_;             // output the kernel has not taken yet, if any
    detail::TimeoutGroup* timeouts_ = nullptr;  // once a timeout is set: its loop's group
    Protocol* protocol_ = nullptr;            // see set_protocol
    // The callbacks' protocol, once one was set; kept until we go (it may be
    // running when it is replaced).
    std::unique_ptr<Callbacks> callbacks_;
    detail::PackedAddress peer_;  // as of adoption: see peer_address()
    State state_ = State::open;
    EndKind closing_kind_ = EndKind::local;  // what `closing` reports once flushed
    bool reading_wanted_ : 1 = true;  // not paused by the user
    bool reader_registered_ : 1 = false;
    bool writer_registered_ : 1 = false;
    bool read_eof_ : 1 = false;
    bool shutdown_requested_ : 1 = false;
    bool write_shut_ : 1 = false;
    bool above_high_ : 1 = false;
    bool drain_scheduled_ : 1 = false;
    bool is_socket_ : 1 = true;           // else read(2)/write(2), and no shutdown()
    bool direct_ : 1 = true;  // a socket of the C library's kernel: recv(2)/send(2) called directly
    bool is_fifo_ : 1 = false;            // writes may raise SIGPIPE: see write()
    bool watch_reader_gone_ : 1 = false;  // a write-only pipe: readiness means its reader left
    bool pause_above_high_ : 1 = false;   // ConnectionOptions::pause_reading_above_high_water
    bool callbacks_dropped_ : 1 = false;  // see callbacks_dropped()
    bool drain_wanted_ : 1 = false;       // the protocol wants on_drained (Protocol::wants_drained)
    bool owns_itself_ : 1 = false;        // see own_self()
    // adopt_stdio made a shared description non-blocking: blocking again
    // when we close (the process's other users of it expect it so).
    bool restore_blocking_ : 1 = false;
};

REACTOR_API std::string_view to_string(Connection::State state) noexcept;

}  // namespace reactor
