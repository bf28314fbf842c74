// The BIO between the engine and the transport (connection_bio.cpp).
#pragma once

#include <openssl/bio.h>

namespace reactor::tls {

class Connection;

// A BIO reading Connection::input_ and writing to its transport; null if
// OpenSSL is out of memory.
BIO* new_engine_bio(Connection& owner);

}  // namespace reactor::tls
