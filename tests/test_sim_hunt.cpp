// SPDX-License-Identifier: MIT
// Hunts (issue 48's mutant proof): swarms aimed at the classes of defect
// this project's plain connections, streams and chat room actually had,
// each over many seeds of a simulated world. Each past defect is kept as a
// patch in tests/sim/mutants/ that plants it again; bench/sim_mutants/run
// applies one, builds this suite and runs the patch's hunt with
// REACTOR_SIM_SEEDS=10000 REACTOR_SIM_STOP_AT_FAILURE=1 to see whether, and
// how soon, the swarm finds it. On the clean tree every hunt passes.
//
//   echo_slow_readers, echo_streams_slow_readers: echo_server's echo (09,
//   callbacks, reading paused above the high-water mark) and
//   echo_server_streams' EchoSession (10) against clients that send
//   messages larger than the high-water mark and stop reading for a while,
//   again and again, then come back for a second session on a new
//   connection: every byte comes back in order and every client finishes.
//   echo_streams_stuck_clients_cost_one_read: EchoSession against clients
//   that send a megabyte and never read: each server stream holds at most
//   about one read of unread input.
//   feed_to_slow_subscribers_drops_them_whole: a server feeding slow
//   readers drops one from its high-water callback (abort); write()
//   must then say that it did not take the bytes.
//   chat_replays: chat_server's LoopRoom with a dozen members: every line
//   reaches every other member in its sender's order, and each seed run
//   twice gives the same trace (a failing seed must replay).
//   crash_frees_connections: a line server whose line callback holds its
//   connection (the usual session shape) crashes right after it closed a
//   connection, that close's callback still queued: every connection it
//   accepted is freed with its loop, and every close callback that ran
//   named the peer it accepted.
//   crash_frees_stream_conversations: the same over futures streams, with
//   clients that end their chain with `stream.close(); return
//   stream.wait_closed();`: no chain ends cancelled, every conversation is
//   freed with the crashed loop.
//
// REACTOR_SIM_SEEDS=<count> runs that many seeds instead of CI's few;
// REACTOR_SIM_SEED=<seed> replays one, traced. Virtual time only.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
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
#include <reactor/net/line_reader.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/testing/sim/swarm.hpp>
#include <reactor/testing/sim/world.hpp>

#include "../examples/09_echo_server/echo.hpp"
#include "../examples/10_echo_server_streams/echo_session.hpp"
#include "../examples/11_chat_server/loop_room.hpp"
#include "support/chat_lines.hpp"

using namespace std::chrono_literals;
using reactor::CloseKind;
using reactor::CloseReason;
using reactor::Connection;
using reactor::ConnectionPtr;
using reactor::Duration;
namespace sim = reactor::testing::sim;

namespace {

constexpr std::uint16_t kPort = 7000;

// CI's seeds per hunt: a few, so the clean suite takes seconds; fewer in
// a sanitizer or Debug build. A hunt for a planted defect sets
// REACTOR_SIM_SEEDS (bench/sim_mutants/run: 10,000).
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
constexpr std::size_t kSeeds = 4;
#else
constexpr std::size_t kSeeds = 20;
#endif

std::size_t seed_count() {
    const char* more = std::getenv("REACTOR_SIM_SEEDS");
    return more != nullptr ? std::stoul(more) : kSeeds;
}

// The hunt's swarm over seeds 1.., its failure lines and summary on
// std::cerr (where bench/sim_mutants/run reads them).
void hunt(const std::string& test, const std::function<void(sim::World&)>& body, bool twice = false) {
    sim::SwarmOptions options;
    options.replay = "test_sim_hunt --run_test=" + test;
    options.check_determinism = twice;
    sim::Swarm swarm(body, options);
    const sim::SwarmResult result = swarm.run(1, seed_count());
    BOOST_TEST(result.failures.empty(), test << ": " << result.summary());
}

Duration random_pause(std::mt19937_64& rng, Duration max) {
    return Duration{static_cast<Duration::rep>(rng() % (static_cast<std::uint64_t>(max.count()) + 1))};
}

// ---- echo to slow readers ---------------------------------------------

// One client of an echo server: `sessions` connections one after another,
// each sending `messages` messages of up to `max_size` bytes (larger than
// the server's high-water mark) at most two in flight, and reading slowly:
// after a chunk arrives it stops reading, now and then, for up to
// `max_stall`. Every byte must come back in order; each session closes once
// all its bytes came back. Any other end of a connection is a failure (the
// hunt's network breaks none).
struct SlowEchoClient {
    std::string name;
    std::mt19937_64 rng;
    int sessions = 2, messages = 3;
    std::size_t max_size = 160 * 1024;
    Duration max_stall = 200ms;

