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
// for the same SSL (a high-water callback that writes would do that).
struct InEngine {
    explicit InEngine(Connection& c) : conn(c) { ++conn.in_engine_; }
    ~InEngine() { --conn.in_engine_; }
    InEngine(const InEngine&) = delete;
    InEngine& operator=(const InEngine&) = delete;
    Connection& conn;
};

}  // namespace reactor::tls
