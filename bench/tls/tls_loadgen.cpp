// SPDX-License-Identifier: MIT
// tls_loadgen: the one TLS client that drives both TLS echo servers of
// bench/tls_run (ours, examples/tls_echo_server; Asio's, peers/asio_tls_echo)
// the same way. It is a reactor::tls program (one loop, epoll): its cost per
// message and per handshake is the same whichever server it drives, and the
// server's own CPU time is reported beside every figure (from
// /proc/PID/task/*/schedstat), which does not depend on the client at all.
// Every connection verifies the server against --cafile as "localhost".
//
//   tls_loadgen echo --port P --cafile CA --conns N --size S [--idle K] [--warmup S] [--duration S] [--server-pid PID]
//     N connections with one message of S bytes in flight each (send, read
//     back, compare, send the next), K more that finish their handshake,
//     echo one byte and stay silent. Prints "msgs_per_s=... mb_per_s=...
//     server_cpu_ns_per_msg=...".
//   tls_loadgen handshakes --port P --cafile CA [--resume] [--conns C] [--warmup S] [--duration S] [--server-pid PID]
//     C chains of: connect, handshake, a 1-byte echo (so a TLS 1.3 session
//     ticket has arrived), close; --resume offers the last session (the
//     context's cache). Prints "handshakes_per_s=... resumed_fraction=...
//     server_cpu_us_per_handshake=...".
//   tls_loadgen idle --port P --cafile CA --server-pid PID [--conns K]
//     The server's VmRSS after one connection came and went, and after K
//     connections (batches of 64, each handshaken and probed with a 1-byte
//     echo) sit idle: "rss_before=... rss_after=... bytes_per_idle_conn=...".
// Exit status 0 on success, 1 on any error (a failed handshake, a mismatch,
// a stall). Every phase is bounded in time. 127.0.0.1 only.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <reactor/scheduler.hpp>
#include <reactor/tls/listen.hpp>

namespace tls = reactor::tls;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
    std::string mode;
    std::uint16_t port = 0;
    std::string cafile;
    int conns = 1, idle = 0;
    std::size_t size = 64;
    double warmup = 1, duration = 3;
    int server_pid = 0;
    bool resume = false;
};

bool g_stopping = false;  // the measurement is over: connections are aborted on purpose

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "tls_loadgen: %s\n", why.c_str());
    std::exit(1);
}

// The server's CPU time so far, in ns: every thread's schedstat.
std::uint64_t server_cpu_ns(int pid) {
    if (pid <= 0) return 0;
    std::uint64_t total = 0;
    const std::string dir = "/proc/" + std::to_string(pid) + "/task";
    if (DIR* d = ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d)) {
            if (e->d_name[0] == '.') continue;
            std::ifstream in(dir + "/" + e->d_name + "/schedstat");
            std::uint64_t ns = 0;
            in >> ns;
            total += ns;
        }
        ::closedir(d);
    }
    return total;
}

std::size_t server_rss(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.starts_with("VmRSS:")) return std::stoul(line.substr(6)) * 1024;
    return 0;
}

// Runs the loop until done() or `seconds`; false on timeout.
template <class Pred>
bool run_until(reactor::Scheduler& sched, Pred done, double seconds) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    auto tick = sched.call_later(std::chrono::milliseconds(50), [] {});
    while (!done() && Clock::now() < deadline) {
        if (!tick.is_pending()) tick = sched.call_later(std::chrono::milliseconds(50), [] {});
        sched.run_once();
    }
    tick.cancel();
    return done();
}

// One TLS connection of the load: connects, handshakes, then either echoes
// messages of `size` bytes one at a time (active) or echoes one byte and
// waits (idle). `on_ready` runs once after the first echo.
struct Conn {
    tls::ConnectionPtr c;
    std::size_t size = 1, got = 0;
    std::uint64_t echoed = 0;
    bool active = false, ready = false, closed = false, resumed = false;
    std::function<void(Conn&)> on_message;  // after every complete echo
};

const std::string& pattern() {
    static const std::string bytes = [] {
        std::string s((1 << 20) + 251, '\0');
        for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i % 251);
        return s;
    }();
    return bytes;
}