    sim::Host* host = nullptr;
    ConnectionPtr conn;
    int session = 0;
    std::string sent;
    std::size_t echoed = 0;
    std::vector<std::size_t> ends;
    std::size_t completed = 0;
    bool done = false;
    std::string failure;

    void fail(std::string why) {
        if (failure.empty()) failure = std::move(why);
        done = true;
    }
    void send_one() {
        if (ends.size() == static_cast<std::size_t>(messages) || !conn) return;
        // Each byte a hash of its position in the session: a lost, doubled
        // or reordered stretch shows, and no random draw per byte.
        std::string message(1 + rng() % max_size, '\0');
        for (std::size_t k = 0; k < message.size(); ++k)
            message[k] = static_cast<char>('a' + (((sent.size() + k) * 2654435761u) >> 16) % 26);
        sent += message;
        ends.push_back(sent.size());
        conn->write(message);
    }
    void on_data(Connection& c, std::string_view d) {
        if (echoed + d.size() > sent.size() || sent.compare(echoed, d.size(), d) != 0)
            return fail(fmt::format("{} session {}: bytes {}..{} are not what was sent", name, session, echoed,
                                    echoed + d.size()));
        echoed += d.size();
        while (completed < ends.size() && ends[completed] <= echoed) {
            ++completed;
            send_one();
        }
        if (completed == static_cast<std::size_t>(messages)) return c.close();
        if (rng() % 4 == 0) {  // a slow reader: nothing read for a while
            c.pause_reading();
            host->scheduler().call_later(random_pause(rng, max_stall), [c = conn] { c->resume_reading(); });
        }
    }
    void connect(const std::function<void()>& on_end) {
        sent.clear();
        ends.clear();
        echoed = completed = 0;
        reactor::connect(host->scheduler(), "server", kPort, [this, on_end](ConnectionPtr c, std::error_code ec) {
            if (!c) {
                fail(fmt::format("{} session {}: connect failed: {}", name, session, ec.message()));
                return on_end();
            }
            conn = c;
            c->set_data_callback([this](Connection& c, std::string_view d) { on_data(c, d); });
            c->set_close_callback([this, on_end](Connection&, const CloseReason& why) {
                conn.reset();
                if (done) return;
                if (completed != static_cast<std::size_t>(messages)) {
                    fail(fmt::format("{} session {} ended early: {} ({} of {} bytes echoed)", name, session,
                                     why.to_string(), echoed, sent.size()));
                    return on_end();
                }
                if (++session == sessions) {
                    done = true;
                    return on_end();
                }
                connect(on_end);
            });
            send_one();
            send_one();
        });
    }
};

enum class EchoServer { callbacks, streams };

void echo_to_slow_readers(sim::World& world, EchoServer kind) {
    sim::Host& server = world.host("server");
    // The examples' default deadlines (--idle-timeout 300 s): a stall is far shorter.
    reactor::ConnectionOptions deadlines;
    deadlines.idle_timeout = 300s;
    deadlines.write_timeout = 300s;
    std::uint64_t echoed = 0;
    reactor::ListenerPtr listener;
    examples::EchoCounts counts;
    futures::StreamServer stream_server;
    if (kind == EchoServer::callbacks) {
        reactor::Listener::Options options;
        options.connection = examples::echo_connection_options(deadlines);
        listener = reactor::Listener::listen(
            server.scheduler(), server.address(kPort), [&echoed](const ConnectionPtr& c) { examples::echo(c, echoed); },
            options);
    } else {
        futures::StreamOptions options;
        options.connection = deadlines;
        reactor::Scheduler& sched = server.scheduler();
        stream_server = futures::start_server(
            sched, server.address(kPort),
            [&sched, &counts](futures::Stream stream) {
                return futures::spawn(sched, examples::EchoSession(std::move(stream), counts));
            },
            options);
    }
    constexpr int kClients = 8;
    std::vector<std::unique_ptr<SlowEchoClient>> clients;
    std::vector<sim::Host*> hosts{&server};
    int ended = 0;
    for (int i = 0; i < kClients; ++i) {
        auto& c = clients.emplace_back(std::make_unique<SlowEchoClient>());
        c->name = fmt::format("client-{}", i);
        c->rng.seed(world.seed() * 1'000'003 + static_cast<std::uint64_t>(i));
        c->host = &world.host(c->name);
        hosts.push_back(c->host);
        c->connect([&ended] { ++ended; });
    }
    const bool all_ended = world.run_until([&] { return ended == kClients; }, 10min);
    std::string failure;
    for (const auto& c : clients) {
        if (!c->failure.empty()) {
            failure = c->failure;
            break;
        }
        if (!c->done) {
            failure = fmt::format("{} never finished: session {}, {} of {} bytes echoed, {} of {} messages (the "
                                  "server stopped reading?)",
                                  c->name, c->session, c->echoed, c->sent.size(), c->completed, c->messages);
            break;
        }
    }
    if (failure.empty() && !all_ended) failure = "not every client finished";
    if (failure.empty() && counts.failures > 0)
        failure = fmt::format("echo_server_streams counted {} failures", counts.failures);
    // The loops end while what their callbacks reach is alive, newest first.
    for (auto it = hosts.rbegin(); it != hosts.rend(); ++it)
        if ((*it)->up()) world.crash(**it);
    if (!failure.empty()) throw std::runtime_error(failure);
}

// ---- clients that send and never read ------------------------------------

// echo_server_streams' EchoSession against clients that send a megabyte
// and never read: the session waits in drain() with its output above the
// high-water mark, and its stream must stop reading then, holding at most
// about one read's worth of unread input per stuck client (issue 49: it
// read on to twice its limit, plus a read). Sampled every 10 virtual ms.
void echo_streams_to_stuck_clients(sim::World& world) {
    constexpr int kClients = 6;
    constexpr std::size_t kReadSize = 16 * 1024;
    constexpr std::size_t kBound = 2 * kReadSize;
    sim::Host& server = world.host("server");
    examples::EchoCounts counts;
    std::vector<futures::Stream> streams;  // the server's, to look at
    futures::StreamOptions options;
    options.connection.read_size = kReadSize;
    reactor::Scheduler& sched = server.scheduler();
    futures::StreamServer stream_server = futures::start_server(
        sched, server.address(kPort),
        [&sched, &counts, &streams](futures::Stream stream) {
            streams.push_back(stream);
            return futures::spawn(sched, examples::EchoSession(std::move(stream), counts));
        },
        options);
    std::size_t most = 0;
    std::function<void()> sample = [&] {
        for (const futures::Stream& s : streams) most = std::max(most, s.buffered());
        sched.call_later(10ms, sample);
    };
    sched.call_later(10ms, sample);
    std::vector<sim::Host*> hosts{&server};
    std::vector<ConnectionPtr> clients;
    for (int i = 0; i < kClients; ++i) {
        hosts.push_back(&world.host(fmt::format("client-{}", i)));
        reactor::connect(hosts.back()->scheduler(), "server", kPort, [&clients](ConnectionPtr c, std::error_code) {
            if (!c) return;
            clients.push_back(c);
            c->pause_reading();  // never reads
            c->write(std::string(std::size_t{1} << 20, 'x'));
        });
    }
    world.run_for(5s);
    std::string failure;
    if (most > kBound)
        failure = fmt::format("a stream whose peer never reads held {} bytes of unread input (at most {} "
                              "expected: reading stops while the output is above its high-water mark)",
                              most, kBound);
    streams.clear();
    for (auto it = hosts.rbegin(); it != hosts.rend(); ++it)
        if ((*it)->up()) world.crash(**it);
    if (!failure.empty()) throw std::runtime_error(failure);
}

// ---- slow subscribers ----------------------------------------------------

// A feed: the server writes a numbered message to every subscriber every
// 10 ms; a subscriber whose output passes the high-water mark is too slow
// and is dropped (aborted from the high-water callback, as chat_server
// drops a slow member). The server counts a message as sent only when
// write() says it took it: write() must then not have dropped it, so the
// connection it was written to is not closed by that call. Subscribers read
// slowly (stalls of up to a second) and check that what arrives is in order.
struct Subscriber {
    std::string name;
    std::mt19937_64 rng;
    ConnectionPtr conn;
    std::uint64_t received = 0;  // bytes, each checked against its position
    bool ended = false;
    std::string failure;

