// Internal: the state behind a Stream. Owns the connection, the bytes received
// but not yet read, and the promises of the futures waiting on them (each
// made with the line of the user's call: Stream::read, drain, wait_closed);
// the connection's callbacks refer to it weakly, so the user's Stream
// handles alone decide how long it lives. Its promises end with it or with
// the connection: the last handle gone, or the connection dropping its
// callbacks unrun (its Scheduler destroyed), breaks those still pending
// (a BrokenPromise: cancelled). Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <reactor/net/byte_buffer.hpp>
#include <reactor/net/connection.hpp>

#include "futures/promise.hpp"
#include "futures/stream.hpp"

namespace futures::detail {

class StreamCore : public std::enable_shared_from_this<StreamCore> {
public:
    enum class ReadKind : std::uint8_t { some, exactly, until };

    StreamCore(reactor::ConnectionPtr conn, const StreamOptions& options)
        : sched_(conn->scheduler()), conn_(std::move(conn)), options_(options) {}
    // The last handle went: closes an open connection gracefully; the
    // promises still pending break (cancelled, naming their lines).
    ~StreamCore();

    // Takes over the connection's callbacks; once, right after construction.
    void attach();

    // One pending read at a time, else InvalidStateError.
    Future<std::string> start_read(ReadKind kind, std::size_t n, std::string delimiter, std::source_location where);
    bool at_eof() const { return eof_ && in_.empty(); }
    std::size_t buffered() const { return in_.size(); }

    bool write(std::string_view data) { return !closing_ && conn_->write(data); }
    void write_eof() { conn_->write_eof(); }
    Future<void> drain(std::source_location where);

    void close();
    void abort();
    bool is_closing() const { return closing_ || closed_; }
    Future<void> wait_closed(std::source_location where);

    reactor::Connection& connection() const { return *conn_; }
    reactor::Scheduler& scheduler() const { return sched_; }

private:
    struct PendingRead {
        ReadKind kind;
        std::size_t n;              // some: at most n; exactly: n
        std::string delimiter;      // until
        Promise<std::string> promise;
        std::size_t scanned;        // until: bytes already searched
    };

    // The connection's callbacks.
    void on_data(std::string_view d);
    void on_eof();
    void on_closed(const reactor::CloseReason& reason);
    // The connection is closed, with `error` (an errno, 0 for a graceful
    // close): what waits completes. Once: from the close callback, or from
    // close() and abort() when the connection closed at once (nothing to
    // flush, or aborted), without waiting for the close callback they
    // queue. Then the waiters' callbacks still run after that close
    // callback (queued first), and a loop destroyed before it runs (it
    // drops it unrun) leaves no promise pending in a cycle through the
    // connection's callbacks.
    void closed_with(int error);
    bool connection_closed() const;
    // The connection dropped its callbacks without calling the close
    // callback (its Scheduler is being destroyed): nothing will complete
    // what waits, so its promises break now, while the loop is still there
    // to take their waiters.
    void on_callbacks_dropped() noexcept;

    std::system_error connection_error() const;
    static int error_of(const reactor::CloseReason& reason);
    void finish_drains(int error);
    // A pending read that the buffer cannot satisfy yet needs more bytes.
    bool wants_more() const { return read_ && read_->promise.is_pending(); }
    // Completes the pending read if the buffer (or EOF, or an error) allows.
    void try_read();
    void complete(std::size_t n);
    template <class E>
    void fail(E error);

    reactor::Scheduler& sched_;
    reactor::ConnectionPtr conn_;
    StreamOptions options_;
    reactor::ByteBuffer in_;
    std::optional<PendingRead> read_;
    std::vector<Promise<void>> drain_waiters_;
    std::vector<Promise<void>> close_waiters_;
    int error_ = 0;         // errno of a reset or failure
    bool eof_ = false;      // no more bytes will arrive
    bool closed_ = false;   // the connection is closed
    bool closing_ = false;  // close() or abort() was called
    bool paused_ = false;   // reading paused by our flow control
};

}  // namespace futures::detail
