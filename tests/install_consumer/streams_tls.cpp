// SPDX-License-Identifier: MIT
// reactor::futures_tls from the installed headers (a package built with
// REACTOR_TLS): a StreamServer over TLS on 127.0.0.1 answers a line from a
// verifying open_connection.
#include <cstdio>
#include <string>

#include <futures/futures.hpp>
#include <futures/tls/stream.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/tls/certificate_maker.hpp>
#include <reactor/tls/context.hpp>

int main() {
    reactor::Scheduler sched;
    reactor::tls::CertificateAuthority ca;
    reactor::tls::ServerOptions server_options;
    server_options.identity = ca.issue_server({"localhost"}).identity();
    reactor::tls::ClientOptions client_options;
    client_options.trust = ca.trust();
    futures::StreamServer server = futures::start_server(
        sched, reactor::Address::parse("127.0.0.1", 0),
        [](futures::Stream s) {
            return s.read_until("\n").then([s](std::string line) mutable {
                s.write("echo: " + line);
                return s.drain();
            });
        },
        futures::StreamOptions{}, reactor::tls::Context::server(server_options));
    futures::Future<std::string> reply =
        futures::open_connection(sched, server.address(), reactor::tls::Context::client(client_options), "localhost")
            .then([](futures::Stream s) {
                s.write("hello\n");
                return s.read_until("\n").then([s](std::string line) mutable {
                    s.close();
                    return line;
                });
            });
    const std::string line = futures::run_until_complete(sched, reply);
    server.close();
    sched.run();
    std::printf("streams_tls: %s", line.c_str());
    return line == "echo: hello\n" ? 0 : 1;
}
