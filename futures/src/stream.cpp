#include "futures/stream.hpp"

#include <algorithm>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <reactor/connector.hpp>
#include <reactor/tcp_listener.hpp>

#include "futures/leaves.hpp"

namespace futures {

IncompleteReadError::IncompleteReadError(std::string partial_bytes, std::optional<std::size_t> expected_bytes)
    : std::runtime_error(expected_bytes ? fmt::format("{} bytes read on a total of {} expected bytes",
                                                      partial_bytes.size(), *expected_bytes)
                                        : fmt::format("EOF after {} bytes, before the delimiter", partial_bytes.size())),
      partial(std::move(partial_bytes)),
      expected(expected_bytes) {}

LimitOverrunError::LimitOverrunError(const std::string& what, std::size_t consumed_bytes)
    : std::runtime_error(what), consumed(consumed_bytes) {}

namespace detail {

// The state behind a Stream: the connection, the bytes received but not yet
// read, and the futures waiting on them. The connection's callbacks refer to
// it weakly: the user's handles alone decide how long it lives.
class StreamCore : public std::enable_shared_from_this<StreamCore> {
public:
    enum class ReadKind : std::uint8_t { some, exactly, until };

    StreamCore(reactor::TcpConnectionPtr conn, const StreamOptions& options)
        : sched_(conn->scheduler()), conn_(std::move(conn)), options_(options) {}

    ~StreamCore() {
        if (conn_->is_open()) conn_->close();  // the last handle went: finish politely
        if (read_) read_->future.cancel();     // nobody can complete it any more
        for (auto& f : drain_waiters_) f.cancel();
        for (auto& f : close_waiters_) f.cancel();
    }

    void attach() {
        std::weak_ptr<StreamCore> weak = weak_from_this();
        conn_->set_data_callback([weak](reactor::TcpConnection&, std::string_view d) {
            if (auto self = weak.lock()) self->on_data(d);
        });
        // With an EOF callback the connection stays open for writing after the
        // peer's EOF, as asyncio streams do; close() ends it.
        conn_->set_eof_callback([weak](reactor::TcpConnection& c) {
            if (auto self = weak.lock()) return self->on_eof();
            c.close();
        });
        conn_->set_low_water_callback([weak](reactor::TcpConnection&) {
            if (auto self = weak.lock()) self->finish_drains(0);
        });
        conn_->set_close_callback([weak](reactor::TcpConnection&, const reactor::CloseReason& r) {
            if (auto self = weak.lock()) self->on_closed(r);
        });
    }

    Future<std::string> start_read(ReadKind kind, std::size_t n, std::string delimiter) {
        if (read_ && !read_->future.done()) throw InvalidStateError("stream: another read is already pending");
        read_.emplace(PendingRead{kind, n, std::move(delimiter), Future<std::string>(sched_), 0});
        Future<std::string> f = read_->future;
        try_read();
        return f;
    }

    bool at_eof() const { return eof_ && in_.empty(); }
    std::size_t buffered() const { return in_.size(); }

    bool write(std::string_view data) { return !closing_ && conn_->write(data); }
    void write_eof() { conn_->shutdown_write(); }

    Future<void> drain() {
        if (error_ != 0) return make_exception_future<void>(sched_, connection_error());
        if (closed_ || !conn_->above_high_water()) return make_ready_future(sched_);
        return drain_waiters_.emplace_back(sched_);
    }

    void close() {
        closing_ = true;
        conn_->close();
    }
    void abort() {
        closing_ = true;
        conn_->abort();
    }
    bool is_closing() const { return closing_ || closed_; }
    Future<void> wait_closed() {
        if (closed_) return make_ready_future(sched_);
        return close_waiters_.emplace_back(sched_);
    }