    void start(sim::Host& host) {
        reactor::connect(host.scheduler(), "server", kPort, [this, &host](ConnectionPtr c, std::error_code ec) {
            if (!c) {
                ended = true;
                failure = fmt::format("{}: connect failed: {}", name, ec.message());
                return;
            }
            conn = c;
            c->set_data_callback([this, &host](Connection& c, std::string_view d) {
                for (char ch : d)
                    if (ch != static_cast<char>('a' + received++ % 26) && failure.empty())
                        failure = fmt::format("{}: byte {} out of order", name, received - 1);
                if (rng() % 3 == 0) {
                    c.pause_reading();
                    host.scheduler().call_later(random_pause(rng, 1s), [c = conn] { c->resume_reading(); });
                }
            });
            c->set_close_callback([this](Connection&, const CloseReason&) {
                conn.reset();
                ended = true;
            });
        });
    }
};

void feed_to_slow_subscribers(sim::World& world) {
    constexpr int kSubscribers = 6;
    constexpr std::size_t kMessage = 4096;
    sim::Host& server = world.host("server");
    std::vector<ConnectionPtr> subscribers;
    std::vector<std::uint64_t> offsets;  // per subscriber: bytes write() took
    std::string failure;
    reactor::Listener::Options options;
    options.connection.high_water = 32 * 1024;
    options.connection.low_water = 8 * 1024;
    auto listener = reactor::Listener::listen(
        server.scheduler(), server.address(kPort),
        [&](const ConnectionPtr& c) {
            c->set_high_water_callback([](Connection& c) { c.abort(); });  // too slow: dropped
            subscribers.push_back(c);
            offsets.push_back(0);
        },
        options);
    std::function<void()> publish = [&] {
        for (std::size_t i = 0; i < subscribers.size(); ++i) {
            Connection& c = *subscribers[i];
            if (!c.is_open()) continue;
            std::string message(kMessage, '\0');
            for (std::size_t k = 0; k < kMessage; ++k) message[k] = static_cast<char>('a' + (offsets[i] + k) % 26);
            if (!c.write(message)) continue;
            offsets[i] += kMessage;
            if (!c.is_open() && failure.empty())
                failure = fmt::format("write() to subscriber {} said it took {} bytes that its high-water "
                                      "callback's abort discarded",
                                      i, kMessage);
        }
        server.scheduler().call_later(10ms, publish);
    };
    server.scheduler().call_later(10ms, publish);
    std::vector<std::unique_ptr<Subscriber>> clients;
    std::vector<sim::Host*> hosts{&server};
    for (int i = 0; i < kSubscribers; ++i) {
        auto& c = clients.emplace_back(std::make_unique<Subscriber>());
        c->name = fmt::format("client-{}", i);
        c->rng.seed(world.seed() * 1'000'003 + static_cast<std::uint64_t>(i));
        hosts.push_back(&world.host(c->name));
        c->start(*hosts.back());
    }
    world.run_for(3s);
    for (const auto& c : clients)
        if (failure.empty() && !c->failure.empty()) failure = c->failure;
    for (auto it = hosts.rbegin(); it != hosts.rend(); ++it)
        if ((*it)->up()) world.crash(**it);
    if (!failure.empty()) throw std::runtime_error(failure);
}

// ---- chat -------------------------------------------------------------

// One chat member: joins, then (once every member has) says `lines` lines
// "c<index> <k>" after random pauses; checks that each other member's lines
// reach it in order, and never its own.
struct ChatMember {
    std::string name;
    std::size_t index = 0;
    std::mt19937_64 rng;
    ConnectionPtr conn;
    bool joined = false, ended = false;
    int said = 0;
    std::vector<int> heard;  // per sender
    std::string partial;
    std::string failure;

