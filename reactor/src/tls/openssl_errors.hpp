// SPDX-License-Identifier: MIT
// Internal to reactor::tls: OpenSSL's error queue as text, for exceptions
// (with_openssl_errors) and close reasons (Connection) alike.
#pragma once

#include <string>

namespace reactor::tls {

// OpenSSL's queued errors, oldest first (the first is usually the cause, the
// rest its context), joined by "; "; empties the queue. "" if none.
std::string queued_openssl_errors();

}  // namespace reactor::tls