    reactor::TcpConnection& connection() const { return *conn_; }
    reactor::Scheduler& scheduler() const { return sched_; }

private:
    struct PendingRead {
        ReadKind kind;
        std::size_t n;              // some: at most n; exactly: n
        std::string delimiter;      // until
        Future<std::string> future;
        std::size_t scanned;        // until: bytes already searched
    };

    void on_data(std::string_view d) {
        in_.append(d);
        try_read();
        // Flow control (asyncio's): stop reading while twice the limit waits
        // unread; reading resumes once a read takes it back to the limit.
        if (!paused_ && in_.size() > 2 * options_.limit && !wants_more()) {
            paused_ = true;
            conn_->pause_reading();
        }
    }

    void on_eof() {
        eof_ = true;
        try_read();
    }

    void on_closed(const reactor::CloseReason& reason) {
        closed_ = true;
        eof_ = true;  // nothing more can arrive; bytes already here can still be read
        if (reason.kind == reactor::CloseKind::reset || reason.kind == reactor::CloseKind::error) error_ = reason.error;
        finish_drains(error_);
        for (auto& f : std::exchange(close_waiters_, {}))
            if (!f.done()) f.set_result();
        try_read();
    }

    std::system_error connection_error() const {
        return std::system_error(error_, std::generic_category(),
                                 fmt::format("stream: connection {}", error_ == ECONNRESET || error_ == EPIPE ? "reset" : "failed"));
    }

    void finish_drains(int error) {
        for (auto& f : std::exchange(drain_waiters_, {})) {
            if (f.done()) continue;  // cancelled by its owner
            if (error != 0) {
                f.set_exception(connection_error());
            } else {
                f.set_result();
            }
        }
    }

    // A pending read that the buffer cannot satisfy yet needs more bytes.
    bool wants_more() const { return read_ && !read_->future.done(); }

    // Completes the pending read if the buffer (or EOF, or an error) allows.
    void try_read() {
        if (!read_) return;
        if (read_->future.done()) {  // cancelled by its owner: the bytes stay for the next read
            read_.reset();
            return;
        }
        PendingRead& r = *read_;
        switch (r.kind) {
        case ReadKind::some:
            if (r.n == 0 || !in_.empty()) return complete(std::min(r.n, in_.size()));
            break;
        case ReadKind::exactly:
            if (in_.size() >= r.n) return complete(r.n);
            break;
        case ReadKind::until: {
            std::string_view view = in_.view();
            // Resume the search where the last one stopped, minus a partial delimiter.
            std::size_t from = r.scanned >= r.delimiter.size() ? r.scanned - r.delimiter.size() + 1 : 0;
            std::size_t pos = view.find(r.delimiter, from);
            if (pos != std::string_view::npos) {
                std::size_t end = pos + r.delimiter.size();
                if (end > options_.limit)
                    return fail(LimitOverrunError("stream: the delimiter is found, but the chunk is longer than the limit", end));
                return complete(end);
            }
            r.scanned = view.size();
            if (view.size() > options_.limit)
                return fail(LimitOverrunError("stream: the delimiter is not found, and the chunk exceeds the limit",
                                              view.size()));
            break;
        }
        }
        if (eof_) {
            if (error_ != 0) return fail(connection_error());
            if (r.kind == ReadKind::some) return complete(0);
            std::string partial(in_.view());
            in_.clear();
            return fail(IncompleteReadError(std::move(partial),
                                            r.kind == ReadKind::exactly ? std::optional<std::size_t>(r.n) : std::nullopt));
        }
        // Waiting for more: make sure it can arrive even past the buffer limit.
        if (paused_) {
            paused_ = false;
            conn_->resume_reading();
        }
    }

    void complete(std::size_t n) {
        std::string bytes(in_.data(), n);
        in_.consume(n);
        Future<std::string> f = std::move(read_->future);
        read_.reset();
        if (paused_ && in_.size() <= options_.limit) {
            paused_ = false;
            conn_->resume_reading();
        }
        f.set_result(std::move(bytes));
    }

