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

// While the engine runs, user callbacks wait: OpenSSL must not be re-entered
// for the same SSL (a high-water callback that writes would do that). When
// the outermost call returns, the records it wrote and the BIO held go to the
// transport in one write; still inside, so a high-water callback that write
// runs waits too.
struct InEngine {
    explicit InEngine(Connection& c) : conn(c) { ++conn.in_engine_; }
    ~InEngine() {
        if (conn.in_engine_ == 1) conn.flush_engine_output();
        --conn.in_engine_;
    }
    InEngine(const InEngine&) = delete;
    InEngine& operator=(const InEngine&) = delete;
    Connection& conn;
};

}  // namespace reactor::tls