void start(reactor::Scheduler& sched, const Args& a, const tls::ContextPtr& ctx, Conn& conn) {
    tls::connect(sched, reactor::Address::loopback_v4(a.port), ctx, "localhost",
                 [&conn](tls::ConnectionPtr c, std::error_code ec) {
                     if (ec) fail("connect: " + ec.message());
                     conn.c = std::move(c);
                     conn.c->set_handshake_callback([&conn](tls::Connection& c) {
                         conn.resumed = c.session_reused();
                         c.write(std::string_view(pattern()).substr(0, conn.size));
                     });
                     conn.c->set_data_callback([&conn](tls::Connection& c, std::string_view d) {
                         if (std::memcmp(d.data(), pattern().data() + conn.got, d.size()) != 0) fail("echo mismatch");
                         conn.got += d.size();
                         if (conn.got < conn.size) return;
                         conn.got = 0;
                         ++conn.echoed;
                         conn.ready = true;
                         if (conn.on_message) conn.on_message(conn);
                         if (conn.active && conn.c) c.write(std::string_view(pattern()).substr(0, conn.size));
                     });
                     conn.c->set_close_callback([&conn](tls::Connection&, const reactor::End& r) {
                         conn.closed = true;
                         if (!conn.ready && !g_stopping) fail("closed before its first echo: " + r.to_string());
                     });
                 });
}

tls::ContextPtr client_context(const Args& a) {
    tls::ClientOptions o;
    o.trust.ca_file = a.cafile;
    o.session_cache = a.resume;
    return tls::Context::client(o);
}

int echo(const Args& a, reactor::Scheduler& sched) {
    const auto ctx = client_context(a);
    std::vector<std::unique_ptr<Conn>> conns;
    bool counting = false;
    std::uint64_t messages = 0;
    for (int i = 0; i < a.conns + a.idle; ++i) {
        auto conn = std::make_unique<Conn>();
        conn->active = i < a.conns;
        conn->size = conn->active ? a.size : 1;
        conn->on_message = [&](Conn&) { messages += counting ? 1 : 0; };
        start(sched, a, ctx, *conn);
        conns.push_back(std::move(conn));
        if (conns.size() % 64 == 0 &&
            !run_until(sched, [&] { for (auto& c : conns) if (!c->ready) return false; return true; }, 30))
            fail("connections not ready within 30 s");
    }
    if (!run_until(sched, [&] { for (auto& c : conns) if (!c->ready) return false; return true; }, 30))
        fail("connections not ready within 30 s");
    run_until(sched, [] { return false; }, a.warmup);
    counting = true;
    const std::uint64_t cpu0 = server_cpu_ns(a.server_pid);
    const auto t0 = Clock::now();
    run_until(sched, [] { return false; }, a.duration);
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    const std::uint64_t cpu = server_cpu_ns(a.server_pid) - cpu0;
    counting = false;
    g_stopping = true;
    std::printf("msgs=%llu secs=%.3f msgs_per_s=%.0f mb_per_s=%.2f server_cpu_ns_per_msg=%.0f\n",
                static_cast<unsigned long long>(messages), secs, static_cast<double>(messages) / secs,
                static_cast<double>(messages) * static_cast<double>(a.size) / secs / 1e6,
                messages ? static_cast<double>(cpu) / static_cast<double>(messages) : 0.0);
    for (auto& c : conns) {
        c->active = false;
        if (c->c) c->c->abort();
    }
    run_until(sched, [&] { for (auto& c : conns) if (c->c && !c->closed) return false; return true; }, 10);
    return 0;
}

