// SPDX-License-Identifier: MIT
// Errors of the TLS layer: OpenSSL's error queue, read out as text.
#include "reactor/tls/error.hpp"

#include <openssl/err.h>

#include "openssl_errors.hpp"

namespace reactor::tls {

std::string queued_openssl_errors() {
    std::string text;
    while (unsigned long code = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(code, buf, sizeof buf);
        if (!text.empty()) text += "; ";
        text += buf;
    }
    return text;
}

std::string with_openssl_errors(const std::string& what) {
    const std::string text = queued_openssl_errors();
    return text.empty() ? what : what + ": " + text;
}

}  // namespace reactor::tls
