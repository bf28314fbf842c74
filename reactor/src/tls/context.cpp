// SPDX-License-Identifier: MIT
// reactor::tls::Context: one SSL_CTX and what the library sets on it.
#include "reactor/tls/context.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>

#include <fmt/format.h>

namespace reactor::tls {
namespace {

// A session id context is required of a server that verifies clients and
// resumes sessions (else resumption fails): any fixed string naming the
// application will do.
constexpr unsigned char kSessionIdContext[] = "reactor::tls";

int to_openssl(Version v) { return v == Version::tls1_2 ? TLS1_2_VERSION : TLS1_3_VERSION; }

struct BioFree {
    void operator()(BIO* b) const noexcept { BIO_free(b); }
};
using UniqueBio = std::unique_ptr<BIO, BioFree>;

UniqueBio memory_bio(const std::string& text) {
    UniqueBio bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
    if (!bio) throw Error(with_openssl_errors("reactor::tls: out of memory"));
    return bio;
}

std::string lower(std::string s) {
    std::ranges::transform(s, s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// The index under which an SSL keeps its client cache key (a std::string,
// freed with the SSL).
int cache_key_index() {
    static const int index = SSL_get_ex_new_index(
        0, nullptr, nullptr, nullptr, [](void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
            delete static_cast<std::string*>(ptr);
        });
    return index;
}

// Chain (leaf first) and key, from files or PEM text; checked to match.
void use_identity(SSL_CTX* ctx, const Identity& id, std::string_view whose) {
    ERR_clear_error();
    if (!id.chain_file.empty()) {
        if (SSL_CTX_use_certificate_chain_file(ctx, id.chain_file.c_str()) != 1)
            throw Error(with_openssl_errors(
                fmt::format("reactor::tls: cannot use the {} certificate chain file '{}'", whose, id.chain_file)));
    } else {
        UniqueBio bio = memory_bio(id.chain_pem);
        X509* leaf = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
        if (!leaf || SSL_CTX_use_certificate(ctx, leaf) != 1) {
            X509_free(leaf);
            throw Error(with_openssl_errors(fmt::format("reactor::tls: cannot use the {} certificate PEM", whose)));
        }
        X509_free(leaf);
        while (X509* extra = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
            if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {  // takes `extra` on success
                X509_free(extra);
                throw Error(with_openssl_errors(fmt::format("reactor::tls: cannot use the {} chain PEM", whose)));
            }
        }
        ERR_clear_error();  // the loop above ends on "no start line": not an error
    }
    if (!id.key_file.empty()) {
        if (SSL_CTX_use_PrivateKey_file(ctx, id.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
            throw Error(with_openssl_errors(
                fmt::format("reactor::tls: cannot use the {} private key file '{}'", whose, id.key_file)));
    } else {
        if (id.key_pem.empty()) throw Error(fmt::format("reactor::tls: the {} certificate has no private key", whose));
        UniqueBio bio = memory_bio(id.key_pem);
        EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
        if (!key) throw Error(with_openssl_errors(fmt::format("reactor::tls: cannot read the {} private key PEM", whose)));
        const int ok = SSL_CTX_use_PrivateKey(ctx, key);  // checks it against the certificate
        EVP_PKEY_free(key);
        if (ok != 1)
            throw Error(with_openssl_errors(
                fmt::format("reactor::tls: the {} private key does not match its certificate", whose)));
    }
    if (SSL_CTX_check_private_key(ctx) != 1)
        throw Error(with_openssl_errors(fmt::format(
            "reactor::tls: the {} private key{} does not match its certificate{}", whose,
            id.key_file.empty() ? "" : " '" + id.key_file + "'", id.chain_file.empty() ? "" : " '" + id.chain_file + "'")));
}

void use_trust(SSL_CTX* ctx, const Trust& trust, std::string_view what) {
    ERR_clear_error();
    if (trust.is_system_default()) {
        if (SSL_CTX_set_default_verify_paths(ctx) != 1)
            throw Error(with_openssl_errors("reactor::tls: cannot load the system's trust store"));
        return;
    }
    if (!trust.ca_file.empty() && SSL_CTX_load_verify_locations(ctx, trust.ca_file.c_str(), nullptr) != 1)
        throw Error(with_openssl_errors(fmt::format("reactor::tls: cannot load the {} CA file '{}'", what, trust.ca_file)));
    if (!trust.ca_pem.empty()) {
        UniqueBio bio = memory_bio(trust.ca_pem);
        X509_STORE* store = SSL_CTX_get_cert_store(ctx);
        int added = 0;
        while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
            int ok = X509_STORE_add_cert(store, ca);
            X509_free(ca);
            if (ok != 1) throw Error(with_openssl_errors(fmt::format("reactor::tls: cannot add a {} CA", what)));
            ++added;
        }
        if (added == 0)
            throw Error(with_openssl_errors(fmt::format("reactor::tls: no certificate in the {} CA PEM", what)));
        ERR_clear_error();
    }
}

// ALPN names in wire format: each prefixed by its length (1..255).
std::vector<unsigned char> alpn_wire(const std::vector<std::string>& names) {
    std::vector<unsigned char> wire;
    for (const auto& name : names) {
        if (name.empty() || name.size() > 255)
            throw Error(fmt::format("reactor::tls: ALPN protocol name '{}' must be 1 to 255 bytes", name));
        wire.push_back(static_cast<unsigned char>(name.size()));
        wire.insert(wire.end(), name.begin(), name.end());
    }
    return wire;
}

SSL_CTX* new_ctx(const SSL_METHOD* method) {
    ERR_clear_error();
    SSL_CTX* ctx = SSL_CTX_new(method);
    if (!ctx) throw Error(with_openssl_errors("reactor::tls: SSL_CTX_new failed"));
    return ctx;
}

}  // namespace

Identity Identity::from_files(std::string chain_file, std::string key_file) {
    Identity id;
    id.chain_file = std::move(chain_file);
    id.key_file = std::move(key_file);
    return id;
}

Identity Identity::from_pem(std::string chain_pem, std::string key_pem) {
    Identity id;
    id.chain_pem = std::move(chain_pem);
    id.key_pem = std::move(key_pem);
    return id;
}

// The friend through which OpenSSL's C callbacks reach the context.
struct ContextCallbacks {
    static int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                           unsigned inlen, void* arg) {
        const auto* self = static_cast<const Context*>(arg);
        unsigned char* chosen = nullptr;
        unsigned char chosen_len = 0;
        // The server's list first: its preference wins.
        if (SSL_select_next_proto(&chosen, &chosen_len, self->alpn_wire_.data(),
                                  static_cast<unsigned>(self->alpn_wire_.size()), in, inlen) != OPENSSL_NPN_NEGOTIATED)
            return SSL_TLSEXT_ERR_NOACK;
        *out = chosen;
        *outlen = chosen_len;
        return SSL_TLSEXT_ERR_OK;
    }
};

void Context::configure_common(SSL_CTX* ctx, Version min, Version max) {
    if (to_openssl(min) > to_openssl(max))
        throw Error("reactor::tls: the minimum protocol version is above the maximum");
    if (SSL_CTX_set_min_proto_version(ctx, to_openssl(min)) != 1 ||
        SSL_CTX_set_max_proto_version(ctx, to_openssl(max)) != 1)
        throw Error(with_openssl_errors("reactor::tls: cannot set the protocol versions"));
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
}

Context::Context(Passkey, Role role, SSL_CTX* ctx) : role_(role), ctx_(ctx) {}

Context::~Context() {
    clear_session_cache();
    SSL_CTX_free(ctx_);
}

std::shared_ptr<Context> Context::server(const ServerOptions& options) {
    auto self = std::make_shared<Context>(Passkey{}, Role::server, new_ctx(TLS_server_method()));
    SSL_CTX* ctx = self->ctx_;
    configure_common(ctx, options.min_version, options.max_version);
    if (options.identity.empty()) throw Error("reactor::tls: a server context needs a certificate and key");
    use_identity(ctx, options.identity, "server");
    SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof kSessionIdContext - 1);
    if (!options.session_tickets) {
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(ctx, 0);
    }
    if (options.client_auth != ClientAuth::none) {
        if (options.client_trust.is_system_default())
            throw Error("reactor::tls: verifying client certificates needs client_trust (a CA file or PEM)");
        use_trust(ctx, options.client_trust, "client");
        if (!options.client_trust.ca_file.empty()) {
            // Tell clients which CAs we accept (their certificate picking uses it).
            if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.client_trust.ca_file.c_str()))
                SSL_CTX_set_client_CA_list(ctx, names);
        }
        int mode = SSL_VERIFY_PEER;
        if (options.client_auth == ClientAuth::require) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
        SSL_CTX_set_verify(ctx, mode, nullptr);
        self->verify_peer_ = true;
    }
    if (!options.alpn.empty()) {
        self->alpn_wire_ = alpn_wire(options.alpn);
        SSL_CTX_set_alpn_select_cb(ctx, &ContextCallbacks::select_alpn, self.get());
    }
    SSL_CTX_set_tlsext_servername_callback(ctx, &Context::on_server_name);
    SSL_CTX_set_tlsext_servername_arg(ctx, self.get());
    return self;
}

