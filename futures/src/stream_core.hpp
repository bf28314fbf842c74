// Internal: the state behind a Stream. Owns the connection, the bytes received
// but not yet read, and the futures waiting on them; the connection's
// callbacks refer to it weakly, so the user's Stream handles alone decide how
// long it lives. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <reactor/net/byte_buffer.hpp>
#include <reactor/net/connection.hpp>

#include "futures/stream.hpp"

namespace futures::detail {

class StreamCore : public std::enable_shared_from_this<StreamCore> {
public:
    enum class ReadKind : std::uint8_t { some, exactly, until };

    StreamCore(reactor::ConnectionPtr conn, const StreamOptions& options)
        : sched_(conn->scheduler()), conn_(std::move(conn)), options_(options) {}
    // The last handle went: closes an open connection gracefully, cancels
    // what still waits.
    ~StreamCore();

    // Takes over the connection's callbacks; once, right after construction.
    void attach();

    // One pending read at a time, else InvalidStateError.
    Future<std::string> start_read(ReadKind kind, std::size_t n, std::string delimiter);
    bool at_eof() const { return eof_ && in_.empty(); }
    std::size_t buffered() const { return in_.size(); }

    bool write(std::string_view data) { return !closing_ && conn_->write(data); }
    void write_eof() { conn_->write_eof(); }
    Future<void> drain();

    void close();
    void abort();
    bool is_closing() const { return closing_ || closed_; }
    Future<void> wait_closed();

    reactor::Connection& connection() const { return *conn_; }
    reactor::Scheduler& scheduler() const { return sched_; }

private:
    struct PendingRead {
        ReadKind kind;
        std::size_t n;              // some: at most n; exactly: n
        std::string delimiter;      // until
        Future<std::string> future;
        std::size_t scanned;        // until: bytes already searched
    };

    // The connection's callbacks.
    void on_data(std::string_view d);
    void on_eof();
    void on_closed(const reactor::CloseReason& reason);

    std::system_error connection_error() const;
    static int error_of(const reactor::CloseReason& reason);
    void finish_drains(int error);
    // A pending read that the buffer cannot satisfy yet needs more bytes.
    bool wants_more() const { return read_ && !read_->future.done(); }
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
    std::vector<Future<void>> drain_waiters_;
    std::vector<Future<void>> close_waiters_;
    int error_ = 0;         // errno of a reset or failure
    bool eof_ = false;      // no more bytes will arrive
    bool closed_ = false;   // the connection is closed
    bool closing_ = false;  // close() or abort() was called
    bool paused_ = false;   // reading paused by our flow control
};

}  // namespace futures::detail
