// SPDX-License-Identifier: MIT
// The example servers, unmodified, in a simulated world (issue 48's
// "Unmodified servers"): each server's own logic (the function or class its
// main() runs on a Scheduler) runs on a simulated host, 100 clients each on
// a host of its own talk to it over a network drawn from the seed, faults
// and all (resets after a prefix, refused connects, partitions, clogged
// links), and the server's invariant is checked for many seeds by a Swarm,
// whose one-line report names any failing seed and how to replay it
// (REACTOR_SIM_SEED=<seed> test_sim_examples --run_test=<case> runs that
// seed alone and prints its whole trace; REACTOR_SIM_SEEDS=<count> runs
// that many seeds instead of CI's 30):
//
//   echo_server (09, callbacks) and echo_server_streams (10, streams and a
//   state-machine task): every byte comes back, in order, or the connection
//   ended with a reason: a reset the world injected.
//   chat_server (11, one loop: a LoopRoom): every line reaches every live
//   member, in each sender's order; a member whose connection the world
//   reset is excepted from then on (what it got is still in order), and a
//   sender reset gets a prefix of its lines through.
//   http_hello (12, plain HTTP: http::Sessions on a listener): every request
//   (GET, HEAD, POST with a body, with Expect: 100-continue; pipelined in
//   batches; the last says Connection: close) is answered "Hello, world!",
//   in order, then the server closes; or the world reset the connection.
//
// The chat and HTTP tests also run each seed twice and compare the traces:
// the room once kept its members in an unordered_map keyed by connection
// address, so the order its broadcast wrote to them, and every draw of the
// network after, was the heap's, and no failing seed replayed; http_hello's
// Date header once read real time (it reads the host's wall_clock() now,
// and the client checks that it is the world's calendar).
//
// Virtual time only: a seed's run depends on the seed alone.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/stream.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/testing/sim/swarm.hpp>
#include <reactor/testing/sim/world.hpp>

#include "../examples/09_echo_server/echo.hpp"
#include "../examples/10_echo_server_streams/echo_session.hpp"
#include "../examples/11_chat_server/loop_room.hpp"
#include "support/chat_lines.hpp"
#include "../examples/12_http_hello/http_sessions.hpp"

using namespace std::chrono_literals;
using reactor::CloseKind;
using reactor::CloseReason;
using reactor::Connection;
using reactor::ConnectionPtr;
using reactor::Duration;
namespace sim = reactor::testing::sim;