int handshakes(const Args& a, reactor::Scheduler& sched) {
    const auto ctx = client_context(a);
    bool counting = false;
    std::uint64_t done = 0, resumed = 0;
    std::vector<std::unique_ptr<Conn>> chains(static_cast<std::size_t>(a.conns));
    std::function<void(std::size_t)> next = [&](std::size_t i) {
        chains[i] = std::make_unique<Conn>();
        chains[i]->on_message = [&, i](Conn& conn) {
            if (counting) {
                ++done;
                resumed += conn.resumed ? 1 : 0;
            }
            conn.c->set_close_callback([&, i](tls::Connection&, const reactor::End&) {
                sched.call_soon([&, i] { next(i); });  // not from inside the old connection's callback
            });
            conn.c->close();
        };
        start(sched, a, ctx, *chains[i]);
    };
    for (std::size_t i = 0; i < chains.size(); ++i) next(i);
    run_until(sched, [] { return false; }, a.warmup);
    counting = true;
    const std::uint64_t cpu0 = server_cpu_ns(a.server_pid);
    const auto t0 = Clock::now();
    run_until(sched, [] { return false; }, a.duration);
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    const std::uint64_t cpu = server_cpu_ns(a.server_pid) - cpu0;
    counting = false;
    g_stopping = true;
    std::printf("handshakes=%llu secs=%.3f handshakes_per_s=%.0f resumed_fraction=%.3f server_cpu_us_per_handshake=%.1f\n",
                static_cast<unsigned long long>(done), secs, static_cast<double>(done) / secs,
                done ? static_cast<double>(resumed) / static_cast<double>(done) : 0.0,
                done ? static_cast<double>(cpu) / static_cast<double>(done) / 1e3 : 0.0);
    if (done == 0) fail("no handshake completed");
    next = [](std::size_t) {};
    for (auto& c : chains)
        if (c && c->c) c->c->abort();
    run_until(sched, [] { return false; }, 0.2);
    return 0;
}

int idle(const Args& a, reactor::Scheduler& sched) {
    if (a.server_pid <= 0) fail("idle needs --server-pid");
    const auto ctx = client_context(a);
    {  // one connection comes and goes first: what is made once per server is not counted
        Conn warm;
        start(sched, a, ctx, warm);
        if (!run_until(sched, [&] { return warm.ready; }, 30)) fail("the first connection did not finish");
        warm.c->close();
        run_until(sched, [&] { return warm.closed; }, 10);
    }
    run_until(sched, [] { return false; }, 0.3);
    const std::size_t before = server_rss(a.server_pid);
    std::vector<std::unique_ptr<Conn>> conns;
    for (int i = 0; i < a.conns; ++i) {
        conns.push_back(std::make_unique<Conn>());
        start(sched, a, ctx, *conns.back());
        if (conns.size() % 64 == 0 || i + 1 == a.conns)
            if (!run_until(sched, [&] { for (auto& c : conns) if (!c->ready) return false; return true; }, 30))
                fail("idle connections not ready within 30 s");
    }
    run_until(sched, [] { return false; }, 0.5);  // the server settles
    const std::size_t after = server_rss(a.server_pid);
    g_stopping = true;
    std::printf("conns=%d rss_before=%zu rss_after=%zu bytes_per_idle_conn=%.0f\n", a.conns, before, after,
                (static_cast<double>(after) - static_cast<double>(before)) / a.conns);
    for (auto& c : conns)
        if (c->c) c->c->abort();
    run_until(sched, [] { return false; }, 0.5);
    return 0;
}

Args parse(int argc, char** argv) {
    Args a;
    if (argc < 2) fail("usage: tls_loadgen echo|handshakes|idle --port P --cafile CA [...] (see the source)");
    a.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string k = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) fail(k + " needs a value");
            return argv[++i];
        };
        if (k == "--port") a.port = static_cast<std::uint16_t>(std::stoi(value()));
        else if (k == "--cafile") a.cafile = value();
        else if (k == "--conns") a.conns = std::stoi(value());
        else if (k == "--idle") a.idle = std::stoi(value());
        else if (k == "--size") a.size = std::stoul(value());
        else if (k == "--warmup") a.warmup = std::stod(value());
        else if (k == "--duration") a.duration = std::stod(value());
        else if (k == "--server-pid") a.server_pid = std::stoi(value());
        else if (k == "--resume") a.resume = true;
        else fail("unknown option " + k);
    }
    if (a.port == 0 || a.cafile.empty()) fail("--port and --cafile are required");
    if (a.size == 0 || a.size > (1 << 20)) fail("--size must be 1..1048576");
    return a;
}

}  // namespace

int main(int argc, char** argv) {
    const Args a = parse(argc, argv);
    rlimit rl{};
    ::getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    reactor::Scheduler::Options options;
    options.backend = reactor::Backend::epoll;
    reactor::Scheduler sched(std::move(options));
    try {
        if (a.mode == "echo") return echo(a, sched);
        if (a.mode == "handshakes") return handshakes(a, sched);
        if (a.mode == "idle") return idle(a, sched);
    } catch (const std::exception& e) {
        fail(e.what());
    }
    fail("unknown mode " + a.mode);
}