    void fail(std::string why) {
        if (failure.empty()) failure = std::move(why);
    }
    void on_line(std::string_view line) {
        if (std::string why = reactor_test::check_chat_line(line, name, index, heard, joined); !why.empty())
            fail(std::move(why));
    }
    void start(sim::Host& host, std::size_t members) {
        heard.assign(members, 0);
        reactor::connect(host.scheduler(), "server", kPort, [this](ConnectionPtr c, std::error_code ec) {
            if (!c) {
                ended = true;
                return fail(fmt::format("{}: connect failed: {}", name, ec.message()));
            }
            conn = c;
            c->set_data_callback([this](Connection&, std::string_view d) {
                partial += d;
                std::size_t from = 0;
                for (std::size_t nl; (nl = partial.find('\n', from)) != std::string::npos; from = nl + 1)
                    on_line(std::string_view(partial).substr(from, nl - from));
                partial.erase(0, from);
            });
            c->set_close_callback([this](Connection&, const CloseReason& why) {
                conn.reset();
                ended = true;
                fail(fmt::format("{}: ended early: {}", name, why.to_string()));
            });
        });
    }
    void speak(sim::Host& host, int lines) {
        if (said == lines || !conn) return;
        host.scheduler().call_later(random_pause(rng, 100ms), [this, &host, lines] {
            if (!conn) return;
            conn->write(fmt::format("c{} {}\n", index, said++));
            speak(host, lines);
        });
    }
};

// chat_server's serve() on one loop (a LoopRoom of one, the example's
// limits); every member joins, says its lines and hears everyone else's.
void chat_world(sim::World& world) {
    constexpr int kMembers = 12, kLines = 4;
    sim::Host& server = world.host("server");
    examples::LoopRoom room(server.scheduler(), 0, 1, {.max_line = 4096, .max_backlog = 256 * 1024});
    room.link({&room});
    auto listener = reactor::Listener::listen(server.scheduler(), server.address(kPort),
                                              [&room](const ConnectionPtr& c) { room.join(c); });
    std::vector<std::unique_ptr<ChatMember>> members;
    std::vector<sim::Host*> hosts{&server};
    for (int i = 0; i < kMembers; ++i) {
        auto& m = members.emplace_back(std::make_unique<ChatMember>());
        m->name = fmt::format("client-{}", i);
        m->index = static_cast<std::size_t>(i);
        m->rng.seed(world.seed() * 1'000'003 + static_cast<std::uint64_t>(i));
        hosts.push_back(&world.host(m->name));
        m->start(*hosts.back(), kMembers);
    }
    auto first_failure = [&]() -> std::string {
        for (const auto& m : members)
            if (!m->failure.empty()) return m->failure;
        return {};
    };
    const bool all_joined = world.run_until(
        [&] {
            for (const auto& m : members)
                if (!m->joined && !m->ended) return false;
            return true;
        },
        1min);
    std::string failure = first_failure();
    if (failure.empty() && !all_joined) failure = "not every member joined";
    if (failure.empty()) {
        for (std::size_t i = 0; i < members.size(); ++i) members[i]->speak(*hosts[i + 1], kLines);
        auto all_heard = [&] {
            for (const auto& m : members)
                for (std::size_t s = 0; s < members.size(); ++s)
                    if (s != m->index && m->heard[s] != kLines) return false;
            return true;
        };
        world.run_until([&] { return all_heard() || !first_failure().empty(); }, 1min);
        failure = first_failure();
        if (failure.empty() && !all_heard()) failure = "not every member heard every line";
    }
    for (auto it = hosts.rbegin(); it != hosts.rend(); ++it)
        if ((*it)->up()) world.crash(**it);
    if (!failure.empty()) throw std::runtime_error(failure);
}

// ---- a crash with a close callback queued -------------------------------

// What a line server shares between its sessions: each line comes back,
// "quit" closes the connection; after the `crash_after`-th quit its host
// crashes (the step ends first: that quit's close callback is still queued
// when the loop ends). It keeps a weak reference to what each session
// holds, to see that the crash freed them all.
struct LineServerState {
    LineServerState(sim::World& w, sim::Host& h, int crash) : world(w), host(h), crash_after(crash) {}