    template <class E>
    void fail(E error) {
        Future<std::string> f = std::move(read_->future);
        read_.reset();
        f.set_exception(std::move(error));
    }

    reactor::Scheduler& sched_;
    reactor::TcpConnectionPtr conn_;
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

// The state behind a StreamServer: the listener and the conversations running.
class ServerCore : public std::enable_shared_from_this<ServerCore> {
public:
    ServerCore(reactor::Scheduler& sched, StreamServer::Handler handler, const StreamOptions& options)
        : sched_(sched), handler_(std::move(handler)), options_(options) {}

    void listen(const reactor::Address& address) {
        reactor::TcpListener::Options lopt;
        lopt.connection = options_.connection;
        std::weak_ptr<ServerCore> weak = weak_from_this();
        listener_ = reactor::TcpListener::listen(
            sched_, address,
            [weak](const reactor::TcpConnectionPtr& c) {
                if (auto self = weak.lock()) self->on_accept(c);
            },
            lopt);
    }

    void on_accept(const reactor::TcpConnectionPtr& conn) {
        Stream stream = Stream::from(conn, options_);
        StreamCore* key = stream.core_.get();
        active_.emplace(key, stream);
        Future<void> conversation;
        try {
            conversation = handler_(stream);
        } catch (...) {
            active_.erase(key);
            stream.abort();
            reactor::ErrorContext ctx;
            ctx.message = fmt::format("stream server {}: the handler threw", listener_->address().to_string());
            ctx.exception = std::current_exception();
            sched_.call_exception_handler(ctx);
            return;
        }
        auto finished = [weak = weak_from_this(), stream, key]() mutable {
            stream.close();
            if (auto self = weak.lock()) self->active_.erase(key);
        };
        if (!conversation.valid()) return finished();
        conversation.add_done_callback(std::move(finished));
    }

    void abort_clients() {
        auto doomed = active_;  // aborting does not call back synchronously, but be safe
        for (auto& [key, stream] : doomed) stream.abort();
    }

    reactor::Scheduler& sched_;
    StreamServer::Handler handler_;
    StreamOptions options_;
    reactor::TcpListenerPtr listener_;
    std::unordered_map<StreamCore*, Stream> active_;
};

}  // namespace detail

// ---------------------------------------------------------------- Stream

Stream Stream::from(reactor::TcpConnectionPtr conn, StreamOptions options) {
    if (!conn) throw std::invalid_argument("Stream::from: null connection");
    if (options.limit == 0) throw std::invalid_argument("Stream: limit must be positive");
    auto core = std::make_shared<detail::StreamCore>(std::move(conn), options);
    core->attach();
    return Stream(std::move(core));
}

detail::StreamCore& Stream::core() const {
    if (!core_) throw InvalidStateError("futures: empty Stream");
    return *core_;
}

Future<std::string> Stream::read(std::size_t max) { return core().start_read(detail::StreamCore::ReadKind::some, max, {}); }

Future<std::string> Stream::read_exactly(std::size_t n) {
    return core().start_read(detail::StreamCore::ReadKind::exactly, n, {});
}

Future<std::string> Stream::read_until(std::string delimiter) {
    if (delimiter.empty()) throw std::invalid_argument("Stream::read_until: empty delimiter");
    return core().start_read(detail::StreamCore::ReadKind::until, 0, std::move(delimiter));
}

bool Stream::at_eof() const { return core().at_eof(); }
std::size_t Stream::buffered() const { return core().buffered(); }
bool Stream::write(std::string_view data) { return core().write(data); }
Future<void> Stream::drain() { return core().drain(); }
void Stream::write_eof() { core().write_eof(); }
void Stream::close() { core().close(); }
void Stream::abort() { core().abort(); }
bool Stream::is_closing() const { return core().is_closing(); }
Future<void> Stream::wait_closed() { return core().wait_closed(); }
reactor::Address Stream::local_address() const { return core().connection().local_address(); }
reactor::Address Stream::peer_address() const { return core().connection().peer_address(); }
reactor::Scheduler& Stream::scheduler() const { return core().scheduler(); }

// ---------------------------------------------------------------- connecting

namespace {

// One open_connection: tries the addresses in turn until one connects.
struct ConnectAttempt : std::enable_shared_from_this<ConnectAttempt> {
    ConnectAttempt(reactor::Scheduler& sched, std::vector<reactor::Address> addrs, const StreamOptions& opt)
        : result(sched), addresses(std::move(addrs)), options(opt) {}