namespace {

constexpr std::uint16_t kEchoPort = 7000;  // the examples' own defaults
constexpr std::uint16_t kChatPort = 7001;
constexpr std::uint16_t kHttpPort = 8080;
constexpr int kClients = 100;

// What the examples' main() gives a connection by default: --idle-timeout
// 300 s as idle and write deadlines (examples::connection_options).
reactor::ConnectionOptions example_deadlines() {
    reactor::ConnectionOptions options;
    options.idle_timeout = 300s;
    options.write_timeout = 300s;
    return options;
}

// What the clients of a swarm met, summed over its seeds: the faults must
// have been met for the invariants to mean anything.
struct Met {
    std::uint64_t bytes = 0;  // echoed, or chat lines delivered
    int resets = 0, refusals = 0;
};

// The world's faults may end a connection early, and only they: a reset
// needs resets drawn (or a crash), a refused connect refusals drawn. A
// kernel resource failing (Params::resource_fault_percent) may end it too,
// counted per host (Host::resource_faults): the client's own send or recv
// (EndKind::error with ENOBUFS or ENOMEM) or connect (ENOBUFS), or the
// server's send, which aborts that connection (a reset here), or its recv,
// which closes it (an early eof here: the library closes, not aborts,
// after a recv error). `host` is the client's host.
bool resource_error(std::error_code ec) {
    return ec == std::errc::no_buffer_space || ec == std::errc::not_enough_memory;
}
void check_early_end(sim::World& world, const CloseReason& why, const std::string& who, const std::string& host) {
    if (why.kind == CloseKind::reset && world.params().reset_percent > 0) return;
    if (why.kind == CloseKind::error && resource_error(why.error) && world.host(host).resource_faults() > 0) return;
    if ((why.kind == CloseKind::reset || why.kind == CloseKind::eof) && world.host("server").resource_faults() > 0)
        return;
    throw std::runtime_error(fmt::format("{} ended early: {} (reset_percent {}, resource_fault_percent {})", who,
                                         why.to_string(), world.params().reset_percent,
                                         world.params().resource_fault_percent));
}
void check_connect_error(sim::World& world, std::error_code ec, const std::string& who) {
    if (ec == std::errc::connection_refused && world.params().refuse_percent > 0) return;
    if (ec == std::errc::no_buffer_space && world.host(who).resource_faults() > 0) return;
    throw std::runtime_error(fmt::format("{}: connect failed: {} (refuse_percent {}, resource_fault_percent {})", who,
                                         ec.message(), world.params().refuse_percent,
                                         world.params().resource_fault_percent));
}

// Every host's loop ends while the body's state is still alive (close
// callbacks that end with it may reach that state), newest host first.
void crash_all(sim::World& world, const std::vector<sim::Host*>& hosts) {
    for (auto it = hosts.rbegin(); it != hosts.rend(); ++it)
        if ((*it)->up()) world.crash(**it);
}

// ---- echo -------------------------------------------------------------

// One echo client: `messages` messages of random sizes, at most two in
// flight, each sent after a random pause once the one before the last has
// come back; every byte must come back in order. Closes when all have.
struct EchoClient {
    std::string name;
    std::mt19937_64 rng;
    int messages = 0;
    std::size_t max_size = 0;
    Duration max_pause{};
    ConnectionPtr conn;
    std::string sent;  // everything sent so far
    std::size_t echoed = 0;
    std::vector<std::size_t> ends;  // where each message sent ends in `sent`
    std::size_t completed = 0;
    bool ended = false;
    bool reset = false, refused = false;  // the world's faults, met
    std::string failure;

