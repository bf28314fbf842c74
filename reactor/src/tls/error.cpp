// SPDX-License-Identifier: MIT
// Errors of the TLS layer: OpenSSL's error queue, read out as text.
#include "reactor/tls/error.hpp"

#include <openssl/err.h>

namespace reactor::tls {

std::string with_openssl_errors(const std::string& what) {
    std::string text;
    // Oldest first: the first error is usually the cause, the rest its context.
    while (unsigned long code = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(code, buf, sizeof buf);
        if (!text.empty()) text += "; ";
        text += buf;
    }
    return text.empty() ? what : what + ": " + text;
}

}  // namespace reactor::tls
