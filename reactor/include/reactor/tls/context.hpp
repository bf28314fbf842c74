// SPDX-License-Identifier: MIT
// reactor::tls::Context: the settings one side of many TLS connections
// shares (an SSL_CTX): its certificate and key, whom it trusts, the protocol
// versions, ALPN, SNI and session resumption.
//
// Made once, shared by every connection that uses it (held by shared_ptr:
// each connection keeps its context alive). Safe defaults, as asyncio's
// ssl.create_default_context() and Asio's ssl::context users expect:
//  - a client verifies the server's certificate chain AND its host name (the
//    server name given to connect(), SSL_set1_host; an IP literal is checked
//    against the certificate's IP addresses), against the system's trust
//    store unless a CA file or PEM is given;
//  - TLS 1.2 at least; renegotiation refused (SSL_OP_NO_RENEGOTIATION);
//    idle buffers released (SSL_MODE_RELEASE_BUFFERS);
//  - a server issues session tickets; a client keeps the last session per
//    "server name:port" and offers it on the next connection there
//    (Connection::session_reused() tells whether the server took it).
// Every error at creation throws reactor::tls::Error naming the file or
// setting, with OpenSSL's text.
//
// Threads: one context may serve the connections of every loop of a group
// at once, client or server (tls::listen or tls::connect over each loop of
// a LoopGroup). Making connections only reads our settings; what changes is
// locked: OpenSSL locks its own (a server's session cache and ticket keys),
// and the client session cache here has a mutex of its own (held for one
// map lookup as a connection starts and one insertion as a session
// arrives; never while OpenSSL or a callback runs). Setting a context up is
// not locked: add_server_name and native_handle()'s settings before the
// context serves (before the group starts), from one thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/tls/error.hpp"

using SSL_CTX = struct ssl_ctx_st;
using SSL = struct ssl_st;
using SSL_SESSION = struct ssl_session_st;

namespace reactor::tls {

enum class Version { tls1_2, tls1_3 };

// A certificate chain (leaf first, then intermediates) and its private key,
// as PEM text or as files. Files are read when the context is made.
struct REACTOR_API Identity {
    std::string chain_pem;  // or:
    std::string chain_file;
    std::string key_pem;  // or:
    std::string key_file;
    bool empty() const noexcept { return chain_pem.empty() && chain_file.empty(); }
    static Identity from_files(std::string chain_file, std::string key_file);
    static Identity from_pem(std::string chain_pem, std::string key_pem);
};

// Whom to trust when verifying the peer: the CA certificates of a PEM file or
// text; neither given means the system's store (SSL_CTX_set_default_verify_paths).
struct REACTOR_API Trust {
    std::string ca_file;
    std::string ca_pem;
    bool is_system_default() const noexcept { return ca_file.empty() && ca_pem.empty(); }
};

// What a server asks of its clients' certificates (mTLS).
enum class ClientAuth {
    none,     // none asked for
    request,  // asked for; a client without one is served, one that fails verification is refused
    require,  // a client without a valid certificate fails the handshake
};

struct ServerOptions {
    Identity identity;                      // required
    ClientAuth client_auth = ClientAuth::none;
    Trust client_trust;                     // verifies client certificates (not the system store: give a CA)
    Version min_version = Version::tls1_2;
    Version max_version = Version::tls1_3;
    // ALPN, in the server's order of preference: the first of these the client
    // also offers is chosen. No overlap: the handshake goes on without ALPN
    // (as nginx does), and Connection::alpn_protocol() is empty.
    std::vector<std::string> alpn;
    bool session_tickets = true;  // resumption (stateless tickets; TLS 1.2 and 1.3)
};

struct ClientOptions {
    Trust trust;                 // default: the system's store
    bool verify_peer = true;     // false: no chain or host-name check (tests against self-signed servers only)
    Identity identity;           // optional: a client certificate for servers that ask (mTLS)
    Version min_version = Version::tls1_2;
    Version max_version = Version::tls1_3;
    std::vector<std::string> alpn;  // offered, in order of preference
    bool session_cache = true;      // remember sessions per "server name:port" and offer them again
};

class REACTOR_API Context {
    struct Passkey {};

public:
    enum class Role { server, client };

    // Throw reactor::tls::Error (see the header comment).
    static std::shared_ptr<Context> server(const ServerOptions& options);
    static std::shared_ptr<Context> client(const ClientOptions& options = {});

    Context(Passkey, Role role, SSL_CTX* ctx);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    Role role() const noexcept { return role_; }
    bool verifies_peer() const noexcept { return verify_peer_; }

    // SNI, server side: a client naming `server_name` (case-insensitive,
    // exact) is served with `other`'s certificate instead of this one's; other
    // names and clients that send none get this context's. Must be a server
    // context. Not locked: before the context serves more than one loop (on
    // one loop, takes effect for handshakes that start later).
    void add_server_name(std::string server_name, std::shared_ptr<Context> other);

    // Client session cache (ClientOptions::session_cache): how many sessions
    // are kept, and forgetting them all. Any thread.
    std::size_t cached_sessions() const noexcept;
    void clear_session_cache() noexcept;

    // The OpenSSL object, for settings this class does not cover (cipher
    // lists, a key log callback...). Owned by the context.
    SSL_CTX* native_handle() const noexcept { return ctx_; }

    // ---- for reactor::tls::Connection ----
    // A new SSL for one connection; `cache_key` ("name:port") picks and later
    // stores the client's session. Throws Error. Any thread.
    SSL* new_ssl(const std::string& cache_key) const;

private:
    static void configure_common(SSL_CTX* ctx, Version min, Version max);
    static int on_server_name(SSL* ssl, int* alert, void* arg);
    static int on_new_session(SSL* ssl, SSL_SESSION* session);
    friend struct ContextCallbacks;

    Role role_;
    SSL_CTX* ctx_;
    bool verify_peer_ = false;
    bool session_cache_ = false;
    std::vector<unsigned char> alpn_wire_;  // server: its preference list, ALPN wire format
    std::map<std::string, std::shared_ptr<Context>> by_server_name_;  // lower-case name -> context
    // Client: one session per "server name:port", the latest the server gave,
    // under sessions_mutex_ (the connections of several loops share it).
    // Mutable: taking a session out and storing new ones is not a settings change.
    mutable std::mutex sessions_mutex_;
    mutable std::map<std::string, SSL_SESSION*> sessions_;
};

using ContextPtr = std::shared_ptr<Context>;

}  // namespace reactor::tls