    void next() {
        reactor::Connector::Options copt;
        copt.connection = options.connection;
        const reactor::Address& address = addresses[index];
        connector = reactor::connect(
            result.scheduler(), address,
            [self = shared_from_this(), address](reactor::TcpConnectionPtr conn, std::error_code ec) {
                if (self->result.done()) {  // cancelled while the connect completed
                    if (conn) conn->abort();
                    return;
                }
                if (!ec) return self->result.set_result(Stream::from(std::move(conn), self->options));
                if (++self->index < self->addresses.size()) return self->next();
                self->result.set_exception(std::system_error(ec, fmt::format("connect to {}", address.to_string())));
            },
            copt);
    }

    Future<Stream> result;
    std::vector<reactor::Address> addresses;
    std::size_t index = 0;
    StreamOptions options;
    std::weak_ptr<reactor::Connector> connector;  // the loop owns it while it is pending
};

Future<Stream> open_connection_to(reactor::Scheduler& sched, std::vector<reactor::Address> addresses,
                                  const StreamOptions& options) {
    auto attempt = std::make_shared<ConnectAttempt>(sched, std::move(addresses), options);
    Future<Stream> result = attempt->result;
    attempt->next();
    // Cancelling the future abandons the attempt. Weak: the attempt holds the
    // future, and the loop holds the attempt while a connect is pending.
    result.add_done_callback([weak = std::weak_ptr<ConnectAttempt>(attempt)](Future<Stream>& f) {
        if (!f.cancelled()) return;
        if (auto a = weak.lock())
            if (auto c = a->connector.lock()) c->cancel();
    });
    return result;
}

}  // namespace

Future<Stream> open_connection(reactor::Scheduler& sched, const reactor::Address& address, StreamOptions options) {
    return open_connection_to(sched, {address}, options);
}

Future<Stream> open_connection(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                               StreamOptions options) {
    std::vector<reactor::Address> addresses;
    try {
        addresses = reactor::Address::resolve(host, port);
    } catch (const std::exception&) {
        return make_exception_future<Stream>(sched, std::current_exception());
    }
    return open_connection_to(sched, std::move(addresses), options);
}

// ---------------------------------------------------------------- serving

StreamServer start_server(reactor::Scheduler& sched, const reactor::Address& address, StreamServer::Handler handler,
                          StreamOptions options) {
    if (!handler) throw std::invalid_argument("start_server: empty handler");
    StreamServer server;
    server.core_ = std::make_shared<detail::ServerCore>(sched, std::move(handler), options);
    server.core_->listen(address);
    return server;
}

StreamServer start_server(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                          StreamServer::Handler handler, StreamOptions options) {
    return start_server(sched, reactor::Address::resolve(host, port).front(), std::move(handler), options);
}

const reactor::Address& StreamServer::address() const {
    if (!core_) throw InvalidStateError("futures: empty StreamServer");
    return core_->listener_->address();
}
void StreamServer::close() {
    if (core_) core_->listener_->close();
}
bool StreamServer::serving() const { return core_ && core_->listener_->listening(); }
std::size_t StreamServer::active() const { return core_ ? core_->active_.size() : 0; }
std::uint64_t StreamServer::accepted() const { return core_ ? core_->listener_->accepted() : 0; }
void StreamServer::abort_clients() {
    if (core_) core_->abort_clients();
}

}  // namespace futures