    sim::World& world;
    sim::Host& host;
    int crash_after = 0;
    int quits = 0;
    std::vector<std::weak_ptr<void>> sessions;  // each session's token (see below)
    std::string failure;

    void fail(std::string why) {
        if (failure.empty()) failure = std::move(why);
    }
    void quit() {
        if (++quits == crash_after) world.crash(host);
    }
};

// The callback server: its line callback holds the connection (a session
// that answers through its own handle, as most do), which the connection's
// end must let go of, even when its loop ends before the close callback
// could run. Its close callback checks that the connection still names the
// peer it was accepted from.
void serve_lines(LineServerState& server, const ConnectionPtr& c) {
    // Freed with the line callback, which holds the connection: the token
    // says the connection's end let go of it.
    auto token = std::make_shared<int>(0);
    server.sessions.push_back(token);
    const std::string peer = c->peer_address().to_string();
    reactor::LineReader::attach(c, [&server, c, token](Connection&, std::string_view line) {
        if (line != "quit") {
            c->write(fmt::format("{}\n", line));
            return;
        }
        c->close();
        server.quit();
    });
    c->set_close_callback([&server, peer](Connection& c, const CloseReason&) {
        if (c.peer_address().to_string() != peer)
            server.fail(fmt::format("the close callback of a connection from {} names its peer {}", peer,
                                    c.peer_address().to_string()));
    });
}

// The stream server's conversation, a state machine as examples/10's: read
// a line, answer it; at "quit" close and wait for the close, letting its
// own handle go as it waits (what `stream.close(); return
// stream.wait_closed();` at the end of a chain does). The wait must complete
// (not break) unless the loop ended first, and the loop's end must free
// the conversation even when its connection's close callback was still
// queued. `token` lives as long as the conversation does.
class LineSession {
public:
    LineSession(futures::Stream stream, LineServerState& server)
        : stream_(std::move(stream)), server_(server), token_(std::make_shared<int>(0)) {
        server_.sessions.push_back(token_);
    }

