// http_hello: a minimal HTTP/1.1 server that answers every request with
// "Hello, world!", complete enough for curl, ab and wrk.
//
// Step 12 of the series (examples/README.md).
//
// The new idea: a protocol on top of the callback connection. The parser is
// the component beside this file (http_session.hpp: keep-alive, pipelining,
// limits); here is only what ties it to a connection: one session per
// connection, fed by the data callback; all the responses one read produced
// go out in one write; after an error or "Connection: close" the session
// lingers until the client closes. A pipelining client that never reads
// cannot grow our output: reading pauses above the high-water mark and
// resumes below the low one.
//
//   $ http_hello --backend epoll &   curl -v http://127.0.0.1:8080/
#include <string>
#include <unordered_map>

#include <fmt/format.h>
#include <reactor/net/listener.hpp>

#include "cli.hpp"
#include "http_session.hpp"
#include "server_support.hpp"

using reactor::Connection;

int main(int argc, char** argv) {
    examples::Cli cli("http_hello", "Minimal HTTP/1.1 server answering every request with \"Hello, world!\".");
    examples::ServerOptions options(8080);
    examples::add_server_options(cli, options);
    http::Limits limits{8192, 1 << 20};  // max_head, max_body
    cli.add_option("--max-head", limits.max_head, "largest request line + headers, in bytes (431 beyond)")
        ->check(CLI::Range(std::size_t{16}, std::size_t{1} << 30));
    cli.add_option("--max-body", limits.max_body, "largest request body, in bytes (413 beyond)")
        ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 40));
    cli.parse_or_exit(argc, argv);
    reactor::Scheduler sched(examples::on(options.backend));
    examples::ServerLifetime lifetime(sched, options);
    std::unordered_map<Connection*, http::HttpSession> sessions;  // valid until each close callback
    std::string out;  // responses of one read, reused

    auto listener = examples::listen_or_exit(sched, examples::listen_address(cli, options), [&](const reactor::ConnectionPtr& c) {
        lifetime.opened(c);
        sessions.emplace(c.get(), http::HttpSession(limits));
        c->set_data_callback([&](Connection& c, std::string_view data) {
            http::HttpSession& session = sessions.at(&c);
            if (session.lingering()) return;
            out.clear();
            bool keep = session.feed(data, out);
            c.write(out);
            if (!keep) session.linger(sched, c);  // the client's EOF then closes it
        });
        c->set_high_water_callback([](Connection& c) { c.pause_reading(); });
        c->set_low_water_callback([](Connection& c) { c.resume_reading(); });
        c->set_close_callback([&](Connection& c, const reactor::CloseReason&) {
            sessions.at(&c).closed();
            sessions.erase(&c);
            lifetime.closed(c);
        });
    });
    lifetime.set_listener(listener);
    examples::announce(*listener);

    sched.run();
    fmt::print("http_hello: {} connections\n", listener->accepted());
    return 0;
}
