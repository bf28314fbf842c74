// SPDX-License-Identifier: MIT
// reactor::tls::Connection: TLS over a reactor::Connection, by composition:
// a reactor::Protocol to the plain connection below (reactor/net/transport.hpp),
// a reactor::Transport to the protocol above (a futures::Stream, your own,
// or the callbacks, which are a protocol made when one is first set).
//
// The TLS engine (OpenSSL) talks to a BIO of ours in memory, never to the
// socket (asyncio's SSLProtocol over a transport, Asio's ssl::stream engine,
// libevent's filter mode): the ciphertext the transport receives is what the
// engine reads, and the records the engine makes go to the transport's
// write() once each engine call has returned, never from inside OpenSSL. So
// there is one write path, and the transport's water marks, deadlines,
// write_eof, close reasons and the virtual clock kit all work under TLS
// unchanged. An idle TLS connection keeps no buffer of its own (the kernel or
// the transport's output buffer has the records): only bytes the engine has
// not read yet (reading paused) are kept.
//
// Owns its transport: after start_server/start_client we are the plain
// connection's protocol; do not use it directly. Like the transport, an open
// TLS connection owns itself (from start until its transport has told it of
// the close, or of the loop's end) and is released after its close callback
// has run. Loop thread only: in debug mode (Scheduler::Options::debug), a
// member that acts (the setters, write, write_eof, close, abort,
// pause/resume_reading, set_water_marks) called from another thread while
// the loop runs is reported on the loop's exception handler, naming the line
// that made the transport, and refused with std::logic_error before it
// changes anything, as the plain Connection's (Scheduler::check_owner_thread).
// No member calls back synchronously, except write(), which may run the
// high-water callback before it returns (as the plain Connection).
//
// Life (State; Connection::Phase says where within it, docs/tls.md "States"):
//   handshaking ──handshake done──> open ──close()/write_eof()──> shutting down ──> closed
//        │ failure, timeout             │ peer close_notify, truncation, error        ^
//        └──────────────────────────────┴──────────────────────────────────────────────┘
// Writes before the handshake is done are kept as plaintext and encrypted
// when it is done. The close reason (a reactor::End, reactor/net/end.hpp) tells a
// peer's clean close from a truncation, and carries OpenSSL's text when the
// handshake fails; a transport that fails under it (a reset, ENOBUFS) ends it
// with the transport's own reason, as the plain connection's. close() sends
// close_notify and does not wait for the peer's (RFC 8446, 6.1 allows it;
// the plain close() does not wait for the peer's FIN either); write_eof()
// sends it and reads on until the peer's arrives (Asio's async_shutdown,
// asyncio's SHUTDOWN state).
//
// Flow control both ways (asyncio's two-sided flow control):
//  - buffered(), and so the water marks, count plaintext not yet encrypted
//    (before the handshake) plus ciphertext the kernel has not taken; the
//    marks are the transport's (ConnectionOptions::high_water/low_water).
//  - pause_reading() stops handing decrypted data to the data callback and
//    pauses the transport, so the peer is held back by TCP.
//
// Timeouts on the loop's timers (so on virtual time in tests):
// handshake_timeout (60 s) from start until the handshake is done, and
// shutdown_timeout (30 s) from our close_notify until the peer's answers it
// (write_eof) or our output is flushed (close()): a peer that never answers
// is aborted instead of hanging (asio#164, beast#2807).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "reactor/callback_slot.hpp"
#include "reactor/export.hpp"
#include "reactor/handle.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/net/detail/callback_protocol.hpp"
#include "reactor/net/transport.hpp"
#include "reactor/tls/context.hpp"

