// echo_client: a load generator for echo servers, built on async connect.
//
// Step 09 of the series (examples/README.md). New here: the client side:
// connect() and many verified conversations at once.
//
// Opens --connections connections at once; each sends --messages messages of
// random sizes (1..--size bytes), keeping --window of them in flight, checks
// that every byte comes back unchanged and in order, then closes. Prints one
// summary line; exits 0 if every connection verified everything, 1 otherwise.
//
//   $ echo_client --port 7000 --connections 100 --messages 1000 --size 512
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <reactor/net/connector.hpp>

#include "cli.hpp"
#include "server_support.hpp"

using reactor::Connection;

namespace {

struct Totals {
    long expected = 0;
    int finished = 0;  // verified every message and closed
    int failed = 0;
    std::uint64_t bytes = 0;
    reactor::Handle deadline;  // cancelled when the last conversation ends, so run() returns

    void ended() {
        if (finished + failed == expected) deadline.cancel();
    }
};

// One connection's conversation. Owned by main's vector; the connection's
// callbacks point back here, and are dropped when it closes.
class Conversation {
public:
    Conversation(reactor::Scheduler& sched, const reactor::Address& server, std::uint32_t seed, int messages,
                 std::size_t max_size, int window, const std::string& pool, Totals& totals)
        : rng_(seed), messages_(messages), max_size_(max_size), window_(window), pool_(pool), totals_(totals) {
        reactor::connect(sched, server, [this](reactor::ConnectionPtr c, std::error_code ec) {
            if (ec) return fail(fmt::format("connect: {}", ec.message()));
            conn_ = std::move(c);
            conn_->set_data_callback([this](Connection& c, std::string_view d) { on_data(c, d); });
            conn_->set_close_callback([this](Connection&, const reactor::CloseReason& r) { on_close(r); });
            for (int i = 0; i < window_; ++i) send_one();
        });
    }

    void abort() {
        if (conn_) conn_->abort();
    }

private:
    void send_one() {
        if (sent_ == messages_) return;
        std::size_t size = 1 + rng_() % max_size_;
        std::string_view msg(pool_.data() + rng_() % (pool_.size() - size), size);
        expected_.append(msg);
        ends_.push_back(sent_bytes_ += size);
        ++sent_;
        conn_->write(msg);
    }

    void on_data(Connection& c, std::string_view d) {
        if (d.size() > expected_.size() || std::memcmp(d.data(), expected_.data(), d.size()) != 0) {
            error_ = fmt::format("byte {} differs from what was sent", echoed_);
            return c.abort();
        }
        expected_.consume(d.size());
        echoed_ += d.size();
        totals_.bytes += d.size();
        for (; !ends_.empty() && ends_.front() <= echoed_; ends_.pop_front()) {
            ++completed_;
            send_one();
        }
        if (completed_ == messages_) c.close();
    }

    void on_close(const reactor::CloseReason& r) {
        conn_.reset();
        if (error_.empty() && completed_ != messages_)
            error_ = fmt::format("closed ({}) after {} of {} messages", r.to_string(), completed_, messages_);
        if (!error_.empty()) return fail(error_);
        ++totals_.finished;
        totals_.ended();
    }

    void fail(const std::string& why) {
        if (totals_.failed++ < 5) fmt::print(stderr, "echo_client: {}\n", why);  // the first few are enough
        totals_.ended();
    }

    std::mt19937 rng_;
    int messages_;
    std::size_t max_size_;
    int window_;
    const std::string& pool_;
    Totals& totals_;
    reactor::ConnectionPtr conn_;
    reactor::ByteBuffer expected_;  // sent, not yet echoed
    std::deque<std::size_t> ends_;  // stream offset where each message in flight ends
    std::size_t sent_bytes_ = 0;
    std::size_t echoed_ = 0;
    int sent_ = 0;
    int completed_ = 0;
    std::string error_;
};

}  // namespace

int main(int argc, char** argv) {
    examples::Cli cli("echo_client", "Load generator for echo servers: N connections x M verified messages.");
    std::string host = "127.0.0.1";
    std::uint16_t port = 7000;  // echo_server's default
    reactor::Backend backend = reactor::Backend::select;
    int connections = 10, messages = 100, size = 512, window = 1;
    std::uint32_t seed = 1;
    double max_seconds = 60;
    cli.add_option("--host", host, "server address (numeric IPv4 or IPv6)");
    cli.add_option("--port", port, "server port")->check(CLI::Range(1, 65535));
    examples::add_backend_option(cli, backend);
    cli.add_option("--connections", connections, "concurrent connections")->check(CLI::Range(1, 100000));
    cli.add_option("--messages", messages, "messages per connection")->check(CLI::Range(1, 1 << 30));
    cli.add_option("--size", size, "largest message, in bytes (each is 1..size, random)")
        ->check(CLI::Range(1, 1 << 20));
    cli.add_option("--window", window, "messages in flight per connection (1: strict ping-pong)")
        ->check(CLI::Range(1, 1 << 20));
    cli.add_option("--seed", seed, "random seed");
    cli.add_option("--max-seconds", max_seconds, "give up (and fail) after this long")->check(examples::positive);
    cli.parse_or_exit(argc, argv);
    reactor::Scheduler sched(examples::on(backend));
    examples::ServerOptions target(port);
    target.host = host;
    auto server = examples::listen_address(cli, target);  // --host and --port as an address

    // Messages are slices of one random pool, so generating them costs nothing.
    std::string pool(static_cast<std::size_t>(size) * 2 + 4096, '\0');
    std::mt19937 rng(seed);
    for (auto& c : pool) c = static_cast<char>(rng());

    Totals totals;
    totals.expected = connections;
    std::vector<std::unique_ptr<Conversation>> conversations;
    for (int i = 0; i < connections; ++i)
        conversations.push_back(std::make_unique<Conversation>(
            sched, server, static_cast<std::uint32_t>(rng()), messages, static_cast<std::size_t>(size), window, pool, totals));
    bool timed_out = false;
    totals.deadline = sched.call_later(std::chrono::duration<double>(max_seconds), [&] {
        timed_out = true;
        for (auto& c : conversations) c->abort();
    });
    auto start = std::chrono::steady_clock::now();
    sched.run();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    bool ok = totals.finished == connections && !timed_out;
    fmt::print("echo_client: {} connections x {} messages to {}: {} ({} failed{}), {} bytes echoed in {:.3f} s, {:.0f} msg/s\n",
               connections, messages, server.to_string(), ok ? "OK" : "FAILED", totals.failed,
               timed_out ? ", timed out" : "", totals.bytes, seconds,
               static_cast<double>(totals.finished) * static_cast<double>(messages) / seconds);
    return ok ? 0 : 1;
}