    void fail(std::string why) {
        if (failure.empty()) failure = std::move(why);
        ended = true;
    }
    void send_one() {
        if (ends.size() == static_cast<std::size_t>(messages) || !conn) return;
        const std::size_t size = 1 + rng() % max_size;
        std::string message(size, '\0');
        for (char& ch : message) ch = static_cast<char>('a' + rng() % 26);
        sent += message;
        ends.push_back(sent.size());
        conn->write(message);
    }
    void start(sim::World& world, sim::Host& host, const std::function<void()>& on_end) {
        reactor::connect(host.scheduler(), "server", kEchoPort, [this, &world, &host, on_end](ConnectionPtr c, std::error_code ec) {
            if (!c) {
                refused = ec == std::errc::connection_refused;
                try {
                    check_connect_error(world, ec, name);
                } catch (const std::exception& e) {
                    failure = e.what();
                }
                ended = true;
                return on_end();
            }
            conn = c;
            c->set_data_callback([this, &host](Connection& c, std::string_view d) {
                if (echoed + d.size() > sent.size() || sent.compare(echoed, d.size(), d) != 0) {
                    fail(fmt::format("{}: bytes {}..{} are not what was sent", name, echoed, echoed + d.size()));
                    return c.abort();
                }
                echoed += d.size();
                while (completed < ends.size() && ends[completed] <= echoed) {
                    ++completed;
                    const Duration pause{static_cast<Duration::rep>(rng() % (max_pause.count() + 1))};
                    host.scheduler().call_later(pause, [this] { send_one(); });
                }
                if (completed == static_cast<std::size_t>(messages)) c.close();
            });
            c->set_close_callback([this, &world, on_end](Connection&, const CloseReason& why) {
                conn.reset();
                if (!ended && completed != static_cast<std::size_t>(messages)) {
                    reset = why.kind == CloseKind::reset;
                    try {
                        check_early_end(world, why, fmt::format("{} ({} of {} bytes echoed)", name, echoed, sent.size()),
                                        name);
                    } catch (const std::exception& e) {
                        failure = e.what();
                    }
                }
                ended = true;
                on_end();
            });
            send_one();
            send_one();
        });
    }
};

enum class EchoServer { callbacks, streams };

struct EchoRun {
    int messages = 5;
    std::size_t max_size = 2048;
    Duration max_pause = 100ms;
    Duration limit = 10min;  // virtual: every client must have ended by then
};

// The server on host "server", kClients clients on hosts of their own; runs
// until every client has ended, then checks each, and adds to `met`.
void echo_world(sim::World& world, EchoServer kind, const EchoRun& run, Met& met) {
    std::vector<sim::Host*> hosts;
    sim::Host& server = world.host("server");
    hosts.push_back(&server);

    // echo_server's run(), one loop: its listener, its echo, its options.
    std::uint64_t echoed = 0;
    reactor::ListenerPtr listener;
    // echo_server_streams' run(), one loop: start_server spawning an
    // EchoSession per client, with its options.
    examples::EchoCounts counts;
    futures::StreamServer stream_server;
    if (kind == EchoServer::callbacks) {
        reactor::Listener::Options options;
        options.connection = examples::echo_connection_options(example_deadlines());
        listener = reactor::Listener::listen(
            server.scheduler(), server.address(kEchoPort),
            [&echoed](const ConnectionPtr& c) { examples::echo(c, echoed); }, options);
    } else {
        futures::StreamOptions options;
        options.connection = example_deadlines();
        reactor::Scheduler& sched = server.scheduler();
        stream_server = futures::start_server(
            sched, server.address(kEchoPort),
            [&sched, &counts](futures::Stream stream) {
                return futures::spawn(sched, examples::EchoSession(std::move(stream), counts));
            },
            options);
    }

    std::vector<std::unique_ptr<EchoClient>> clients;
    int ended = 0;
    for (int i = 0; i < kClients; ++i) {
        auto& c = clients.emplace_back(std::make_unique<EchoClient>());
        c->name = fmt::format("client-{}", i);
        c->rng.seed(world.seed() * 1'000'003 + static_cast<std::uint64_t>(i));
        c->messages = run.messages;
        c->max_size = run.max_size;
        c->max_pause = run.max_pause;
        sim::Host& host = world.host(c->name);
        hosts.push_back(&host);
        c->start(world, host, [&ended] { ++ended; });
    }
    const bool all_ended = world.run_until([&] { return ended == kClients; }, run.limit);
    std::string failure;
    for (const auto& c : clients) {
        if (!c->failure.empty()) {
            failure = c->failure;
            break;
        }
        if (!c->ended) {
            failure = fmt::format("{} never ended: {} of {} bytes echoed, {} of {} messages", c->name, c->echoed,
                                  c->sent.size(), c->completed, c->messages);
            break;
        }
    }
    if (failure.empty() && !all_ended) failure = "not every client ended";
    // A session failing on the server's side: only a kernel resource of the
    // server can make it (its send or recv said ENOBUFS or ENOMEM).
    if (kind == EchoServer::streams && counts.failures > server.resource_faults())
        failure = fmt::format("echo_server_streams counted {} failures", counts.failures);
    crash_all(world, hosts);
    if (!failure.empty()) throw std::runtime_error(failure);
    met.bytes += kind == EchoServer::callbacks ? echoed : counts.echoed;
    for (const auto& c : clients) {
        met.resets += c->reset;
        met.refusals += c->refused;
    }
}

// ---- chat -------------------------------------------------------------

// One chat member: joins (its "* you are #N" line), then, once every
// member has, says `lines` lines "c<index> <k>", each after a random pause;
// it checks, line by line, that each other member's lines reach it in
// order with none missing before the last one seen, and never its own.
struct ChatClient {
    std::string name;
    std::size_t index = 0;
    std::mt19937_64 rng;
    ConnectionPtr conn;
    bool joined = false;
    bool ended = false;
    bool reset = false, refused = false;
    int said = 0;
    std::vector<int> heard;  // per sender: how many of its lines arrived
    std::string partial;     // the start of a line not yet ended
    std::string failure;

