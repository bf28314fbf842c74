// SPDX-License-Identifier: MIT
// Throwaway certificates with OpenSSL's X509 API (see certificate_maker.hpp).
#include "reactor/tls/certificate_maker.hpp"

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

#include <fmt/format.h>

namespace reactor::tls {
namespace {

template <auto Free>
struct Deleter {
    template <class T>
    void operator()(T* p) const noexcept {
        Free(p);
    }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO_free>>;

[[noreturn]] void failed(const char* what) {
    throw Error(with_openssl_errors(fmt::format("reactor::tls: cannot make a certificate ({})", what)));
}

void check(int ok, const char* what) {
    if (ok != 1) failed(what);
}

Key new_key() {
    Key key(EVP_EC_gen("P-256"));
    if (!key) failed("EC key generation");
    return key;
}

bool is_ip(const std::string& name) {
    unsigned char addr[16];
    return ::inet_pton(AF_INET, name.c_str(), addr) == 1 || ::inet_pton(AF_INET6, name.c_str(), addr) == 1;
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (!ext) failed("extension");
    const int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    check(ok, "extension");
}

std::string pem_of(X509* cert) {
    Bio bio(BIO_new(BIO_s_mem()));
    if (!bio) failed("memory");
    check(PEM_write_bio_X509(bio.get(), cert), "PEM");
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(n));
}

std::string pem_of(EVP_PKEY* key) {
    Bio bio(BIO_new(BIO_s_mem()));
    if (!bio) failed("memory");
    check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr), "PEM");
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(n));
}

Cert read_cert(const std::string& pem) {
    Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    Cert cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
    if (!cert) failed("reading the CA");
    return cert;
}

Key read_key(const std::string& pem) {
    Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    Key key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
    if (!key) failed("reading the CA key");
    return key;
}

enum class Kind { ca, server, client };

// One certificate for `key`, signed by `issuer_key` (itself when no issuer:
// self-signed).
Cert make(Kind kind, const std::string& common_name, const std::vector<std::string>& names, EVP_PKEY* key,
          X509* issuer, EVP_PKEY* issuer_key, Validity validity) {
    Cert cert(X509_new());
    if (!cert) failed("memory");
    check(X509_set_version(cert.get(), 2), "version");  // v3
    unsigned char serial[16];
    check(RAND_bytes(serial, sizeof serial), "serial");
    serial[0] &= 0x7f;  // positive
    BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
    if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()))) {
        BN_free(bn);
        failed("serial");
    }
    BN_free(bn);
    if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), static_cast<long>(validity.from.count())) ||
        !X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(validity.until.count())))
        failed("validity");
    X509_NAME* name = X509_get_subject_name(cert.get());
    check(X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                     reinterpret_cast<const unsigned char*>("reactor test"), -1, -1, 0),
          "subject");
    check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                     reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0),
          "subject");
    check(X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name), "issuer");
    check(X509_set_pubkey(cert.get(), key), "public key");
    X509* signer = issuer ? issuer : cert.get();
    add_extension(cert.get(), signer, NID_subject_key_identifier, "hash");
    add_extension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
    switch (kind) {
    case Kind::ca:
        add_extension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
        add_extension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
        break;
    case Kind::server: {
        add_extension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
        add_extension(cert.get(), signer, NID_key_usage, "critical,digitalSignature");
        add_extension(cert.get(), signer, NID_ext_key_usage, "serverAuth");
        std::string alt;
        for (const auto& n : names) alt += fmt::format("{}{}:{}", alt.empty() ? "" : ",", is_ip(n) ? "IP" : "DNS", n);
        if (!alt.empty()) add_extension(cert.get(), signer, NID_subject_alt_name, alt);
        break;
    }
    case Kind::client:
        add_extension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
        add_extension(cert.get(), signer, NID_key_usage, "critical,digitalSignature");
        add_extension(cert.get(), signer, NID_ext_key_usage, "clientAuth");
        break;
    }
    if (X509_sign(cert.get(), issuer_key, EVP_sha256()) <= 0) failed("signature");
    return cert;
}

}  // namespace

CertificateAuthority::CertificateAuthority(std::string common_name) {
    Key key = new_key();
    Validity validity;
    validity.until = std::chrono::hours(24 * 365);
    Cert cert = make(Kind::ca, common_name, {}, key.get(), nullptr, key.get(), validity);
    ca_.certificate_pem = pem_of(cert.get());
    ca_.key_pem = pem_of(key.get());
}

IssuedCertificate CertificateAuthority::issue_server(const std::vector<std::string>& names, Validity validity) const {
    if (names.empty()) throw Error("reactor::tls: a server certificate needs at least one name");
    Cert ca = read_cert(ca_.certificate_pem);
    Key ca_key = read_key(ca_.key_pem);
    Key key = new_key();
    Cert cert = make(Kind::server, names.front(), names, key.get(), ca.get(), ca_key.get(), validity);
    return {pem_of(cert.get()) + ca_.certificate_pem, pem_of(key.get())};
}

IssuedCertificate CertificateAuthority::issue_client(const std::string& common_name, Validity validity) const {
    Cert ca = read_cert(ca_.certificate_pem);
    Key ca_key = read_key(ca_.key_pem);
    Key key = new_key();
    Cert cert = make(Kind::client, common_name, {}, key.get(), ca.get(), ca_key.get(), validity);
    return {pem_of(cert.get()) + ca_.certificate_pem, pem_of(key.get())};
}

IssuedCertificate self_signed(const std::vector<std::string>& names, Validity validity) {
    if (names.empty()) throw Error("reactor::tls: a certificate needs at least one name");
    Key key = new_key();
    Cert cert = make(Kind::server, names.front(), names, key.get(), nullptr, key.get(), validity);
    return {pem_of(cert.get()), pem_of(key.get())};
}

}  // namespace reactor::tls
