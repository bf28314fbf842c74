// SPDX-License-Identifier: MIT
// https_fetch: fetches one page over HTTPS with a futures::Stream, verifying
// the server against a CA file, and prints its status line and body size.
//
// Step 18 of the series (examples/README.md). New here: a Stream over TLS
// (reactor::futures_tls, futures/tls/stream.hpp): open_connection with a
// tls::Context is done once the handshake is, then the stream reads and
// writes as the plaintext ones of steps 08 and 10. The server's certificate
// must name the URL's host and chain to --cafile; anything else fails the
// connection with OpenSSL's reason. The end of the body is the server's
// close_notify or its Content-Length: a connection cut short (no
// close_notify) is an error, never a short page. --timeout bounds each read.
//
//   $ https_hello --cert chain.pem --key key.pem --port 8443 &
//   $ https_fetch --cafile ca.pem https://localhost:8443/
#include <chrono>
#include <optional>
#include <regex>
#include <string>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/tls/stream.hpp>
#include <reactor/tls/connection.hpp>

#include "cli.hpp"
#include "https_url.hpp"
#include "program.hpp"

namespace tls = reactor::tls;
using examples::say;
using futures::Future;
using futures::Step;
using https_fetch::Url;

namespace {

// The conversation, a hand-written state machine: connect (with the
// handshake), send the request, read the head, then the body.
class Fetch {
public:
    enum class State { connecting, reading_head, reading_body, closing };
    Fetch(reactor::Scheduler& sched, Url url, tls::ContextPtr context, futures::StreamOptions options)
        : sched_(sched), url_(std::move(url)), context_(std::move(context)), options_(options) {}

    Step<void> resume() {
        switch (state_) {
        case State::connecting:
            if (!connect_.valid())
                return connect_ = futures::open_connection(sched_, url_.host, url_.port, context_, options_);
            stream_ = connect_.result();  // a failed handshake throws here, with OpenSSL's reason
            say(fmt::format("connected to {} ({}, ALPN '{}')", stream_.peer_address().to_string(),
                            stream_.tls()->protocol_version(), stream_.tls()->alpn_protocol()));
            stream_.write(fmt::format("GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: https_fetch\r\nConnection: close\r\n\r\n",
                                      url_.path, url_.host));
            state_ = State::reading_head;
            return chunk_ = stream_.read_until("\r\n\r\n");
        case State::reading_head: {
            const std::string head = chunk_.result();
            say(head.substr(0, head.find("\r\n")));  // the status line
            static const std::regex length(R"(\r\ncontent-length: *([0-9]+)\r\n)", std::regex::icase);
            std::smatch m;
            state_ = State::reading_body;
            has_length_ = std::regex_search(head, m, length);
            if (has_length_) return chunk_ = stream_.read_exactly(std::stoul(m[1]));
            return chunk_ = stream_.read();  // no length: the body ends at the server's close_notify
        }
        case State::reading_body: {
            const std::string bytes = chunk_.result();  // a truncation throws here
            body_ += bytes.size();
            if (!has_length_ && !bytes.empty()) return chunk_ = stream_.read();
            say(fmt::format("body: {} bytes", body_));
            stream_.close();  // close_notify
            state_ = State::closing;
            return closed_ = stream_.wait_closed();
        }
        case State::closing:
            closed_.result();
            return futures::finished;
        }
        return futures::finished;
    }

private:
    reactor::Scheduler& sched_;
    Url url_;
    tls::ContextPtr context_;
    futures::StreamOptions options_;
    State state_ = State::connecting;
    Future<futures::Stream> connect_;
    futures::Stream stream_;
    Future<std::string> chunk_;
    Future<void> closed_;
    std::size_t body_ = 0;
    bool has_length_ = false;
};

int run(int argc, char** argv) {
    examples::Cli cli("https_fetch", "Fetches a page over HTTPS, verified against a CA file; prints its status and size.");
    std::string url_text, cafile;
    double timeout = 30;
    cli.add_option("url", url_text, "https://HOST[:PORT]/PATH (HOST: localhost or an IP address)")->required();
    cli.add_option("--cafile", cafile, "the CA certificates to trust, PEM file")
        ->required()
        ->check(examples::existing_file);
    cli.add_option("--timeout", timeout, "seconds each read may wait (0: no limit)")->check(examples::seconds);
    cli.parse_or_exit(argc, argv);
    const std::optional<Url> url = https_fetch::parse_url(url_text);
    if (!url) cli.fail(fmt::format("not an https:// URL: '{}'", url_text));

    tls::ClientOptions client;
    client.trust.ca_file = cafile;  // a bad file: tls::Error naming it, reported by guarded_main
    client.alpn = {"http/1.1"};
    futures::StreamOptions options;
    options.connection.read_timeout = std::chrono::duration_cast<reactor::Duration>(std::chrono::duration<double>(timeout));

    reactor::Scheduler sched;
    examples::CtrlC ctrl_c(sched, cli);
    Future<void> fetch = futures::spawn(sched, Fetch(sched, *url, tls::Context::client(client), options));
    if (auto status = ctrl_c.run_until(fetch)) return *status;
    fetch.result();  // an error: "https_fetch: <what>" on stderr, status 1
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("https_fetch", run, argc, argv); }
