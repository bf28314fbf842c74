// SPDX-License-Identifier: MIT
// reactor::tls::Connection: the TLS state machine over a plain Connection:
// starting, the engine, writing and reading. Between the layers (the
// protocol above, what the transport below tells) in connection_layers.cpp,
// the engine's BIO in connection_bio.cpp, the ending (close_notify,
// timeouts, the close reason) in connection_ending.cpp, what a connection
// tells about itself in connection_inspection.cpp.
#include "reactor/tls/connection.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "engine_bio.hpp"
#include "openssl_errors.hpp"

namespace reactor::tls {
namespace {

// An engine call's outcome: SSL_get_error's code (SSL_ERROR_NONE when it
// returned 1), and whether the engine is fine: done, or waiting for I/O.
struct Outcome {
    int error;
    bool fine() const noexcept {
        return error == SSL_ERROR_NONE || error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE;
    }
};
Outcome outcome_of(SSL* ssl, int r) noexcept { return {r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, r)}; }

// SSL_get_error needs the thread's error queue empty before each engine
// call. It nearly always is: ERR_peek_error only looks, where
// ERR_clear_error rewrites every slot of the queue, on every engine call.
void clear_openssl_errors() noexcept {
    if (ERR_peek_error() != 0) ERR_clear_error();
}

bool is_ip_literal(const std::string& host) {
    unsigned char addr[sizeof(in6_addr)];
    return ::inet_pton(AF_INET, host.c_str(), addr) == 1 || ::inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

// Decrypted data lands here (one TLS record holds at most 16 KiB of
// plaintext), shared by the thread's connections: the data callback's view
// is valid only during the call, and no engine call runs inside it.
constexpr std::size_t kRecordPlaintext = 16 * 1024;
char* plaintext_scratch() {
    thread_local std::array<char, kRecordPlaintext> scratch;
    return scratch.data();
}

}  // namespace

// ---------------------------------------------------------------- starting

ConnectionPtr Connection::start_server(const reactor::ConnectionPtr& transport, std::shared_ptr<Context> context,
                                       Options options) {
    return start(transport, std::move(context), true, {}, options);
}

ConnectionPtr Connection::start_client(const reactor::ConnectionPtr& transport, std::shared_ptr<Context> context,
                                       std::string server_name, Options options) {
    return start(transport, std::move(context), false, std::move(server_name), options);
}

ConnectionPtr Connection::start(const reactor::ConnectionPtr& transport, std::shared_ptr<Context> context, bool server,
                                std::string server_name, Options options) {
    if (!transport || !transport->is_open()) throw std::invalid_argument("reactor::tls: the transport is not open");
    if (!context) throw std::invalid_argument("reactor::tls: no context");
    if ((context->role() == Context::Role::server) != server)
        throw std::invalid_argument(server ? "reactor::tls: start_server needs a server context"
                                           : "reactor::tls: start_client needs a client context");
    if (!server && server_name.empty() && context->verifies_peer())
        throw std::invalid_argument(
            "reactor::tls: a verifying client needs the server name to check the certificate against");
    const std::string cache_key =
        server ? std::string() : fmt::format("{}:{}", server_name, transport->peer_address().port());
    SSL* ssl = context->new_ssl(cache_key);
    // Owns `ssl` from here: an exception below frees it, the transport untouched.
    ConnectionPtr self(new Connection(Passkey{}, transport, std::move(context), ssl, options));
    BIO* bio = new_engine_bio(*self);
    if (!bio) throw Error(with_openssl_errors("reactor::tls: cannot make the engine's BIO"));
    SSL_set_bio(ssl, bio, bio);  // one reference, for both directions
    clear_openssl_errors();
    if (server) {
        SSL_set_accept_state(ssl);
    } else {
        SSL_set_connect_state(ssl);
        const bool ip = is_ip_literal(server_name);
        // SNI carries host names only (RFC 6066, section 3).
        if (!server_name.empty() && !ip && SSL_set_tlsext_host_name(ssl, server_name.c_str()) != 1)
            throw Error(with_openssl_errors(fmt::format("reactor::tls: cannot send the server name '{}'", server_name)));
        if (self->context_->verifies_peer()) {
            const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), server_name.c_str())
                              : SSL_set1_host(ssl, server_name.c_str());
            if (ok != 1)
                throw Error(with_openssl_errors(
                    fmt::format("reactor::tls: cannot check the certificate against '{}'", server_name)));
        }
        self->server_name_ = std::move(server_name);
    }
    self->attach();
    self->arm_timer(options.handshake_timeout, EndKind::handshake_timeout);
    self->feed({});  // a client's hello goes out now
    return self;
}

Connection::Connection(Passkey, reactor::ConnectionPtr transport, std::shared_ptr<Context> context, SSL* ssl,
                       Options options)
    : transport_(std::move(transport)), context_(std::move(context)), ssl_(ssl), options_(options) {}

