// SPDX-License-Identifier: MIT
// reactor::tls from the installed headers (a package built with REACTOR_TLS):
// a certificate made in memory, a TLS echo server on 127.0.0.1 and a client
// that verifies it.
#include <cstdio>
#include <string>
#include <string_view>
#include <system_error>

#include <reactor/scheduler.hpp>
#include <reactor/tls/certificate_maker.hpp>
#include <reactor/tls/connection.hpp>
#include <reactor/tls/context.hpp>
#include <reactor/tls/listen.hpp>

int main() {
    reactor::Scheduler sched;
    reactor::tls::CertificateAuthority ca;
    reactor::tls::ServerOptions server;
    server.identity = ca.issue_server({"localhost"}).identity();
    auto listener = reactor::tls::listen(sched, reactor::Address::parse("127.0.0.1", 0),
                                         reactor::tls::Context::server(server), [](const reactor::tls::ConnectionPtr& c) {
                                             c->set_data_callback([](reactor::tls::Connection& c, std::string_view data) {
                                                 c.write(data);
                                             });
                                         });
    reactor::tls::ClientOptions client;
    client.trust = ca.trust();
    std::string echoed, subject;
    reactor::tls::connect(sched, listener->address(), reactor::tls::Context::client(client), "localhost",
                          [&](reactor::tls::ConnectionPtr c, std::error_code error) {
                              if (error) return listener->close();
                              c->set_handshake_callback([&](reactor::tls::Connection& c) {
                                  subject = c.peer_subject();
                                  c.write("hello");
                              });
                              c->set_data_callback([&](reactor::tls::Connection& c, std::string_view data) {
                                  echoed += data;
                                  if (echoed.size() == 5) c.close();
                              });
                              c->set_close_callback([&](reactor::tls::Connection&, const reactor::End&) {
                                  listener->close();
                              });
                          });
    sched.run();
    std::printf("tls: echoed \"%s\" from %s\n", echoed.c_str(), subject.c_str());
    return echoed == "hello" ? 0 : 1;
}
