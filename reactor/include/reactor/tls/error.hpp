// SPDX-License-Identifier: MIT
// reactor::tls::Error: what the TLS layer throws when a context cannot be
// made (a missing or unreadable certificate or key file, a key that does not
// match its certificate, a bad PEM, an ALPN name too long...). The message
// names the file or setting and ends with OpenSSL's own text
// (ERR_error_string_n of every error OpenSSL queued), so a log line says
// which file and why. A connection never throws it: a TLS failure on the wire
// is a close reason (a reactor::End: reactor/net/end.hpp), not an exception.
#pragma once

#include <reactor/export.hpp>

#include <stdexcept>
#include <string>

namespace reactor::tls {

class REACTOR_API Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// "what: <OpenSSL's errors, oldest first>", draining this thread's OpenSSL
// error queue; just `what` if the queue was empty.
REACTOR_API std::string with_openssl_errors(const std::string& what);

}  // namespace reactor::tls
