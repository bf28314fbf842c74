// SPDX-License-Identifier: MIT
// The BIO between the TLS engine and the transport (a custom BIO, as
// libevent's filter mode): the engine reads the ciphertext the transport
// delivered, and the records it writes go to the transport's write(). The
// transport's output buffer is the only write buffer: its water marks see
// every byte, and an idle connection holds no BIO memory.
//
// The short records one engine call writes are held (in one buffer per
// thread) and handed over together when the call returns (InEngine): a TLS
// 1.3 server writes its two session tickets as two records, and each would
// otherwise be a send(2) of its own, where Asio's memory BIO sends them as
// one. A record of full size goes at once (after what is held), so bulk data
// is not copied twice. The buffer is empty between engine calls, and no
// engine call starts inside another connection's (user callbacks wait until
// it returns), so the thread's connections can share it.
#include <openssl/bio.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

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
        case BIO_CTRL_FLUSH: return 1;  // after each flight: held records go when the engine call returns
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

// A full record's plaintext: records this long or longer are not held.
constexpr std::size_t kHeldLimit = 16 * 1024;

std::string& held_records() {
    thread_local std::string held;
    return held;
}

}  // namespace

int Connection::engine_write(const char* data, int size) {
    // A closed transport refuses: the engine reports the failure, and the
    // transport's close callback says why it closed.
    if (transport_->state() == reactor::Connection::State::closed) return -1;
    const std::string_view record(data, static_cast<std::size_t>(size));
    std::string& held = held_records();
    if (in_engine_ > 0 && held.size() + record.size() <= kHeldLimit) {
        held.append(record);
        return size;
    }
    if (!flush_engine_output()) return -1;
    return write_to_transport(record) ? size : -1;
}

bool Connection::flush_engine_output() {
    std::string& held = held_records();
    if (held.empty()) return true;
    const bool ok = write_to_transport(held);
    held.clear();
    return ok;
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