    futures::Step<void> resume() {
        if (closing_) {
            try {
                std::exchange(closed_, {}).result();
            } catch (const std::exception& e) {
                server_.fail(fmt::format("wait_closed() after quit failed: {}", e.what()));
            }
            return futures::finished;
        }
        for (;;) {
            if (!line_.valid()) return line_ = stream_.read_line();
            std::optional<std::string> line;
            try {
                line = std::exchange(line_, {}).result();
            } catch (const std::system_error&) {
                return futures::finished;  // the connection failed: nothing more to answer
            }
            if (!line) return futures::finished;
            if (*line != "quit") {
                stream_.write(*line + "\n");
                continue;
            }
            stream_.close();
            closing_ = true;
            closed_ = stream_.wait_closed();
            stream_ = futures::Stream();
            server_.quit();
            return closed_;
        }
    }

private:
    futures::Stream stream_;
    LineServerState& server_;
    std::shared_ptr<int> token_;
    bool closing_ = false;
    futures::Future<std::optional<std::string>> line_;
    futures::Future<void> closed_;
};

// A client: `lines` lines, each once the one before came back, then quit;
// it ends with the server's close or the crash's reset.
struct LineClient {
    std::string name;
    std::mt19937_64 rng;
    ConnectionPtr conn;
    int lines = 0, answered = 0;
    bool ended = false;
    std::string in;

