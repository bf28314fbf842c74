// The installed reactor::tls, from an outside project: a certificate made in
// memory, a server context serving it and a client context trusting its CA.
#include <cstdio>

#include <reactor/tls/certificate_maker.hpp>
#include <reactor/tls/context.hpp>

int main() {
    reactor::tls::CertificateAuthority ca;
    reactor::tls::ServerOptions server;
    server.identity = ca.issue_server({"localhost"}).identity();
    reactor::tls::ClientOptions client;
    client.trust = ca.trust();
    auto server_context = reactor::tls::Context::server(server);
    auto client_context = reactor::tls::Context::client(client);
    std::printf("consumer_tls: %s\n", server_context && client_context->verifies_peer() ? "contexts made" : "failed");
    return 0;
}
