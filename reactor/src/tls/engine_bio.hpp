// SPDX-License-Identifier: MIT
// Internal to reactor::tls::Connection: the BIO between the engine and the
// transport (connection_bio.cpp), and the guard every engine call is made under.
#pragma once

#include <openssl/bio.h>

#include "reactor/tls/connection.hpp"

namespace reactor::tls {

// A BIO reading Connection::input_ and writing to its transport; null if
// OpenSSL is out of memory.
BIO* new_engine_bio(Connection& owner);

// Every engine call (SSL_do_handshake, SSL_read_ex, SSL_write_ex,
// SSL_shutdown) is made under one of these, and then flush() is called:
//   { InEngine engine(*this); r = SSL_...(ssl_); flushed = engine.flush(); }
// While the engine runs, user callbacks wait: OpenSSL must not be re-entered
// for the same SSL (a high-water callback that writes would do that). flush()
// hands the records the call wrote to the transport in one write, after the
// C frames have returned and still "inside", so a high-water callback that
// write runs waits too. It returns false if the transport refused them
// (closed, or closed by this write: EPIPE); an exception from the transport
// aborts the connection (the records are lost) and propagates. Leaving
// without flush() (an exception) drops the records.
struct InEngine {
    explicit InEngine(Connection& c) noexcept : conn(c) { ++conn.in_engine_; }
    ~InEngine();
    bool flush();
    InEngine(const InEngine&) = delete;
    InEngine& operator=(const InEngine&) = delete;
    Connection& conn;
};

}  // namespace reactor::tls