    void say(sim::Host& host) {
        host.scheduler().call_later(random_pause(rng, 50ms), [this] {
            if (!conn) return;
            conn->write(answered == lines ? std::string("quit\n") : fmt::format("{} line {}\n", name, answered));
        });
    }
    void start(sim::Host& host) {
        reactor::connect(host.scheduler(), "server", kPort, [this, &host](ConnectionPtr c, std::error_code) {
            if (!c) {
                ended = true;  // the server was down already
                return;
            }
            conn = c;
            c->set_data_callback([this, &host](Connection&, std::string_view d) {
                in += d;
                for (std::size_t nl; (nl = in.find('\n')) != std::string::npos; in.erase(0, nl + 1)) {
                    ++answered;
                    say(host);
                }
            });
            c->set_close_callback([this](Connection&, const CloseReason&) {
                conn.reset();
                ended = true;
            });
            say(host);
        });
    }
};

// The same client over a futures::Stream, as a chain: a line, its answer,
// the next...; then quit, close and wait for the close, its last handle
// going as the chain's step returns (`stream.close(); return
// stream.wait_closed();`). The chain must not end cancelled: the pending
// wait keeps the stream until it is closed. A reset (the crash) fails it.
struct StreamLineClient {
    std::string name;
    int lines = 0;
    futures::Future<void> done;

