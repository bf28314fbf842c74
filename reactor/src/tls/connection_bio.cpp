// SPDX-License-Identifier: MIT
// The BIO between the TLS engine and the transport (a custom BIO, as
// libevent's filter mode): the engine reads the ciphertext the transport
// delivered, and the records it writes are collected and handed to the
// transport's write() once the engine call has returned (InEngine::flush),
// as asyncio's SSLProtocol and Asio's ssl engine hand over what their memory
// BIO holds. The transport is never called from inside OpenSSL: its write()
// may throw (std::bad_alloc; std::logic_error in debug mode), and a C++
// exception must not unwind through OpenSSL's C frames (it would leave the
// engine's state half-changed, or reach std::terminate in a destructor).
// The BIO's write is noexcept: a collecting buffer that cannot grow fails
// the engine call (OpenSSL's "malloc failure"), which the connection reports.
//
// One buffer per thread collects (not per connection: an idle connection
// holds no BIO memory). It is empty between engine calls, and no engine call
// starts inside another connection's (user callbacks wait until it
// returns), so the thread's connections can share it. Everything one call
// wrote goes in one transport write: a TLS 1.3 server's two session tickets
// are one send(2), and Connection::encrypt gives the engine at most
// kEngineWriteChunk of plaintext per call, so bulk data is one send(2) per
// four full records and the buffer stays under 65 KiB. The cost: each record
// is copied once into the buffer (about 16 KiB of memcpy per full record);
// the transport's write then sends from it (or copies what the kernel does
// not take into its output buffer, as before).
#include <openssl/bio.h>
#include <openssl/err.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "reactor/tls/connection.hpp"
#include "engine_bio.hpp"

namespace reactor::tls {

struct EngineBio {
    static int write(BIO* bio, const char* data, int size) {
        BIO_clear_retry_flags(bio);
        return static_cast<Connection*>(BIO_get_data(bio))->engine_write(data, size);
    }
    static int read(BIO* bio, char* out, int size) {
        BIO_clear_retry_flags(bio);
        int n = static_cast<Connection*>(BIO_get_data(bio))->engine_read(out, size);
        if (n < 0) BIO_set_retry_read(bio);  // nothing yet: SSL_ERROR_WANT_READ
        return n;
    }
    static long ctrl(BIO* bio, int cmd, long, void*) {
        switch (cmd) {
        case BIO_CTRL_FLUSH: return 1;  // after each flight: the records go when the engine call returns
        // The transport's EOF, all input read: the engine then reports
        // "unexpected eof while reading" (a truncation), not a syscall error.
        case BIO_CTRL_EOF: return static_cast<Connection*>(BIO_get_data(bio))->engine_at_eof() ? 1 : 0;
        default: return 0;
        }
    }
    static int create(BIO* bio) {
        BIO_set_init(bio, 1);
        return 1;
    }
    static BIO_METHOD* method() {
        // Made once, kept for the process (OpenSSL holds it by pointer).
        static BIO_METHOD* const m = [] {
            BIO_METHOD* made = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "reactor::tls transport");
            BIO_meth_set_write(made, &EngineBio::write);
            BIO_meth_set_read(made, &EngineBio::read);
            BIO_meth_set_ctrl(made, &EngineBio::ctrl);
            BIO_meth_set_create(made, &EngineBio::create);
            return made;
        }();
        return m;
    }
};

BIO* new_engine_bio(Connection& owner) {
    BIO_METHOD* m = EngineBio::method();
    BIO* bio = m ? BIO_new(m) : nullptr;
    if (bio) BIO_set_data(bio, &owner);
    return bio;
}

// -1: nothing to read yet (retry); 0: the transport's EOF, once input is used up.
int Connection::engine_read(char* out, int size) {
    if (input_.empty()) return input_eof_ ? 0 : -1;
    const auto n = std::min(input_.size(), static_cast<std::size_t>(size));
    std::memcpy(out, input_.data(), n);
    input_.remove_prefix(n);
    return static_cast<int>(n);
}

namespace {

std::string& collected_records() {
    thread_local std::string collected;
    return collected;
}

}  // namespace

// Inside the engine (a C frame above us): nothing may throw out of here.
int Connection::engine_write(const char* data, int size) noexcept {
    // A closed transport refuses: the engine reports the failure, and the
    // transport's close callback says why it closed.
    if (transport_->state() == reactor::Connection::State::closed) return -1;
    try {
        collected_records().append(data, static_cast<std::size_t>(size));
    } catch (...) {
        ERR_raise(ERR_LIB_BIO, ERR_R_MALLOC_FAILURE);  // the engine call fails, and says why
        return -1;
    }
    return size;
}

bool InEngine::flush() {
    if (conn.in_engine_ != 1) return true;  // the outermost call hands everything over
    std::string& collected = collected_records();
    if (collected.empty()) return true;
    // Taken out while the transport writes, so nothing else can touch it;
    // put back (emptied, its capacity kept) however the write ends.
    struct Restore {
        std::string& slot;
        std::string taken;
        ~Restore() {
            taken.clear();
            if (slot.empty()) slot.swap(taken);  // else an engine call started meanwhile: its records stay
        }
    } records{collected, std::exchange(collected, std::string())};
    try {
        return conn.write_to_transport(records.taken);
    } catch (...) {
        // The engine counted these records as sent: without them the peer
        // cannot read what follows, so the connection cannot go on.
        conn.records_lost();
        throw;
    }
}

InEngine::~InEngine() {
    // Left by an exception, or without flush(): the records go nowhere.
    if (conn.in_engine_ == 1) collected_records().clear();
    --conn.in_engine_;
}

bool Connection::write_to_transport(std::string_view records) {
    const bool was_open = transport_->state() != reactor::Connection::State::closed;
    if (transport_->write(records)) return true;
    // This write closed it (EPIPE: an alert to a peer that left): the
    // failure the engine is reporting is the cause, not the transport's.
    if (was_open) transport_closed_by_engine_ = true;
    return false;
}

}  // namespace reactor::tls
