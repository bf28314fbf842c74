// SPDX-License-Identifier: MIT
// reactor::tls::Connection, what it tells about itself: the negotiated
// protocol and ALPN, the peer's certificate and its verification, SNI, and
// session reuse. All read from the SSL; valid after the handshake.
#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <string>

#include "reactor/tls/connection.hpp"

namespace reactor::tls {

std::string_view to_string(Connection::State state) noexcept {
    switch (state) {
    case Connection::State::handshaking: return "handshaking";
    case Connection::State::open: return "open";
    case Connection::State::shutting_down: return "shutting down";
    case Connection::State::closed: return "closed";
    }
    return "unknown";
}

std::string_view to_string(Connection::Phase phase) noexcept {
    switch (phase) {
    case Connection::Phase::handshaking: return "handshaking";
    case Connection::Phase::handshaking_then_write_eof: return "handshaking_then_write_eof";
    case Connection::Phase::handshaking_then_close: return "handshaking_then_close";
    case Connection::Phase::handshaken_then_write_eof: return "handshaken_then_write_eof";
    case Connection::Phase::handshaken_then_close: return "handshaken_then_close";
    case Connection::Phase::open: return "open";
    case Connection::Phase::write_ended: return "write_ended";
    case Connection::Phase::read_ended: return "read_ended";
    case Connection::Phase::shutting_down_in_handshake: return "shutting_down_in_handshake";
    case Connection::Phase::shutting_down: return "shutting_down";
    case Connection::Phase::shutting_down_read_ended: return "shutting_down_read_ended";
    case Connection::Phase::closed_in_handshake: return "closed_in_handshake";
    case Connection::Phase::closed: return "closed";
    case Connection::Phase::closed_read_ended: return "closed_read_ended";
    }
    return "unknown";
}

bool Connection::is_server() const noexcept { return SSL_is_server(ssl_) == 1; }

std::string Connection::alpn_protocol() const {
    const unsigned char* name = nullptr;
    unsigned len = 0;
    SSL_get0_alpn_selected(ssl_, &name, &len);
    return name ? std::string(reinterpret_cast<const char*>(name), len) : std::string();
}

std::string Connection::protocol_version() const { return SSL_get_version(ssl_); }

std::string Connection::peer_subject() const {
    X509* cert = SSL_get1_peer_certificate(ssl_);
    if (!cert) return {};
    std::string text;
    if (BIO* bio = BIO_new(BIO_s_mem())) {
        if (X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
            char* data = nullptr;
            long n = BIO_get_mem_data(bio, &data);
            if (n > 0) text.assign(data, static_cast<std::size_t>(n));
        }
        BIO_free(bio);
    }
    X509_free(cert);
    return text;
}

long Connection::verify_result() const { return SSL_get_verify_result(ssl_); }

std::string Connection::verify_result_text() const { return X509_verify_cert_error_string(verify_result()); }

std::string Connection::server_name() const {
    if (!is_server()) return server_name_;
    const char* name = SSL_get_servername(ssl_, TLSEXT_NAMETYPE_host_name);
    return name ? name : "";
}

bool Connection::session_reused() const { return SSL_session_reused(ssl_) == 1; }

}  // namespace reactor::tls