std::shared_ptr<Context> Context::client(const ClientOptions& options) {
    auto self = std::make_shared<Context>(Passkey{}, Role::client, new_ctx(TLS_client_method()));
    SSL_CTX* ctx = self->ctx_;
    configure_common(ctx, options.min_version, options.max_version);
    self->verify_peer_ = options.verify_peer;
    if (options.verify_peer) {
        use_trust(ctx, options.trust, "trusted");
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    }
    if (!options.identity.empty()) use_identity(ctx, options.identity, "client");
    if (!options.alpn.empty()) {
        auto wire = alpn_wire(options.alpn);
        if (SSL_CTX_set_alpn_protos(ctx, wire.data(), static_cast<unsigned>(wire.size())) != 0)  // 0 is success here
            throw Error(with_openssl_errors("reactor::tls: cannot set the ALPN protocols"));
    }
    if (options.session_cache) {
        self->session_cache_ = true;
        // Our own store, keyed by server: OpenSSL's internal cache is server-side only.
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(ctx, &Context::on_new_session);
        SSL_CTX_set_app_data(ctx, self.get());
    }
    return self;
}

void Context::add_server_name(std::string server_name, std::shared_ptr<Context> other) {
    if (role_ != Role::server || !other || other->role_ != Role::server)
        throw std::invalid_argument("reactor::tls: add_server_name takes two server contexts");
    by_server_name_[lower(std::move(server_name))] = std::move(other);
}