namespace reactor::tls {

struct Options {
    std::chrono::milliseconds handshake_timeout{60'000};  // zero: none
    std::chrono::milliseconds shutdown_timeout{30'000};   // zero: none
    // A server's bound: the most handshakes in progress at once among the
    // connections one tls::listen (or futures' TLS start_server) accepted.
    // Beyond it the oldest handshake still in progress is aborted (reason
    // handshake_failed; see handshake_limit.hpp for why the oldest). With a
    // LoopGroup, each loop keeps its own count, of max_handshakes / loops
    // (rounded up). Zero: no limit. start_server/start_client alone ignore it.
    std::size_t max_handshakes = 0;
};

class HandshakeLimit;
class Connection;
// Held as a plain connection is (reactor/ref.hpp): an attached TLS connection
// holds one count itself until its transport tells it how it closed.
using ConnectionPtr = reactor::Ref<Connection>;

class REACTOR_API Connection final : public reactor::Transport,
                                     private reactor::Protocol {
    struct Passkey {};

public:
    // What users test: four coarse stages (the life drawn above).
    enum class State : std::uint8_t { handshaking, open, shutting_down, closed };
    // Where a connection is in its life: the one thing the class keeps about
    // its stage. Finer than State (each Phase is within one: state_of), it
    // says whether the handshake finished, which direction has ended, and
    // what was asked while the handshake ran. Public for diagnostics and for
    // the check of docs/tls.md against may_move. State is the stable contract
    // and keeps its four values: code that asks state() == State::open means
    // "the handshake done, not shutting down", true of five phases.
    enum class Phase : std::uint8_t {
        // The handshake in progress (State::handshaking), and what was asked
        // meanwhile, carried out once it is done, after the plaintext
        // written before it:
        handshaking,
        handshaking_then_write_eof,  // write_eof() was called
        handshaking_then_close,      // close() was called with plaintext pending
        // The handshake done (State::open):
        handshaken_then_write_eof,  // the pending plaintext and the handshake callback go first, then write_eof()
        handshaken_then_close,      // the same, then close()
        open,                       // both directions
        write_ended,                // our close_notify sent (write_eof()): reading on until the peer's
        read_ended,                 // the peer's close_notify arrived (at_eof()): writing on (the EOF callback)
        // The transport closing or aborted (State::shutting_down), and
        // closed (State::closed), each by how far the connection got:
        shutting_down_in_handshake,  // the handshake never finished
        shutting_down,
        shutting_down_read_ended,    // after the peer's close_notify
        closed_in_handshake,
        closed,
        closed_read_ended,
    };
    // The enumerators go in the order of life, grouped by State.
    static constexpr State state_of(Phase phase) noexcept {
        return phase < Phase::handshaken_then_write_eof    ? State::handshaking
               : phase < Phase::shutting_down_in_handshake ? State::open
               : phase < Phase::closed_in_handshake        ? State::shutting_down
                                                           : State::closed;
    }
    // The moves a connection makes, and no others (docs/tls.md, "States",
    // draws them, and a test holds the drawing to the table). Staying put is no
    // move. Any other is a bug of this class, refused with std::logic_error
    // (asyncio's SSLProtocol._set_state).
    static bool may_move(Phase from, Phase to) noexcept;  // connection_ending.cpp: the table

    using DataCallback = std::function<void(Connection&, std::string_view plaintext)>;
    using EventCallback = std::function<void(Connection&)>;
    using CloseCallback = std::function<void(Connection&, const End&)>;
    // What the setters take (as the plain Connection's: see there).
    using DataFunction = SlotFunction<void(Connection&, std::string_view plaintext)>;
    using EventFunction = SlotFunction<void(Connection&)>;
    using CloseFunction = SlotFunction<void(Connection&, const End&)>;

    // Starts the server or client side of a handshake over `transport` (an
    // open plain connection: accepted, connected, or one that spoke plaintext
    // so far: STARTTLS, asyncio's loop.start_tls). The handshake begins at
    // once; callbacks set right after this call see everything. The client
    // sends `server_name` as SNI (unless it is an IP literal, which SNI does
    // not allow) and, when the context verifies, checks the certificate
    // against it; it also keys the session cache ("server_name:port").
    // Throws reactor::tls::Error if OpenSSL cannot make the session (memory),
    // std::invalid_argument for a closed transport or a context of the wrong
    // role; the transport is then left as it was. Throws std::bad_alloc if
    // the transport cannot queue the client's first flight; it is then aborted.
    static ConnectionPtr start_server(const reactor::ConnectionPtr& transport, std::shared_ptr<Context> context,
                                      Options options = {});
    static ConnectionPtr start_client(const reactor::ConnectionPtr& transport, std::shared_ptr<Context> context,
                                      std::string server_name, Options options = {});

    Connection(Passkey, reactor::ConnectionPtr transport, std::shared_ptr<Context> context, SSL* ssl, Options options);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    // A handle to this connection (as the plain connection's): never in its destructor.
    ConnectionPtr shared_from_this() const noexcept { return ConnectionPtr(const_cast<Connection*>(this)); }

    // ---- what it tells (as the plain Connection's: reactor/net/transport.hpp) ----
    // One Protocol at a time, or the callbacks below (a protocol made when
    // one is first set); the handshake callback is apart from both.
    void set_protocol(reactor::Protocol* protocol) override;
    reactor::Protocol* protocol() const noexcept { return protocol_; }

    // ---- callbacks (as the plain Connection's; set or replace any time) ----
    // Decrypted data; valid only during the call.
    void set_data_callback(DataFunction cb);
    // The handshake finished: the peer is verified (if the context verifies),
    // alpn_protocol(), peer_subject() and session_reused() are known. Runs
    // once, and never if the handshake fails (the close says why: end()).
    void set_handshake_callback(EventFunction cb) {
        check_thread("tls::Connection::set_handshake_callback");
        on_handshake_.set(std::move(cb));
    }
    // For a layer that waits for the handshake (futures::start_tls), apart
    // from the callback above, which stays the user's: runs once, just before
    // it; dropped unrun if the handshake never finishes (end() then says why,
    // unless the loop was abandoned). Throws std::logic_error once it is done.
    void set_handshake_waiter(EventFunction waiter);
    // The peer sent close_notify. Without an EOF callback the connection then
    // answers with its own and closes (reason eof); with one it
    // stays open for writing: finish with write_eof() or close(). Once it has
    // arrived, a reset our writes then meet (the peer closed its socket) does
    // not change the reason: still eof (local after close()).
    void set_eof_callback(EventFunction cb);
    // Everything written so far was handed to the kernel.
    void set_drain_callback(EventFunction cb);
    void set_high_water_callback(EventFunction cb);
    void set_low_water_callback(EventFunction cb);
    // Exactly once, on a later iteration than the event that closed it; then
    // every callback is dropped and the connection releases itself.
    void set_close_callback(CloseFunction cb);

    // ---- writing ----
    // Encrypts and sends (or keeps the plaintext until the handshake is done).
    // False, dropping `data`, once closing or closed or after write_eof(), or
    // if the transport failed; true means it will go out in order. Out of
    // memory: false and aborted (tls_error) if the engine's records could not
    // be collected; std::bad_alloc (as the plain write()) if the transport
    // could not queue them, the connection then aborted (the engine counted
    // them as sent: what follows could not be read).
    bool write(std::string_view data) override;
    // Plaintext waiting for the handshake + ciphertext the kernel has not taken.
    std::size_t buffered() const noexcept override;
    void set_water_marks(std::size_t high, std::size_t low) override;  // the transport's
    bool above_high_water() const noexcept override { return above_high_; }

    // ---- reading ----
    void pause_reading() override;
    void resume_reading() override;  // data already decrypted is delivered on a later iteration
    bool at_eof() const noexcept override {  // the peer's close_notify arrived
        return phase_ == Phase::read_ended || phase_ == Phase::shutting_down_read_ended ||
               phase_ == Phase::closed_read_ended;
    }

    // ---- ending ----
    // Sends close_notify (after the pending plaintext), then shuts down the
    // TCP sending side; reading goes on until the peer's close_notify, which
    // closes the connection (reason eof), or shutdown_timeout.
    void write_eof() override;
    // Graceful: stop reading, flush, send close_notify, close the transport
    // once flushed (bounded by shutdown_timeout). Reason local. Idempotent.
    void close() override;
    // The same graceful close, reporting `kind` as the End's kind instead of
    // local (Transport::close(EndKind): a reader's line_too_long). As for
    // close(), a failure or a timeout under the flush is the reason instead.
    void close(EndKind kind) override;
    // Immediate: no close_notify, buffered data dropped, the peer sees a reset.
    void abort() override;

    // ---- inspection ----
    State state() const noexcept { return state_of(phase_); }
    Phase phase() const noexcept { return phase_; }
    bool is_open() const noexcept override { return state() == State::handshaking || state() == State::open; }
    // How it ended, once closed (what the close callback was told); null before.
    const End* end() const noexcept { return state() == State::closed && ending_ ? &*ending_ : nullptr; }
    bool handshake_done() const noexcept {
        return state() != State::handshaking && phase_ != Phase::shutting_down_in_handshake &&
               phase_ != Phase::closed_in_handshake;
    }
    bool is_server() const noexcept;
    // The negotiated ALPN protocol ("h2", "http/1.1"), empty if none.
    std::string alpn_protocol() const;
    // "TLSv1.3", "TLSv1.2".
    std::string protocol_version() const;
    // The peer certificate's subject, RFC 2253 ("CN=localhost,O=reactor"),
    // empty if the peer sent none.
    std::string peer_subject() const;
    // The chain verification result: 0 (X509_V_OK) if verified, else an
    // X509_V_ERR_* code; verify_result_text() spells it ("ok", "hostname mismatch").
    long verify_result() const;
    std::string verify_result_text() const;
    // Server side: the name the client sent as SNI (empty if none). Client: the server name given.
    std::string server_name() const;
    // The session was resumed (client: the cached session was accepted).
    bool session_reused() const;
    // The plain connection underneath: its addresses, fd, no-delay and
    // deadlines may be used; its callbacks and writes must not.
    reactor::Connection& transport() const noexcept { return *transport_; }
    reactor::Connection& socket() const noexcept override { return *transport_; }
    Connection* tls() noexcept override { return this; }
    const std::shared_ptr<Context>& context() const noexcept { return context_; }
    // The OpenSSL session, for what this class does not cover. Owned here.
    SSL* native_handle() const noexcept { return ssl_; }

private:
    friend class HandshakeLimit;  // ends the oldest handshake in progress (fail)
    // Debug mode's owner-thread check (see the header comment); a closed
    // connection is not checked: its members do nothing, its loop may be gone.
    void check_thread(const char* member) const {
        if (state() != State::closed)
            transport_->scheduler().check_owner_thread(member, nullptr, &transport_->made_at(), "TLS connection");
    }
    static ConnectionPtr start(const reactor::ConnectionPtr& transport, std::shared_ptr<Context> context,
                               bool server, std::string server_name, Options options);
    void attach();
    // What the plain connection tells us (reactor::Protocol).
    void on_data(std::string_view ciphertext) override;
    bool on_eof() override;  // stays open: the engine decides
    void on_pause_writing() override;
    void on_resume_writing() override { check_low_water(); }
    bool wants_drained() const noexcept override;
    void on_drained() override;
    void on_closed(const reactor::End& reason) override;
    void on_abandoned() noexcept override;
    void on_peer_close_notify();
    using Callbacks = reactor::detail::CallbackProtocol<Connection>;
    void advance();
    void do_handshake();
    void on_handshake_done();
    void read_plaintext();
    bool encrypt(std::string_view data);
    std::string openssl_error_text();
    void send_close_notify();
    void do_write_eof();
    void do_close();
    void fail(EndKind kind, std::string detail, bool abortive);
    void handshake_transport_lost();  // a flight's write failed, the engine fine: the transport's end is the end
    void arm_timer(std::chrono::milliseconds after, EndKind kind);
    void set_phase(Phase to);  // checked: may_move
    // write() and write_eof() are taken: not ending, nor asked to end.
    bool writable() const noexcept {
        return phase_ == Phase::handshaking || phase_ == Phase::open || phase_ == Phase::read_ended;
    }
    void check_low_water();
    void update_transport_reading();
    void schedule_read();
    template <class Tell>
    void tell_end(Tell tell);  // the close, or the loop's end, to our protocol (connection_ending.cpp)

    reactor::ConnectionPtr transport_;
    std::shared_ptr<Context> context_;
    SSL* ssl_;
    // The engine's BIO (connection_bio.cpp): reads `input_`; collects what
    // the engine writes, for the transport once the engine call returns.
    friend struct EngineBio;
    friend struct InEngine;
    int engine_read(char* out, int size);
    int engine_write(const char* data, int size) noexcept;
    bool write_to_transport(std::string_view records);
    void records_lost();  // the transport threw taking them: aborted (tls_error)
    bool engine_at_eof() const noexcept { return input_eof_ && input_.empty(); }
    void feed(std::string_view fresh);
    std::string_view input_;    // ciphertext the engine may read now
    std::string unread_input_;  // ciphertext left unread when the engine stopped (reading paused)
    // The transport read EOF: the engine sees it after `input_`. Not a
    // phase: it is the end of the engine's input, as `input_` is its input;
    // what it means (the peer's close_notify came first, or a truncation)
    // the engine decides when it reads it, which waits while reading is
    // paused, and the phase moves then.
    bool input_eof_ = false;
    // An engine write failed and closed the transport (see fail()). Not a
    // phase: it says, during one engine call, who closed the transport (our
    // alert, or the transport's own failure), for the close reason fail() sets.
    bool transport_closed_by_engine_ = false;
    int in_engine_ = 0;         // inside an OpenSSL call: user callbacks wait (see deliver_high_water)
    // The transport crossed its high mark while the engine ran: told once
    // it is out. I/O bookkeeping, as above_high_, in any phase.
    bool high_water_deferred_ = false;
    void deliver_high_water();
    Options options_;
    std::string pending_plaintext_;  // written before the handshake finished
    std::string server_name_;
    // Decided before the transport closed: what the close will say; once
    // closed, what it said (end()).
    std::optional<End> ending_;
    Handle timer_;        // the handshake or the shutdown timeout
    // What only a handshake needs, made once needed, gone with it: the token a
    // HandshakeLimit sees us by (weakly, from whatever thread drops it; let go
    // as the handshake ends) and the waiter (until it runs or the end is told).
    struct Handshaking {
        std::shared_ptr<Connection* const> token;
        EventFunction waiter;
    };
    std::unique_ptr<Handshaking> handshaking_;
    reactor::Protocol* protocol_ = nullptr;  // see set_protocol
    std::unique_ptr<Callbacks> callbacks_;    // once a callback was set; kept until we go
    CallbackSlot<void(Connection&)> on_handshake_;
    // What a graceful close of ours (ending_ local) reports: close(kind)'s kind.
    EndKind close_kind_ = EndKind::local;
    Phase phase_ = Phase::handshaking;  // moved only by set_phase
    // Not phases: I/O bookkeeping that holds the same in any phase, as the
    // plain connection's. The user paused reading (pause_reading: asked in
    // any phase, kept for when reading happens); a read is scheduled
    // (schedule_read: one at a time); above the high-water mark (flow
    // control of what is buffered, which rises and falls in any phase).
    bool reading_wanted_ = true;
    bool read_scheduled_ = false;
    bool above_high_ = false;
};

REACTOR_API std::string_view to_string(Connection::State state) noexcept;
REACTOR_API std::string_view to_string(Connection::Phase phase) noexcept;

}  // namespace reactor::tls