    futures::Future<void> talk(futures::Stream stream, int k) {
        if (k == lines) {
            stream.write("quit\n");
            stream.close();
            return stream.wait_closed();
        }
        stream.write(fmt::format("{} line {}\n", name, k));
        futures::Future<std::optional<std::string>> answer = stream.read_line();
        return answer.then([this, stream = std::move(stream), k](std::optional<std::string> line) mutable {
            if (!line) {  // the server closed first (it crashed: no, that resets): end too
                stream.close();
                return stream.wait_closed();
            }
            return talk(std::move(stream), k + 1);
        });
    }
    void start(sim::Host& host) {
        done = futures::open_connection(host.scheduler(), "server", kPort).then([this](futures::Stream stream) {
            return talk(std::move(stream), 0);
        });
    }
};

enum class LineServer { callbacks, streams };

void crash_with_a_close_queued(sim::World& world, LineServer kind) {
    constexpr int kClients = 10;
    std::mt19937_64 rng(world.seed());
    sim::Host& server_host = world.host("server");
    LineServerState server(world, server_host, 1 + static_cast<int>(rng() % kClients));
    reactor::ListenerPtr listener;
    futures::StreamServer stream_server;
    if (kind == LineServer::callbacks) {
        listener = reactor::Listener::listen(server_host.scheduler(), server_host.address(kPort),
                                             [&server](const ConnectionPtr& c) { serve_lines(server, c); });
    } else {
        reactor::Scheduler& sched = server_host.scheduler();
        stream_server = futures::start_server(sched, server_host.address(kPort), [&sched, &server](futures::Stream s) {
            return futures::spawn(sched, LineSession(std::move(s), server));
        });
    }
    // Callback clients for the callback server, stream clients (chains)
    // for the stream server.
    std::vector<std::unique_ptr<LineClient>> clients;
    std::vector<std::unique_ptr<StreamLineClient>> stream_clients;
    std::vector<sim::Host*> hosts{&server_host};
    for (int i = 0; i < kClients; ++i) {
        const std::string name = fmt::format("client-{}", i);
        std::mt19937_64 client_rng(world.seed() * 1'000'003 + static_cast<std::uint64_t>(i));
        const int lines = 1 + static_cast<int>(client_rng() % 4);
        hosts.push_back(&world.host(name));
        if (kind == LineServer::callbacks) {
            auto& c = clients.emplace_back(std::make_unique<LineClient>());
            c->name = name;
            c->rng = client_rng;
            c->lines = lines;
            c->start(*hosts.back());
        } else {
            auto& c = stream_clients.emplace_back(std::make_unique<StreamLineClient>());
            c->name = name;
            c->lines = lines;
            c->start(*hosts.back());
        }
    }
    const bool all_ended = world.run_until(
        [&] {
            for (const auto& c : clients)
                if (!c->ended) return false;
            for (const auto& c : stream_clients)
                if (!c->done.done()) return false;
            // A client's close is done before the server has read its quit.
            return !server_host.up();
        },
        10min);
    std::string failure = server.failure;
    for (const auto& c : stream_clients) {
        if (!c->done.failed()) continue;
        try {  // retrieved: the crash's reset is an expected end
            c->done.result();
        } catch (const std::exception&) {
        }
    }
    for (const auto& c : stream_clients)
        if (failure.empty() && c->done.cancelled())
            failure = fmt::format("{}: its chain (close, then wait_closed() with the last handle gone) ended "
                                  "cancelled: the wait broke instead of completing",
                                  c->name);
    if (failure.empty() && !all_ended) failure = "not every client ended";
    if (failure.empty() && server_host.up())
        failure = fmt::format("the server never crashed ({} quits of {}, {} sessions)", server.quits, server.crash_after, server.sessions.size());
    if (failure.empty()) {
        std::size_t alive = 0;
        for (const auto& weak : server.sessions) alive += !weak.expired();
        if (alive > 0)
            failure = fmt::format("{} of {} {} outlived their crashed host's loop (held in a cycle: a close "
                                  "callback was queued when the loop ended)",
                                  alive, server.sessions.size(),
                                  kind == LineServer::callbacks ? "connections" : "conversations");
    }
    for (const auto& c : stream_clients) c->done = {};  // their states belong to the client hosts' loops
    for (auto it = hosts.rbegin(); it != hosts.rend(); ++it)
        if ((*it)->up()) world.crash(**it);
    if (!failure.empty()) throw std::runtime_error(failure);
}

}  // namespace

BOOST_AUTO_TEST_CASE(echo_slow_readers) {
    hunt("echo_slow_readers", [](sim::World& w) { echo_to_slow_readers(w, EchoServer::callbacks); });
}

BOOST_AUTO_TEST_CASE(echo_streams_slow_readers) {
    hunt("echo_streams_slow_readers", [](sim::World& w) { echo_to_slow_readers(w, EchoServer::streams); });
}

BOOST_AUTO_TEST_CASE(echo_streams_stuck_clients_cost_one_read) {
    hunt("echo_streams_stuck_clients_cost_one_read", echo_streams_to_stuck_clients);
}

BOOST_AUTO_TEST_CASE(feed_to_slow_subscribers_drops_them_whole) {
    hunt("feed_to_slow_subscribers_drops_them_whole", feed_to_slow_subscribers);
}

BOOST_AUTO_TEST_CASE(chat_replays) {
    hunt("chat_replays", chat_world, true);
}

BOOST_AUTO_TEST_CASE(crash_frees_connections) {
    hunt("crash_frees_connections", [](sim::World& w) { crash_with_a_close_queued(w, LineServer::callbacks); });
}

BOOST_AUTO_TEST_CASE(crash_frees_stream_conversations) {
    hunt("crash_frees_stream_conversations",
         [](sim::World& w) { crash_with_a_close_queued(w, LineServer::streams); });
}
