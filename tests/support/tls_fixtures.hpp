// SPDX-License-Identifier: MIT
// Test support for the reactor::tls suites: the certificates every case
// uses, made once per test process in memory with the library's
// CertificateAuthority (no committed keys, no openssl CLI), the contexts
// built from them, and a TLS echo server.
//
//   pki().ca                 the CA the clients trust
//   pki().server             "localhost", 127.0.0.1 and ::1, signed by it
//   pki().alt                "alt.test" (SNI), signed by it
//   pki().client             CN "reactor test client" (mTLS), signed by it
//   pki().expired            "localhost", 127.0.0.1, valid until yesterday
//   pki().stranger           "localhost", 127.0.0.1, signed by a CA nobody trusts
// Loop thread only (the contexts are).
#pragma once

#include <stdlib.h>
#include <sys/socket.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/tls/certificate_maker.hpp>
#include <reactor/tls/connection.hpp>
#include <reactor/tls/context.hpp>
#include <reactor/tls/listen.hpp>

#include "support/tcp_echo.hpp"

namespace reactor::tls {
inline std::ostream& boost_test_print_type(std::ostream& os, Connection::State s) { return os << to_string(s); }
}  // namespace reactor::tls

namespace reactor_test {

struct Pki {
    reactor::tls::CertificateAuthority ca{"reactor test CA"};
    reactor::tls::IssuedCertificate server = ca.issue_server({"localhost", "127.0.0.1", "::1"});
    reactor::tls::IssuedCertificate alt = ca.issue_server({"alt.test"});
    reactor::tls::IssuedCertificate client = ca.issue_client("reactor test client");
    reactor::tls::IssuedCertificate expired =
        ca.issue_server({"localhost", "127.0.0.1"}, {.from = std::chrono::hours(-48), .until = std::chrono::hours(-24)});
    reactor::tls::CertificateAuthority stranger_ca{"a CA nobody trusts"};
    reactor::tls::IssuedCertificate stranger = stranger_ca.issue_server({"localhost", "127.0.0.1"});
};

inline const Pki& pki() {
    static const Pki made;
    return made;
}

inline reactor::tls::ServerOptions server_options(const reactor::tls::IssuedCertificate& cert = pki().server) {
    reactor::tls::ServerOptions o;
    o.identity = cert.identity();
    return o;
}

inline reactor::tls::ClientOptions client_options() {
    reactor::tls::ClientOptions o;
    o.trust = pki().ca.trust();
    return o;
}

inline reactor::tls::ContextPtr server_context(const reactor::tls::IssuedCertificate& cert = pki().server) {
    return reactor::tls::Context::server(server_options(cert));
}

inline reactor::tls::ContextPtr client_context() { return reactor::tls::Context::client(client_options()); }

// A TLS server and a client started over one AF_UNIX stream socket pair on
// `sched` (no TCP between them), their handshakes under way; false if the
// kernel refuses the pair.
inline bool start_over_socketpair(reactor::Scheduler& sched, reactor::tls::ConnectionPtr& server,
                                  reactor::tls::ConnectionPtr& client) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return false;
    server = reactor::tls::Connection::start_server(reactor::Connection::adopt(sched, fds[0]), server_context());
    client = reactor::tls::Connection::start_client(reactor::Connection::adopt(sched, fds[1]), client_context(),
                                                    "localhost");
    return true;
}

// A TLS echo server: every byte back; reading pauses while the echoes wait
// above the high mark and resumes at the low mark. Records each close
// reason, and what each connection told after its handshake.
struct TlsEchoServer {
    reactor::ListenerPtr listener;
    std::vector<reactor::End> closes;
    std::vector<reactor::tls::ConnectionPtr> handshaken;  // kept for inspection after the close
    std::size_t open = 0;

    TlsEchoServer(reactor::Scheduler& sched, reactor::tls::ContextPtr context, reactor::tls::Options tls = {}) {
        listener = reactor::tls::listen(
            sched, any_loopback(), std::move(context),
            [this](const reactor::tls::ConnectionPtr& c) {
                ++open;
                c->set_handshake_callback([this](reactor::tls::Connection& c) { handshaken.push_back(c.shared_from_this()); });
                c->set_data_callback([](reactor::tls::Connection& c, std::string_view d) {
                    c.write(d);
                    if (c.above_high_water()) c.pause_reading();
                });
                c->set_low_water_callback([](reactor::tls::Connection& c) { c.resume_reading(); });
                c->set_close_callback([this](reactor::tls::Connection&, const reactor::End& r) {
                    --open;
                    closes.push_back(r);
                });
            },
            {}, tls);
    }
    std::uint16_t port() const { return listener->address().port(); }
    reactor::Address address() const { return listener->address(); }
};

// A private temporary directory (mkdtemp), removed with everything in it:
// for the cases that need certificates as files (Identity::from_files, the
// openssl and curl programs).
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "reactor_tls_XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path = tmpl;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    // Writes `content` to `name` in the directory; returns the full path.
    std::string write(const std::string& name, const std::string& content) const {
        const auto file = path / name;
        std::ofstream(file, std::ios::binary) << content;
        return file.string();
    }
};

}  // namespace reactor_test
