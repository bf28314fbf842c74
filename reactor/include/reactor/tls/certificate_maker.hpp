// SPDX-License-Identifier: MIT
// reactor::tls::CertificateAuthority: throwaway certificates made in memory
// with OpenSSL's API, for tests, examples and development servers (Python's
// trustme, Go's generate_cert.go): a CA, server certificates for host names
// and IP addresses signed by it, client certificates for mTLS, and a
// self-signed certificate. Keys are ECDSA P-256 (made in microseconds), never
// written anywhere unless you write them. Not for production identities.
// Throws reactor::tls::Error if OpenSSL fails. Any thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/tls/context.hpp"

namespace reactor::tls {

struct REACTOR_API IssuedCertificate {
    std::string certificate_pem;  // the leaf, then the CA that signed it (a chain, leaf first)
    std::string key_pem;          // PKCS#8, unencrypted
    Identity identity() const { return Identity::from_pem(certificate_pem, key_pem); }
};

// When a certificate is valid, relative to now: from `from` to `until`.
struct Validity {
    std::chrono::seconds from = std::chrono::hours(-1);  // a little in the past: clocks differ
    std::chrono::seconds until = std::chrono::hours(24 * 30);
};

class REACTOR_API CertificateAuthority {
public:
    explicit CertificateAuthority(std::string common_name = "reactor test CA");

    // The CA certificate, PEM: what peers should trust.
    const std::string& certificate_pem() const noexcept { return ca_.certificate_pem; }
    Trust trust() const { return Trust{.ca_file = {}, .ca_pem = ca_.certificate_pem}; }

    // A server certificate: CN is the first name; every name is a
    // subjectAltName, as an IP address if it parses as one ("127.0.0.1",
    // "::1"), else as a DNS name ("localhost", "alt.test").
    IssuedCertificate issue_server(const std::vector<std::string>& names, Validity validity = {}) const;
    // A client certificate (extendedKeyUsage clientAuth) with this CN.
    IssuedCertificate issue_client(const std::string& common_name, Validity validity = {}) const;

private:
    IssuedCertificate ca_;
};

// A self-signed server certificate for `names` (see issue_server): for a
// development server whose clients skip verification (curl -k).
REACTOR_API IssuedCertificate self_signed(const std::vector<std::string>& names, Validity validity = {});

}  // namespace reactor::tls