    bool live() const { return joined && !ended; }
    void fail(std::string why) {
        if (failure.empty()) failure = std::move(why);
    }
    void on_line(std::string_view line) {
        if (std::string why = reactor_test::check_chat_line(line, name, index, heard, joined); !why.empty())
            fail(std::move(why));
    }
    void start(sim::World& world, sim::Host& host, std::size_t members) {
        heard.assign(members, 0);
        reactor::connect(host.scheduler(), "server", kChatPort, [this, &world](ConnectionPtr c, std::error_code ec) {
            if (!c) {
                ended = true;
                refused = ec == std::errc::connection_refused;
                try {
                    check_connect_error(world, ec, name);
                } catch (const std::exception& e) {
                    fail(e.what());
                }
                return;
            }
            conn = c;
            c->set_data_callback([this](Connection&, std::string_view d) {
                partial += d;
                std::size_t from = 0;
                for (std::size_t nl; (nl = partial.find('\n', from)) != std::string::npos; from = nl + 1)
                    on_line(std::string_view(partial).substr(from, nl - from));
                partial.erase(0, from);
            });
            c->set_close_callback([this, &world](Connection&, const CloseReason& why) {
                conn.reset();
                ended = true;
                reset = why.kind == CloseKind::reset;
                try {
                    check_early_end(world, why, name, name);
                } catch (const std::exception& e) {
                    fail(e.what());
                }
            });
        });
    }
    void speak(sim::Host& host, int lines, Duration max_pause) {
        if (said == lines || !conn) return;
        const Duration pause{static_cast<Duration::rep>(rng() % (max_pause.count() + 1))};
        host.scheduler().call_later(pause, [this, &host, lines, max_pause] {
            if (!conn) return;
            conn->write(fmt::format("c{} {}\n", index, said++));
            speak(host, lines, max_pause);
        });
    }
};

constexpr Duration kCheckEvery = 50ms;

struct ChatRun {
    int lines = 5;
    Duration max_pause = 200ms;
    Duration limit = 10min;
};

// chat_server's serve() on one loop: a LoopRoom of one, linked to itself,
// joined by each connection the listener accepts, with the example's
// limits (--max-line 4096, --max-backlog 256 KiB) and deadlines. kClients
// members join; once all have (or have ended), each says its lines; the
// run goes on until every live member has heard every line of every live
// member that has said all of its own.
void chat_world(sim::World& world, const ChatRun& run, Met& met) {
    std::vector<sim::Host*> hosts;
    sim::Host& server = world.host("server");
    hosts.push_back(&server);
    examples::LoopRoom room(server.scheduler(), 0, 1, {.max_line = 4096, .max_backlog = 256 * 1024});
    room.link({&room});
    reactor::Listener::Options options;
    options.connection = example_deadlines();
    auto listener = reactor::Listener::listen(
        server.scheduler(), server.address(kChatPort), [&room](const ConnectionPtr& c) { room.join(c); }, options);

    std::vector<std::unique_ptr<ChatClient>> clients;
    std::vector<sim::Host*> client_hosts;
    for (int i = 0; i < kClients; ++i) {
        auto& c = clients.emplace_back(std::make_unique<ChatClient>());
        c->name = fmt::format("client-{}", i);
        c->index = static_cast<std::size_t>(i);
        c->rng.seed(world.seed() * 1'000'003 + static_cast<std::uint64_t>(i));
        sim::Host& host = world.host(c->name);
        hosts.push_back(&host);
        client_hosts.push_back(&host);
        c->start(world, host, kClients);
    }
    auto first_failure = [&]() -> std::string {
        for (const auto& c : clients)
            if (!c->failure.empty()) return c->failure;
        return {};
    };
    // Everyone has joined, or ended (refused, reset) before it could.
    const bool all_joined = world.run_until(
        [&] {
            for (const auto& c : clients)
                if (!c->joined && !c->ended) return false;
            return true;
        },
        run.limit);
    std::string failure = first_failure();
    if (failure.empty() && !all_joined) failure = "not every client joined or ended";
    if (failure.empty()) {
        for (std::size_t i = 0; i < clients.size(); ++i)
            if (clients[i]->live()) clients[i]->speak(*client_hosts[i], run.lines, run.max_pause);
        // Who has still to hear from whom: a live member, from a live one
        // that has said all its lines.
        auto missing = [&]() -> std::string {
            for (const auto& m : clients) {
                if (!m->live()) continue;
                for (const auto& s : clients)
                    if (s != m && s->live() && s->said == run.lines && m->heard[s->index] != run.lines)
                        return fmt::format("{} heard {} of {} lines of {}", m->name, m->heard[s->index], run.lines,
                                           s->name);
            }
            for (const auto& s : clients)
                if (s->live() && s->said != run.lines) return fmt::format("{} said {} of {} lines", s->name, s->said, run.lines);
            return {};
        };
        // Checked every 50 virtual ms rather than after every step: the
        // check walks every pair of members.
        const reactor::TimePoint give_up = world.now() + run.limit;
        while (first_failure().empty() && !missing().empty() && world.now() < give_up)
            world.run_for(kCheckEvery);
        failure = first_failure();
        if (failure.empty()) failure = missing();
    }
    if (failure.empty()) {
        for (const auto& c : clients) {
            for (int n : c->heard) met.bytes += static_cast<std::uint64_t>(n);
            met.resets += c->reset;
            met.refusals += c->refused;
        }
    }
    crash_all(world, hosts);
    if (!failure.empty()) throw std::runtime_error(failure);
}

// ---- http -------------------------------------------------------------

// One HTTP client: `requests` requests of random kinds, sent in batches of
// one to three (pipelined), each batch after a random pause once the one
// before is answered; the last asks the server to close. Each response must
// be the greeting (a 100 Continue before it when asked), in order.
struct HttpClient {
    std::string name;
    std::mt19937_64 rng;
    int requests = 0;
    Duration max_pause{};
    ConnectionPtr conn;
    int sent = 0, answered = 0;
    std::vector<bool> head_method;  // per request sent: a HEAD (no body in its answer)
    std::string in;                 // what arrived, not yet a whole response
    bool ended = false, clean = false;
    bool reset = false, refused = false;
    std::string failure;

