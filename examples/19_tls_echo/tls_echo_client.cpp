// SPDX-License-Identifier: MIT
// tls_echo_client: echo_client over TLS: many verified conversations with a
// TLS echo server at once.
//
// Step 19 of the series (examples/README.md). New here: the TLS client side
// of the callback layer: a client tls::Context that verifies the server's
// certificate (against --cafile, else the system's trust store) and its name
// (--server-name, sent as SNI too), and tls::connect(). Each conversation
// (tls_echo_conversation.hpp) starts once its handshake is done. --insecure
// skips verification, for a server with a self-signed certificate.
//
// Opens --connections connections at once; each sends --messages messages of
// random sizes (1..--size bytes), keeping --window of them in flight, checks
// that every byte comes back unchanged and in order, then closes. Prints one
// summary line; exits 0 if every connection verified everything, 1 otherwise
// (a failed handshake says why on stderr), 130 on Ctrl-C.
//
//   $ tls_echo_client --cafile ca.pem --connections 100 --messages 1000 --size 512
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <reactor/tls/context.hpp>

#include "cli.hpp"
#include "program.hpp"
#include "server_support.hpp"
#include "tls_echo_conversation.hpp"

namespace tls = reactor::tls;

namespace {

int run(int argc, char** argv) {
    examples::Cli cli("tls_echo_client", "TLS echo client: N connections x M verified messages, over TLS.");
    std::string host = "127.0.0.1", server_name = "localhost", cafile;
    std::uint16_t port = 7443;  // tls_echo_server's default
    reactor::Backend backend = examples::kServerBackend;  // the servers' own: many connections
    int connections = 10, messages = 100, size = 512, window = 1;
    std::uint32_t seed = 1;
    double max_seconds = 60;
    bool insecure = false;
    cli.add_option("--host", host, "server address (numeric IPv4 or IPv6)");
    cli.add_option("--port", port, "server port")->check(examples::range(1, 65535));
    cli.add_option("--server-name", server_name, "the name the server's certificate must carry (sent as SNI)");
    cli.add_option("--cafile", cafile, "trust the CA certificates of this PEM file (default: the system's)")
        ->check(examples::existing_file);
    cli.add_flag("--insecure", insecure, "do not verify the server's certificate (self-signed test servers only)");
    examples::add_backend_option(cli, backend);
    cli.add_option("--connections", connections, "concurrent connections")->check(examples::range(1, 100000));
    cli.add_option("--messages", messages, "messages per connection")->check(examples::range(1, 1 << 30));
    cli.add_option("--size", size, "largest message, in bytes (each is 1..size, random)")
        ->check(examples::range(1, 1 << 20));
    cli.add_option("--window", window, "messages in flight per connection (1: strict ping-pong)")
        ->check(examples::range(1, 1 << 20));
    cli.add_option("--seed", seed, "random seed");
    cli.add_option("--max-seconds", max_seconds, "give up (and fail) after this long")->check(examples::positive);
    cli.parse_or_exit(argc, argv);
    if (insecure && !cafile.empty()) cli.fail("--insecure and --cafile contradict each other");
    const reactor::Address server = examples::address_or_exit(cli, host, port);
    tls::ClientOptions client;
    client.trust.ca_file = cafile;
    client.verify_peer = !insecure;
    const auto context = tls::Context::client(client);  // a bad --cafile: tls::Error naming it
    reactor::Scheduler sched(examples::on(backend));

    std::mt19937 rng(seed);
    tls_echo_client::Plan plan{messages, static_cast<std::size_t>(size), window,
                               std::string(static_cast<std::size_t>(size) * 2 + 4096, '\0')};
    for (auto& c : plan.pool) c = static_cast<char>(rng());
    tls_echo_client::Totals totals;
    totals.expected = connections;
    std::vector<std::unique_ptr<tls_echo_client::TlsEchoConversation>> conversations;
    // Ctrl-C ends every conversation now; the summary still prints (cli.hpp).
    bool interrupted = false;
    examples::on_sigint(sched, [&] {
        interrupted = true;
        totals.deadline.cancel();
        for (auto& c : conversations) c->abort();
        sched.stop();  // also those still connecting
    });
    for (int i = 0; i < connections; ++i)
        conversations.push_back(std::make_unique<tls_echo_client::TlsEchoConversation>(
            sched, server, context, server_name, static_cast<std::uint32_t>(rng()), plan, totals));
    bool timed_out = false;
    totals.deadline = sched.call_later(std::chrono::duration<double>(max_seconds), [&] {
        timed_out = true;
        for (auto& c : conversations) c->abort();
    });
    auto start = std::chrono::steady_clock::now();
    sched.run();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    bool ok = totals.finished == connections && !timed_out && !interrupted;
    fmt::print("tls_echo_client: {} connections x {} messages to {} ({}, {}): {} ({} failed{}), {} bytes echoed in "
               "{:.3f} s, {:.0f} msg/s\n",
               connections, messages, server.to_string(), totals.protocol.empty() ? "no handshake" : totals.protocol,
               insecure ? "not verified" : fmt::format("verified as '{}'", server_name), ok ? "OK" : "FAILED",
               totals.failed, timed_out ? ", timed out" : interrupted ? ", interrupted" : "", totals.bytes, seconds,
               static_cast<double>(totals.finished) * static_cast<double>(messages) / seconds);
    if (interrupted) return examples::kInterrupted;
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("tls_echo_client", run, argc, argv); }
