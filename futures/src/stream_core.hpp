// SPDX-License-Identifier: MIT
// Internal: the state behind a Stream: the Protocol of its transport (a
// plain connection, or a layer such as TLS over one: reactor/net/transport.hpp),
// the bytes received but not yet read, and the promises of the futures
// waiting on them (each made with the line of the user's call: Stream::read,
// drain, wait_closed). The user's Stream handles and its pending waits decide
// how long it lives: the handles count it (one word each, no control block);
// when the last goes while a wait is pending, the stream closes and holds
// itself until the waits have completed (last_reference_gone). The
// transport holds a plain pointer to us (its protocol), which ~StreamCore
// clears. The loop abandoned before the transport could tell us how it
// closed (Protocol::on_abandoned) breaks the promises still pending (a
// BrokenPromise: cancelled). Loop thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
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
#include <reactor/net/frame.hpp>
#include <reactor/net/transport.hpp>

#include "futures/promise.hpp"
#include "futures/stream.hpp"
#include "active_count.hpp"

namespace futures::detail {

// A stream's futures complete as its transport tells it how it closed:
// Scheduler::close() aborts the connections and tells their protocols,
// which cancel a pending read or drain and complete wait_closed. What the
// loop abandons instead (~Scheduler, or close()'s last phase) can complete
// nothing any more: the transport tells us on_abandoned, which
// breaks those promises, so a task or continuation waiting on them is
// released rather than left in a cycle through the stream (a
// conversation's callback holding its Stream, say). live() lists nothing
// here: the connection is listed.
class StreamCore final : public reactor::Protocol, private UserCallback {
public:
    enum class ReadKind : std::uint8_t { some, exactly, until, line, frame, all };

    // Over any transport: a plain connection, TLS, one of the user's.
    StreamCore(reactor::TransportPtr transport, const StreamOptions& options)
        : transport_(std::move(transport)), limit_(options.limit) {}
    // The last handle went: closes an open connection gracefully; the
    // promises still pending break (cancelled, naming their lines).
    ~StreamCore();

    // The count of Stream handles (detail::Ref), and of the references a
    // callback of ours takes while it runs: the last one deletes the core.
    void add_ref() noexcept { ++refs_; }
    void release() noexcept {
        if (--refs_ == 0) last_reference_gone();
    }

    // Becomes the transport's protocol; once, right after construction. A
    // transport no longer open is no stream's: the stream is closed at once.
    void attach();
    // Stream::replace_transport (STARTTLS): see there.
    void replace_transport(const std::function<reactor::TransportPtr(reactor::Transport&)>& make);

    // One pending read at a time, else InvalidStateError.
    Future<std::string> start_read(ReadKind kind, std::size_t n, std::string delimiter, std::source_location where);
    // read_line and read_frame: their futures hold an optional, empty at a
    // clean end of input.
    Future<std::optional<std::string>> start_framed_read(ReadKind kind, reactor::FrameFormat format,
                                                         std::source_location where);
    bool at_eof() const { return eof_ && in().empty(); }
    std::size_t limit() const noexcept { return limit_; }  // StreamOptions::limit
    std::size_t buffered() const { return in().size(); }

    // Writes; reading pauses if the output passed its high-water mark and no
    // read waits (see pause_if_unwanted).
    bool write(std::string_view data);
    void write_eof() { transport_->write_eof(); }
    Future<void> drain(std::source_location where);

    void close();
    void abort();
    // A conversation of a StreamServer (start_server): counted in `count`
    // until `conversation` completes, then the stream is closed (at once
    // if it is empty). The stream waits on it as a done-callback of its
    // own (UserCallback), holding a reference meanwhile: no box, no second
    // handle. Throws (std::bad_alloc) only after closing the stream.
    void follow(Ref<ActiveCount> count, const Future<void>& conversation);
    bool is_closing() const { return closing_ || closed_ || !transport().is_open(); }
    Future<void> wait_closed(std::source_location where);

    reactor::Connection& connection() const { return transport_->socket(); }
    reactor::Transport& transport() const { return *transport_; }
    reactor::Scheduler& scheduler() const { return connection().scheduler(); }

private:
    // The promise of the pending read: one reference to its future's state,
    // a State<std::string> for read, read_exactly and read_until, a
    // State<std::optional<std::string>> for read_line and read_frame (which
    // end with an empty optional at a clean end of input), told apart by the
    // read's kind. Not a Promise<T>, whose name and two flags would cost an
    // idle stream a word, nor a variant of two, which would cost it two. As
    // a Promise does, it breaks a future still pending when it goes
    // ("broken promise: the stream read created at ...").
    // A read's state: a State<T> that says what it waits on in live().
    template <class T>
    class ReadState final : public State<T> {
    public:
        using State<T>::State;
        std::string waits_on() const override { return "a stream read"; }
    };