// SNI: switch the connection to the context registered for the name sent.
int Context::on_server_name(SSL* ssl, int*, void* arg) {
    const auto* self = static_cast<const Context*>(arg);
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (!name || self->by_server_name_.empty()) return SSL_TLSEXT_ERR_OK;
    auto it = self->by_server_name_.find(lower(name));
    if (it == self->by_server_name_.end()) return SSL_TLSEXT_ERR_OK;  // served with the default certificate
    if (!SSL_set_SSL_CTX(ssl, it->second->ctx_)) return SSL_TLSEXT_ERR_ALERT_FATAL;
    // SSL_set_SSL_CTX takes the certificate, not the client-verification
    // settings: the chosen context's apply.
    SSL_set_verify(ssl, SSL_CTX_get_verify_mode(it->second->ctx_), nullptr);
    return SSL_TLSEXT_ERR_OK;
}

// A client got a session (TLS 1.3: a ticket, after the handshake): keep the
// latest per server. Returning 1 keeps OpenSSL's reference for us; 0 leaves
// it to OpenSSL. Called from inside OpenSSL: nothing may throw out of here
// (a map that cannot grow keeps no session).
int Context::on_new_session(SSL* ssl, SSL_SESSION* session) {
    auto* self = static_cast<Context*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
    const auto* key = static_cast<const std::string*>(SSL_get_ex_data(ssl, cache_key_index()));
    if (!self || !key || key->empty()) return 0;
    SSL_SESSION* replaced = nullptr;
    try {
        std::lock_guard lock(self->sessions_mutex_);
        SSL_SESSION*& slot = self->sessions_[*key];
        replaced = std::exchange(slot, session);
    } catch (...) {
        return 0;
    }
    if (replaced) SSL_SESSION_free(replaced);  // outside the lock
    return 1;
}

std::size_t Context::cached_sessions() const noexcept {
    std::lock_guard lock(sessions_mutex_);
    return sessions_.size();
}

void Context::clear_session_cache() noexcept {
    std::map<std::string, SSL_SESSION*> taken;
    {
        std::lock_guard lock(sessions_mutex_);
        taken.swap(sessions_);
    }
    for (auto& [key, session] : taken) SSL_SESSION_free(session);
}

SSL* Context::new_ssl(const std::string& cache_key) const {
    const bool cached = role_ == Role::client && session_cache_ && !cache_key.empty();
    // Made first: if it throws, there is no SSL to free yet.
    auto key = cached ? std::make_unique<std::string>(cache_key) : nullptr;
    ERR_clear_error();
    SSL* ssl = SSL_new(ctx_);
    if (!ssl) throw Error(with_openssl_errors("reactor::tls: SSL_new failed"));
    if (cached) {
        if (SSL_set_ex_data(ssl, cache_key_index(), key.get()) == 1) key.release();  // freed with the SSL
        // Our own reference to the session, taken under the lock: another
        // loop may replace or take the cached one meanwhile.
        SSL_SESSION* session = nullptr;
        {
            std::lock_guard lock(sessions_mutex_);
            auto it = sessions_.find(cache_key);
            if (it != sessions_.end()) {
                session = it->second;
                // A TLS 1.3 ticket is offered once (RFC 8446, C.4): taken
                // out (its reference is now ours), the server sends fresh
                // ones on the resumed connection. A TLS 1.2 session stays:
                // resuming it gives no new one.
                if (SSL_SESSION_get_protocol_version(session) == TLS1_3_VERSION) {
                    sessions_.erase(it);
                } else {
                    SSL_SESSION_up_ref(session);
                }
            }
        }
        if (session) {
            SSL_set_session(ssl, session);  // takes a reference of its own
            SSL_SESSION_free(session);
        }
    }
    return ssl;
}

}  // namespace reactor::tls