    void fail(std::string why) {
        if (failure.empty()) failure = std::move(why);
    }
    std::string request() {
        const bool last = sent + 1 == requests;
        const char* connection = last ? "Connection: close\r\n" : "";
        std::string body;
        std::string r;
        switch (rng() % 4) {
        case 0:
            r = fmt::format("GET /{} HTTP/1.1\r\nHost: server\r\n{}\r\n", sent, connection);
            break;
        case 1:
            r = fmt::format("HEAD / HTTP/1.1\r\nHost: server\r\n{}\r\n", connection);
            break;
        default:
            body.assign(1 + rng() % 3000, 'b');
            r = fmt::format("POST /form HTTP/1.1\r\nHost: server\r\nContent-Length: {}\r\n{}{}\r\n{}",
                            body.size(), rng() % 2 ? "Expect: 100-continue\r\n" : "", connection, body);
        }
        head_method.push_back(r.starts_with("HEAD"));
        ++sent;
        return r;
    }
    void send_batch() {
        if (!conn || sent == requests) return;
        const int batch = std::min<int>(1 + static_cast<int>(rng() % 3), requests - sent);
        std::string out;
        for (int i = 0; i < batch; ++i) out += request();
        conn->write(out);
    }
    // Takes the whole responses at the front of `in`.
    void parse() {
        for (;;) {
            const std::size_t end = in.find("\r\n\r\n");
            if (end == std::string::npos) return;
            const std::string_view head(in.data(), end + 4);
            int status = 0;
            if (std::sscanf(in.c_str(), "HTTP/1.1 %d", &status) != 1)
                return fail(fmt::format("{}: not a response: \"{}\"", name, head.substr(0, 40)));
            if (status == 100) {
                in.erase(0, head.size());
                continue;
            }
            // The world's calendar (World::kEpoch plus less than a virtual
            // day), not the real one: the bytes are the same on every run.
            if (head.find("\r\nDate: Sat, 01 Jan 2000 ") == std::string_view::npos)
                return fail(fmt::format("{}: a Date not of the world's calendar: \"{}\"", name, head));
            const std::size_t length_at = head.find("Content-Length: ");
            std::size_t length = 0;
            if (length_at == std::string_view::npos ||
                std::sscanf(in.c_str() + length_at + 16, "%zu", &length) != 1)
                return fail(fmt::format("{}: a response without Content-Length", name));
            if (answered >= sent) return fail(fmt::format("{}: a response to no request", name));
            const std::size_t body = head_method[static_cast<std::size_t>(answered)] ? 0 : length;
            if (in.size() < head.size() + body) return;
            if (status != 200 || (body > 0 && std::string_view(in).substr(head.size(), body) != http::kBody))
                return fail(fmt::format("{}: request {} answered {}", name, answered, status));
            in.erase(0, head.size() + body);
            ++answered;
        }
    }
    void start(sim::World& world, sim::Host& host) {
        reactor::connect(host.scheduler(), "server", kHttpPort, [this, &world, &host](ConnectionPtr c, std::error_code ec) {
            if (!c) {
                ended = true;
                refused = ec == std::errc::connection_refused;
                try {
                    check_connect_error(world, ec, name);
                } catch (const std::exception& e) {
                    fail(e.what());
                }
                return;
            }
            conn = c;
            c->set_data_callback([this, &host](Connection& c, std::string_view d) {
                in += d;
                const int before = answered;
                parse();
                if (!failure.empty()) return c.abort();
                if (answered > before && answered == sent) {
                    const Duration pause{static_cast<Duration::rep>(rng() % (max_pause.count() + 1))};
                    host.scheduler().call_later(pause, [this] { send_batch(); });
                }
            });
            c->set_close_callback([this, &world](Connection&, const CloseReason& why) {
                conn.reset();
                ended = true;
                clean = answered == requests && why.kind == CloseKind::eof && in.empty();
                if (clean || !failure.empty()) return;
                reset = why.kind == CloseKind::reset;
                try {
                    check_early_end(world, why, fmt::format("{} ({} of {} requests answered)", name, answered, requests),
                                    name);
                } catch (const std::exception& e) {
                    fail(e.what());
                }
            });
            send_batch();
        });
    }
};

struct HttpRun {
    int requests = 6;
    Duration max_pause = 100ms;
    Duration limit = 10min;
};

// http_hello's run() on one loop, plain HTTP: http::Sessions started by
// each accept, with the example's default limits (--max-head 8192,
// --max-body 64 MiB), timeouts (header 60 s, idle 75 s, body 60 s) and its
// 16 KiB reads. Runs until every client has ended.
void http_world(sim::World& world, const HttpRun& run, Met& met) {
    std::vector<sim::Host*> hosts;
    sim::Host& server = world.host("server");
    hosts.push_back(&server);
    const http::Limits limits{8192, std::size_t{64} << 20};
    const http::Timeouts timeouts{60s, 75s, 60s};
    // Ended before the hosts are (crash_all below): the sessions' timers
    // belong to the server's loop, as a crashed program dies with its host.
    std::optional<http::Sessions<reactor::Connection>> sessions{http::Sessions<reactor::Connection>{limits, timeouts, {}, {}}};
    reactor::Listener::Options options;
    options.connection.read_size = 16 * 1024;
    auto listener = reactor::Listener::listen(
        server.scheduler(), server.address(kHttpPort), [&sessions](const ConnectionPtr& c) { sessions->start(*c); },
        options);

    std::vector<std::unique_ptr<HttpClient>> clients;
    for (int i = 0; i < kClients; ++i) {
        auto& c = clients.emplace_back(std::make_unique<HttpClient>());
        c->name = fmt::format("client-{}", i);
        c->rng.seed(world.seed() * 1'000'003 + static_cast<std::uint64_t>(i));
        c->requests = run.requests;
        c->max_pause = run.max_pause;
        sim::Host& host = world.host(c->name);
        hosts.push_back(&host);
        c->start(world, host);
    }
    const bool all_ended = world.run_until(
        [&] {
            for (const auto& c : clients)
                if (!c->ended) return false;
            return true;
        },
        run.limit);
    std::string failure;
    for (const auto& c : clients) {
        if (!c->failure.empty()) {
            failure = c->failure;
            break;
        }
        if (!c->ended) {
            failure = fmt::format("{} never ended: {} of {} requests answered, {} sent", c->name, c->answered,
                                  c->requests, c->sent);
            break;
        }
    }
    if (failure.empty() && !all_ended) failure = "not every client ended";
    if (failure.empty()) {
        for (const auto& c : clients) {
            met.bytes += static_cast<std::uint64_t>(c->answered);
            met.resets += c->reset;
            met.refusals += c->refused;
        }
    }
    sessions.reset();
    crash_all(world, hosts);
    if (!failure.empty()) throw std::runtime_error(failure);
}

// CI's seeds per server: fewer in a sanitizer or Debug build, which runs a
// world an order of magnitude slower (the ASan stage checks memory, not
// coverage of the draws).
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
constexpr std::size_t kSeeds = 8;
#else
constexpr std::size_t kSeeds = 30;
#endif

// A swarm over `count` seeds from `first`, with faults drawn; every failure
// is one line in the test's message.
void swarm_holds(const std::string& test, std::uint64_t first, std::size_t count,
                 const std::function<void(sim::World&, Met&)>& body, bool twice = false) {
    Met met;
    std::ostringstream out;
    sim::SwarmOptions options;
    options.out = &out;
    options.faults = true;
    options.replay = "test_sim_examples --run_test=" + test;
    // Each seed twice, traces compared: on by default for the servers whose
    // bytes could depend on something outside the world (chat's order,
    // http_hello's Date header, which reads the host's wall_clock()).
    options.check_determinism = twice || std::getenv("REACTOR_SIM_TWICE") != nullptr;
    // More seeds than CI's, for a long run by hand: REACTOR_SIM_SEEDS=<count>,
    // from REACTOR_SIM_FIRST=<seed> (a long run split in parts).
    if (const char* more = std::getenv("REACTOR_SIM_SEEDS")) count = std::stoul(more);
    if (const char* from = std::getenv("REACTOR_SIM_FIRST")) first = std::stoull(from);
    sim::Swarm swarm([&](sim::World& w) { body(w, met); }, options);
    const sim::SwarmResult result = swarm.run(first, count);
    BOOST_TEST(result.failures.empty(), out.str());
    BOOST_TEST_MESSAGE(test << ": " << result.runs << " seeds, " << result.failures.size() << " failed; "
                            << met.bytes << " bytes or lines, " << met.resets << " connections reset, "
                            << met.refusals << " refused");
    if (result.runs != count) {  // REACTOR_SIM_SEED: one seed replayed, its whole trace
        std::cout << out.str();
        return;
    }
    {  // the faults were met
        BOOST_TEST(met.bytes > 0u);
        BOOST_TEST(met.resets > 0);
        BOOST_TEST(met.refusals > 0);
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(echo_server_every_byte_comes_back_in_order_or_the_world_reset_the_connection) {
    swarm_holds("echo_server_every_byte_comes_back_in_order_or_the_world_reset_the_connection", 1, kSeeds,
                [](sim::World& w, Met& m) { echo_world(w, EchoServer::callbacks, {}, m); });
}

BOOST_AUTO_TEST_CASE(echo_server_streams_every_byte_comes_back_in_order_or_the_world_reset_the_connection) {
    swarm_holds("echo_server_streams_every_byte_comes_back_in_order_or_the_world_reset_the_connection", 1, kSeeds,
                [](sim::World& w, Met& m) { echo_world(w, EchoServer::streams, {}, m); });
}

BOOST_AUTO_TEST_CASE(chat_server_every_line_reaches_every_live_member_in_each_senders_order) {
    swarm_holds("chat_server_every_line_reaches_every_live_member_in_each_senders_order", 1, kSeeds,
                [](sim::World& w, Met& m) { chat_world(w, {}, m); }, true);
}

BOOST_AUTO_TEST_CASE(http_hello_every_request_is_answered_or_the_world_reset_the_connection) {
    swarm_holds("http_hello_every_request_is_answered_or_the_world_reset_the_connection", 1, kSeeds,
                [](sim::World& w, Met& m) { http_world(w, {}, m); }, true);
}