    class ReadPromise {
    public:
        ReadPromise() noexcept = default;
        ReadPromise(ReadPromise&& other) noexcept = default;
        ReadPromise& operator=(ReadPromise&& other) noexcept {
            if (this != &other) {
                break_if_pending();
                state_ = std::move(other.state_);
            }
            return *this;
        }
        ~ReadPromise() { break_if_pending(); }

        // A promise of a new pending Future<T> (T: std::string or
        // std::optional<std::string>) whose origin is `where`.
        template <class T>
        static ReadPromise make(reactor::Scheduler& sched, std::source_location where, Future<T>& future) {
            auto* state = new ReadState<T>(sched, where, false);
            ReadPromise p;
            p.state_ = Ref<StateBase>::adopt(state);
            future = Access::share(state);
            return p;
        }

        bool valid() const noexcept { return static_cast<bool>(state_); }
        bool is_pending() const noexcept { return state_ && state_->pending(); }
        std::source_location where() const noexcept { return state_->origin(); }
        // Completes the future with `bytes`, unless its consumer cancelled
        // it. `framed`: the future holds an optional (read_line, read_frame).
        void set_value(std::string bytes, bool framed) {
            if (!is_pending()) return;
            if (framed) {
                static_cast<State<std::optional<std::string>>&>(*state_).finish_value(std::move(bytes));
            } else {
                static_cast<State<std::string>&>(*state_).finish_value(std::move(bytes));
            }
        }
        // A framed read's clean end of input: an empty optional.
        void set_end() {
            if (is_pending()) static_cast<State<std::optional<std::string>>&>(*state_).finish_value(std::nullopt);
        }
        void set_exception(std::exception_ptr error) {
            if (is_pending()) state_->finish_exception(std::move(error));
        }
        template <class E>
        void set_exception(E error) {
            set_exception(std::make_exception_ptr(std::move(error)));
        }
        void cancel() {
            if (state_) state_->cancel();
        }

    private:
        void break_if_pending() noexcept {
            if (is_pending()) break_promise(*state_, "stream read");
        }

        Ref<StateBase> state_;
    };
    // The pending read, if its promise is valid: a frame's format in `n`
    // and `prefix` rather than a FrameFormat of its own, the kind and prefix
    // in bits (an idle stream pays for this whole struct).
    struct PendingRead {
        ReadPromise promise;
        // some, all: at most n (read_all: its limit); exactly: n; frame: the
        // largest payload (the format's max_size).
        std::size_t n = 0;
        ReadKind kind : 3 = ReadKind::some;
        reactor::LengthPrefix prefix : 1 = reactor::LengthPrefix::u32;  // frame

        bool active() const noexcept { return promise.valid(); }
        // Its future holds a std::optional<std::string>.
        bool framed() const noexcept { return kind == ReadKind::line || kind == ReadKind::frame; }
        // The promise, taken out: no read is pending any more (a promise
        // still pending in it breaks if it is dropped).
        ReadPromise take() {
            ReadPromise p = std::move(promise);
            *this = PendingRead{};
            return p;
        }
    };
    // What few streams use, in a block made on first use: the waiters of
    // drain() and wait_closed() (drain() of output below the high-water
    // mark is ready at once), read_until's delimiter (read_line needs
    // none) and the exception a failed transport gave. An idle stream pays a
    // pointer for them.
    struct Rare {
        std::vector<Promise<void>> drain;
        std::vector<Promise<void>> close;
        std::string delimiter;  // the pending read's, if it is a read_until
        // What reads and drains fail with once the transport failed: a
        // StreamError with its End, made once (if this block could be made).
        std::exception_ptr error;
    };
    Rare& rare() {
        if (!rare_) rare_ = std::make_unique<Rare>();
        return *rare_;
    }
    void check_no_read_pending() const;
    // The bytes received and not read yet (empty if no block was made).
    const reactor::ByteBuffer& in() const noexcept;
    // The same, to append to: its block made on first use.
    reactor::ByteBuffer& in_to_append();
    // Consumes n buffered bytes (n <= in().size()); a buffer emptied after a
    // burst (more than a small one's capacity) goes back to the heap, and
    // one that waits while reading is paused for the output is trimmed.
    void consume(std::size_t n) noexcept;
    // While reading is paused for the output (pause_if_unwanted), the
    // buffer keeps no more than twice what it holds: its capacity came from
    // bursts read while the reader was behind, and it may wait as long as
    // the peer lets it (a client that never reads its echoes keeps its
    // conversation in drain()). Not while paused for the 2 x limit rule: a
    // reader is behind there, reading resumes soon, and the buffer would
    // only grow back.
    void trim_read_buffer() noexcept;