// No timer to cancel: one still pending holds us (on_closed cancelled it;
// the Scheduler may be gone by now: a Handle must not outlive it).
Connection::~Connection() { SSL_free(ssl_); }  // and its BIO

// We become the transport's protocol, and hold one count of ourselves until
// it tells us how it closed (or that the loop ended first: on_closed and
// on_abandoned give it back): we live exactly as long as the transport is
// open, plus its close, like the transport itself.
void Connection::attach() {
    transport_->set_protocol(this);
    add_ref();
    transport_->resume_reading();  // the handshake needs it, whatever the plain connection did
}

// ---------------------------------------------------------------- the engine

// The engine reads `fresh` (after what it left unread before) and goes as
// far as it can: the handshake, then decrypted data for the data callback.
// What it still has not read then (reading paused) is kept for later.
void Connection::feed(std::string_view fresh) {
    const bool kept = !unread_input_.empty();
    if (kept) {
        unread_input_.append(fresh);
        input_ = unread_input_;
    } else {
        input_ = fresh;
    }
    advance();
    if (kept) {
        unread_input_.erase(0, unread_input_.size() - input_.size());
        if (unread_input_.empty()) std::string().swap(unread_input_);  // an idle connection keeps no buffer
    } else if (!input_.empty()) {
        unread_input_.assign(input_);  // else it stays as it was: empty, no buffer
    }
    input_ = {};
}

void Connection::advance() {
    if (!handshake_done()) {
        // Ending before it finished: the engine is not run again (the
        // transport, closing, reads nothing more anyway).
        if (state() != State::handshaking) return;
        do_handshake();
        if (!handshake_done()) return;
    }
    read_plaintext();
}

std::string Connection::openssl_error_text() {
    std::string text = queued_openssl_errors();
    const long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK) {
        if (!text.empty()) text += ": ";
        text += X509_verify_cert_error_string(verify);
    }
    if (text.empty())
        text = input_eof_ ? "the peer closed the connection (no close_notify)" : "the TLS engine failed (no error queued)";
    return text;
}

void Connection::do_handshake() {
    clear_openssl_errors();
    int r;
    bool flushed = false;
    {
        InEngine engine(*this);
        r = SSL_do_handshake(ssl_);
        flushed = engine.flush();
    }
    const bool engine_fine = outcome_of(ssl_, r).fine();
    // The transport refused the flight: its write failed and closed it. With
    // the engine fine, that failure (a reset, ENOBUFS) is the end, as the
    // plain connection says it; refused records of an engine that failed
    // were its alert, to a peer gone: its failure is the end (below).
    if (!flushed && engine_fine) return handshake_transport_lost();
    if (r == 1) return on_handshake_done();
    if (engine_fine) return deliver_high_water();
    fail(EndKind::handshake_failed, openssl_error_text(), false);
}

// What was asked during the handshake waits, in a phase of its own, for the
// pending plaintext and the handshake callback.
void Connection::on_handshake_done() {
    switch (phase_) {
    case Phase::handshaking_then_write_eof: set_phase(Phase::handshaken_then_write_eof); break;
    case Phase::handshaking_then_close: set_phase(Phase::handshaken_then_close); break;
    default: set_phase(Phase::open); break;
    }
    timer_.cancel();
    deliver_high_water();
    if (!pending_plaintext_.empty()) {
        std::string plaintext = std::exchange(pending_plaintext_, {});
        if (!encrypt(plaintext)) return;
    }
    update_transport_reading();
    if (handshaking_) {  // its token went with the handshake: only the waiter may be left
        const EventFunction waiter = std::move(handshaking_->waiter);
        handshaking_.reset();
        if (waiter) waiter(*this);
    }
    on_handshake_.invoke(*this);
    if (state() != State::open) return;
    if (phase_ == Phase::handshaken_then_close) {
        do_close();
    } else if (phase_ == Phase::handshaken_then_write_eof) {
        do_write_eof();
    }
    check_low_water();
}

void Connection::read_plaintext() {
    char* buf = plaintext_scratch();
    // Records are read with both directions open, or after our close_notify
    // until the peer's (write_eof); not once the peer's arrived.
    while (reading_wanted_ && (phase_ == Phase::open || phase_ == Phase::write_ended)) {
        std::size_t n = 0;
        clear_openssl_errors();
        int r;
        bool flushed = false;
        {
            InEngine engine(*this);
            r = SSL_read_ex(ssl_, buf, kRecordPlaintext, &n);
            flushed = engine.flush();  // reading may write (a key update's answer)
        }
        deliver_high_water();
        // The transport refused what reading wrote (a key update's answer):
        // its write failed and closed it. The engine fine, that is the end
        // (its close reason), not a failure of ours.
        const Outcome outcome = outcome_of(ssl_, r);
        if (!flushed && outcome.fine()) transport_closed_by_engine_ = false;
        if (r == 1) {
            if (protocol_) protocol_->on_data(std::string_view(buf, n));
            if (!flushed) return;
            // All the ciphertext read and nothing left in the engine: another
            // call could only say "want read" (and its record buffer would be
            // allocated for it and released again).
            if (input_.empty() && !input_eof_ && !SSL_has_pending(ssl_)) return;
            continue;
        }
        if (outcome.fine()) return;
        if (outcome.error == SSL_ERROR_ZERO_RETURN) return on_peer_close_notify();
        // The transport's EOF where a record should be: the data may have
        // been cut short ("unexpected eof while reading").
        if (input_eof_ && input_.empty()) return fail(EndKind::truncated, openssl_error_text(), false);
        return fail(EndKind::tls_error, openssl_error_text(), false);
    }
}