    // What the transport tells us (reactor::Protocol; only the transport
    // calls these).
    void on_data(std::string_view d) override;
    bool on_eof() override;  // stays open for writing
    void on_resume_writing() override;
    void on_closed(const reactor::End& end) override;
    // The loop was abandoned before the close was told: the promises still
    // pending break.
    void on_abandoned() noexcept override;
    // The last handle went. A read, drain() or wait_closed() still waiting
    // keeps the stream (asyncio's: a pending operation holds its stream):
    // nobody can use it any more, so it closes gracefully, and they complete
    // as that close decides (the read with the input's end, drain() once the
    // output is out, wait_closed() once closed) instead of breaking; the
    // last one done lets it go (release_orphan). With none waiting, it goes.
    void last_reference_gone() noexcept;
    bool waits_pending() const noexcept;
    void release_orphan() noexcept;

    // The conversation's end (follow): UserCallback, run when its future
    // completes; dispose() then drops the reference the waiter held.
    void run(StateBase& done) override;
    std::source_location where() const noexcept override { return conversation_->where; }
    void dispose() noexcept override;

    // What a read or drain fails with once the transport failed.
    std::exception_ptr connection_error() const;
    void finish_drains();
    // The transport ended, neither cleanly nor at the loop's end.
    bool failed() const noexcept {
        return closed_ && end_ != reactor::EndKind::local && end_ != reactor::EndKind::eof;
    }
    // A pending read that the buffer cannot satisfy yet needs more bytes.
    bool wants_more() const { return read_.promise.is_pending(); }
    // Flow control: while no read waits, reading from the socket pauses once
    // more than 2 x limit bytes wait unread (asyncio's rule), or once the
    // output is above its high-water mark (a conversation that answers what
    // it reads, waiting in drain() for a peer that does not read: what it
    // would read next could only wait, as the callback connection's
    // pause_reading_above_high_water holds it back). A read that needs more
    // bytes resumes it (try_read); so do a read that takes the buffer back to
    // the limit while the output is below its mark (deliver), and the output
    // falling to its low mark with the buffer at the limit or below
    // (on_low_water).
    void pause_if_unwanted();
    // Completes the pending read if the buffer (or EOF, or an error) allows.
    void try_read();
    void complete(std::size_t n) { complete(0, n, n); }
    // Hands over `length` bytes from `offset`, consuming `consumed` (framing included).
    void complete(std::size_t offset, std::size_t length, std::size_t consumed);
    void deliver(std::string bytes);  // completes the pending read with `bytes`
    template <class E>
    void fail(E error);

    // The transport, and through it the connection and its loop. Its open
    // end owns itself (a connection until its close was told); this keeps
    // the object for the stream's inspection after that.
    reactor::TransportPtr transport_;
    // The bytes received and not read yet, in a block made when bytes first
    // have to wait (a reader slower than its peer, a partial line or
    // frame): a read waiting on an empty buffer takes each chunk straight
    // from the connection (on_data), so a stream whose reader keeps up, an
    // idle one included, pays a pointer.
    // With the bytes, how far the pending read_until or read_line searched
    // them already (at most limit_; each read starts it at 0): kept where
    // the bytes are, so a stream whose reader keeps up pays nothing for it.
    struct ReadBuffer : reactor::ByteBuffer {
        std::size_t scanned = 0;
    };
    std::unique_ptr<ReadBuffer> in_;
    std::unique_ptr<Rare> rare_;
    // Potentially overlapping, so that the members after it take the tail
    // padding after its kind and prefix, not words of their own: every
    // idle stream pays for what follows.
    [[no_unique_address]] PendingRead read_;
    bool eof_ : 1 = false;      // no more bytes will arrive
    bool closed_ : 1 = false;   // the connection is closed
    bool closing_ : 1 = false;  // close() or abort() was called
    bool paused_ : 1 = false;   // reading paused by our flow control
    bool conversation_over_ : 1 = false;  // follow's conversation completed: no longer counted
    bool orphaned_ : 1 = false;  // no handle left: holds itself until its waits complete (last_reference_gone)
    bool in_scope_ : 1 = false;  // follow's conversation is a counted child of its server's scope
    // How the transport ended, once closed_ (the rest of its End, when it
    // failed, is in rare().error).
    reactor::EndKind end_ = reactor::EndKind::local;
    std::uint32_t refs_ = 0;  // see add_ref
    // StreamOptions::limit, the one option a stream uses after it is made
    // (the connection's are the transport's): kept alone, not the whole
    // StreamOptions, because every idle stream pays for what it keeps.
    std::size_t limit_;
    // The server's count this stream's conversation is in, if a server made
    // it (follow), until the waiter is disposed of.
    Ref<ActiveCount> conversation_;
};

}  // namespace futures::detail