// Plaintext for one engine call: four full records, one transport write
// (connection_bio.cpp).
constexpr std::size_t kEngineWriteChunk = 4 * kRecordPlaintext;

bool Connection::encrypt(std::string_view data) {
    while (!data.empty()) {
        std::size_t written = 0;
        clear_openssl_errors();
        int r;
        bool flushed = false;
        {
            InEngine engine(*this);
            r = SSL_write_ex(ssl_, data.data(), std::min(data.size(), kEngineWriteChunk), &written);
            flushed = engine.flush();  // its records go to the transport
        }
        if (!flushed) {
            // Its write failed and closed it: its close reason says why.
            transport_closed_by_engine_ = false;
            return false;
        }
        if (r != 1) {
            // A transport that closed refused the records: its close reason says why.
            if (transport_->state() != reactor::Connection::State::closed)
                fail(EndKind::tls_error, openssl_error_text(), true);
            return false;
        }
        data.remove_prefix(written);
    }
    deliver_high_water();
    return transport_->state() != reactor::Connection::State::closed;  // an abort() in the high-water callback
}

// ---------------------------------------------------------------- writing

bool Connection::write(std::string_view data) {
    if (!writable()) return false;
    check_thread("tls::Connection::write");
    if (data.empty()) return true;
    if (handshake_done()) return encrypt(data);
    pending_plaintext_.append(data);
    if (!above_high_ && buffered() > transport_->high_water()) {
        above_high_ = true;
        transport_->set_protocol(this);  // wants_drained() changed
        if (protocol_) protocol_->on_pause_writing();
        return transport_->state() != reactor::Connection::State::closed;
    }
    return true;
}

std::size_t Connection::buffered() const noexcept { return pending_plaintext_.size() + transport_->buffered(); }

void Connection::set_water_marks(std::size_t high, std::size_t low) {
    check_thread("tls::Connection::set_water_marks");
    transport_->set_water_marks(high, low);
}

// The transport crossed its high mark while the engine ran (or just now):
// told once the engine is out, so the callback may write.
void Connection::deliver_high_water() {
    if (!high_water_deferred_ || in_engine_ > 0) return;
    high_water_deferred_ = false;
    if (above_high_ || buffered() <= transport_->high_water()) return;
    above_high_ = true;
    transport_->set_protocol(this);  // wants_drained() changed
    if (protocol_) protocol_->on_pause_writing();
}

void Connection::check_low_water() {
    if (!above_high_ || buffered() > transport_->low_water()) return;
    above_high_ = false;
    transport_->set_protocol(this);  // wants_drained() changed
    if (protocol_) protocol_->on_resume_writing();
}

// ---------------------------------------------------------------- reading

// Reading the transport goes on during the handshake whatever the user asked.
void Connection::update_transport_reading() {
    if (!handshake_done() || reading_wanted_) {
        transport_->resume_reading();
    } else {
        transport_->pause_reading();
    }
}

void Connection::pause_reading() {
    check_thread("tls::Connection::pause_reading");
    reading_wanted_ = false;
    update_transport_reading();
}

void Connection::resume_reading() {
    check_thread("tls::Connection::resume_reading");
    if (reading_wanted_ || state() == State::closed) return;
    reading_wanted_ = true;
    update_transport_reading();
    schedule_read();
}

// Ciphertext the engine left unread while paused, a record it holds, or an
// EOF not yet acted on: read on a later iteration (never from inside resume_reading).
void Connection::schedule_read() {
    if (read_scheduled_ || !handshake_done()) return;
    if (unread_input_.empty() && SSL_pending(ssl_) == 0 && !input_eof_) return;
    read_scheduled_ = true;
    transport_->scheduler().call_soon([self = shared_from_this()] {
        self->read_scheduled_ = false;
        if (self->state() == State::open && self->reading_wanted_) self->feed({});
    });
}

// The transport stays open for writing: the engine decides what its EOF means.
bool Connection::on_eof() {
    if (state() == State::closed) return true;
    input_eof_ = true;
    if (at_eof()) {
        // TCP's end after close_notify. Done, unless the user still writes (EOF callback).
        if (phase_ != Phase::read_ended) transport_->close();
        return true;
    }
    // The engine decides: a handshake cut short, or a truncation (no
    // close_notify before the EOF). Paused: decided when reading resumes.
    feed({});
    return true;
}

}  // namespace reactor::tls
