// SPDX-License-Identifier: MIT
// micro: a plain timing harness for the loop's hot paths, ours against the
// closest idiomatic equivalent in Asio and libuv. One measurement per process
// (so every run starts from a fresh heap); bench/run repeats and takes medians.
//
//   micro chain  <lib> [N]  self-reposting callback, N hops        -> ns per hop (wall)
//   micro post   <lib> [N]  N callbacks posted, then the loop run   -> ns per post, ns per run (wall)
//   micro timers <lib> [N]  N timers armed from inside the loop,
//                           deadlines 1..100 ms                     -> ns per insert (wall),
//                                                                      ns per dispatch (process CPU)
//   micro rearm  <lib> [N]  one fd kept readable, N readiness events,
//                           each one a real selector wait             -> ns per event (wall and
//                                                                      process CPU), per variant
//   post and timers: two rounds, see below; metrics of round 1 end in "_cold".
// <lib>: reactor-select | reactor-poll | reactor-epoll | asio | asio-reactor (chain) | libuv
//        (rearm: ours only)
// Output: lines "RESULT <bench> <lib> <metric> <value>".
//
// Equivalents chosen:
//   chain  ours: call_soon from inside the callback. Asio: asio::post from
//          inside the handler (its documented way to "run this later on the
//          io_context"); "asio-reactor" is the same with a socket open, so
//          Asio's epoll reactor exists and is polled between handlers.
//          libuv has no run-later queue; its idiomatic "call me on the next
//          loop iteration" is a uv_idle_t, so one hop = one idle callback =
//          one loop iteration (with its epoll_wait(0)), the shape of ours.
//   post   libuv has no equivalent (uv_async_send coalesces), so it is absent.
//   timers Asio: one steady_timer per timer (constructed before timing),
//          expires_after + async_wait. libuv: one uv_timer_t per timer
//          (uv_timer_init before timing), uv_timer_start. Ours: call_later.
//   rearm  ours against ours: the one-shot waiter re-registered from its own
//          callback (read_wait) against the persistent one (add_reader), on
//          each backend. See the rearm section for the set-up.
#include <fcntl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <asio.hpp>
#include <uv.h>

#include "reactor/scheduler.hpp"

namespace {

using WallClock = std::chrono::steady_clock;

double cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

double ns_since(WallClock::time_point t0) {
    return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(WallClock::now() - t0).count());
}

void result(std::string_view bench, std::string_view lib, std::string_view metric, double value) {
    std::printf("RESULT %.*s %.*s %.*s %.3f\n", static_cast<int>(bench.size()), bench.data(),
                static_cast<int>(lib.size()), lib.data(), static_cast<int>(metric.size()), metric.data(), value);
}

// Timer i fires after 1..100 ms: 100 distinct deadlines, spread so dispatch
// happens over many loop iterations, not in one batch.
int delay_ms(long i) { return 1 + static_cast<int>((i * 7919) % 100); }

std::unique_ptr<reactor::Scheduler> make_scheduler(std::string_view lib) {
    reactor::Scheduler::Options opts;
    auto backend = reactor::parse_backend(lib.substr(lib.find('-') + 1));
    if (!backend) throw std::invalid_argument("unknown backend in " + std::string(lib));
    opts.backend = *backend;
    return std::make_unique<reactor::Scheduler>(std::move(opts));
}

// ------------------------------------------------------------------ chain

void chain_reactor(std::string_view lib, long n) {
    auto s = make_scheduler(lib);
    long left = n;
    struct Hop {
        reactor::Scheduler* s;
        long* left;
        void operator()() const {
            if (--*left > 0) s->call_soon(*this);
        }
    };
    s->call_soon(Hop{s.get(), &left});
    auto t0 = WallClock::now();
    s->run();
    result("chain", lib, "ns_per_hop", ns_since(t0) / static_cast<double>(n));
}

// with_reactor: also open a socket, so the io_context has its epoll reactor
// (Asio creates it lazily: a pure post chain never polls for I/O at all).
void chain_asio(long n, bool with_reactor) {
    asio::io_context ctx;
    // Even constructing a socket object instantiates the reactor: only then.
    std::optional<asio::ip::tcp::socket> sock;
    if (with_reactor) sock.emplace(ctx, asio::ip::tcp::v4());
    long left = n;
    struct Hop {
        asio::io_context* ctx;
        long* left;
        void operator()() const {
            if (--*left > 0) asio::post(*ctx, *this);
        }
    };
    asio::post(ctx, Hop{&ctx, &left});
    auto t0 = WallClock::now();
    ctx.run();
    result("chain", with_reactor ? "asio-reactor" : "asio", "ns_per_hop", ns_since(t0) / static_cast<double>(n));
}

void chain_libuv(long n) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    uv_idle_t idle;
    long left = n;
    uv_idle_init(&loop, &idle);
    idle.data = &left;
    uv_idle_start(&idle, [](uv_idle_t* h) {
        if (--*static_cast<long*>(h->data) == 0) uv_idle_stop(h);
    });
    auto t0 = WallClock::now();
    uv_run(&loop, UV_RUN_DEFAULT);
    result("chain", "libuv", "ns_per_hop", ns_since(t0) / static_cast<double>(n));
    uv_close(reinterpret_cast<uv_handle_t*>(&idle), nullptr);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
}

// ------------------------------------------------------------------ post then run
//
// post and timers run two rounds in the same loop: round 1 ("_cold") grows
// every pool and queue from empty; round 2 is the steady state the hot-path
// design is about (nodes reused, no allocation where avoidable). Round 2 is
// the headline figure.

std::string metric(const char* name, int round) { return std::string(name) + (round == 0 ? "_cold" : ""); }

void post_reactor(std::string_view lib, long n) {
    auto s = make_scheduler(lib);
    for (int round = 0; round < 2; ++round) {
        long count = 0;
        auto t0 = WallClock::now();
        for (long i = 0; i < n; ++i) s->call_soon([&count] { ++count; });
        double post = ns_since(t0);
        auto t1 = WallClock::now();
        s->run();
        double run = ns_since(t1);
        if (count != n) throw std::runtime_error("post: not every callback ran");
        result("post", lib, metric("ns_per_post", round), post / static_cast<double>(n));
        result("post", lib, metric("ns_per_run", round), run / static_cast<double>(n));
    }
}

void post_asio(long n) {
    asio::io_context ctx;
    for (int round = 0; round < 2; ++round) {
        long count = 0;
        auto t0 = WallClock::now();
        for (long i = 0; i < n; ++i) asio::post(ctx, [&count] { ++count; });
        double post = ns_since(t0);
        auto t1 = WallClock::now();
        ctx.restart();
        ctx.run();
        double run = ns_since(t1);
        if (count != n) throw std::runtime_error("post: not every handler ran");
        result("post", "asio", metric("ns_per_post", round), post / static_cast<double>(n));
        result("post", "asio", metric("ns_per_run", round), run / static_cast<double>(n));
    }
}

// ------------------------------------------------------------------ timers

void timers_reactor(std::string_view lib, long n) {
    auto s = make_scheduler(lib);
    for (int round = 0; round < 2; ++round) {
        long fired = 0;
        double insert = 0, cpu0 = 0;
        s->call_soon([&] {
            auto t0 = WallClock::now();
            for (long i = 0; i < n; ++i)
                s->call_later(std::chrono::milliseconds(delay_ms(i)), [&fired] { ++fired; });
            insert = ns_since(t0);
            cpu0 = cpu_ns();
        });
        s->run();
        double dispatch = cpu_ns() - cpu0;
        if (fired != n) throw std::runtime_error("timers: not every timer fired");
        result("timers", lib, metric("ns_per_insert", round), insert / static_cast<double>(n));
        result("timers", lib, metric("cpu_ns_per_dispatch", round), dispatch / static_cast<double>(n));
    }
}

void timers_asio(long n) {
    asio::io_context ctx;
    std::vector<asio::steady_timer> timers;
    timers.reserve(static_cast<std::size_t>(n));
    for (long i = 0; i < n; ++i) timers.emplace_back(ctx);
    for (int round = 0; round < 2; ++round) {
        long fired = 0;
        double insert = 0, cpu0 = 0;
        asio::post(ctx, [&] {
            auto t0 = WallClock::now();
            for (long i = 0; i < n; ++i) {
                auto& t = timers[static_cast<std::size_t>(i)];
                t.expires_after(std::chrono::milliseconds(delay_ms(i)));
                t.async_wait([&fired](const std::error_code& ec) {
                    if (!ec) ++fired;
                });
            }
            insert = ns_since(t0);
            cpu0 = cpu_ns();
        });
        ctx.restart();
        ctx.run();
        double dispatch = cpu_ns() - cpu0;
        if (fired != n) throw std::runtime_error("timers: not every timer fired");
        result("timers", "asio", metric("ns_per_insert", round), insert / static_cast<double>(n));
        result("timers", "asio", metric("cpu_ns_per_dispatch", round), dispatch / static_cast<double>(n));
    }
}

void timers_libuv(long n) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    std::vector<uv_timer_t> timers(static_cast<std::size_t>(n));
    struct Ctx {
        std::vector<uv_timer_t>* timers;
        long fired = 0;
        double insert = 0, cpu0 = 0;
    } c{&timers};
    for (auto& t : timers) {
        uv_timer_init(&loop, &t);
        t.data = &c.fired;
    }
    // Armed from a zero-delay timer callback, i.e. from inside the loop.
    uv_timer_t start;
    uv_timer_init(&loop, &start);
    start.data = &c;
    for (int round = 0; round < 2; ++round) {
        c.fired = 0;
        uv_timer_start(&start, [](uv_timer_t* h) {
            auto* c = static_cast<Ctx*>(h->data);
            auto t0 = WallClock::now();
            long i = 0;
            for (auto& t : *c->timers) {
                uv_timer_start(&t, [](uv_timer_t* t) { ++*static_cast<long*>(t->data); },
                               static_cast<std::uint64_t>(delay_ms(i++)), 0);
            }
            c->insert = ns_since(t0);
            c->cpu0 = cpu_ns();
        }, 0, 0);
        uv_run(&loop, UV_RUN_DEFAULT);
        double dispatch = cpu_ns() - c.cpu0;
        if (c.fired != n) throw std::runtime_error("timers: not every timer fired");
        result("timers", "libuv", metric("ns_per_insert", round), c.insert / static_cast<double>(n));
        result("timers", "libuv", metric("cpu_ns_per_dispatch", round), dispatch / static_cast<double>(n));
    }
    for (auto& t : timers) uv_close(reinterpret_cast<uv_handle_t*>(&t), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&start), nullptr);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
}

// ------------------------------------------------------------------ rearm
//
// The cost of a one-shot fd waiter that re-registers itself from its own
// callback (read_wait, the Beazley pattern), against a persistent one
// (add_reader), with nothing else in the loop. One AF_UNIX stream socketpair
// (a, b), both ends non-blocking; the loop watches `a` for reading. Every
// readiness event's callback reads the one byte waiting on `a` and writes one
// byte into `b`, so `a` is readable again by the next wait: every iteration
// is one real selector wait reporting exactly one event, then one read and
// one write (no timers, no other fd, so the wait always blocks until `a` is
// readable, which it already is). The one-shot variant re-arms with
// read_wait inside the callback; the persistent one registers once and
// remove_reader()s itself at the last event.
//
// Each variant runs on a fresh Scheduler and socketpair: a short warm-up
// (not reported) then N measured events. Reported per variant: wall ns per
// event and process CPU ns per event (CLOCK_PROCESS_CPUTIME_ID: on a shared
// CPU it leaves out the time other processes held it). Metrics end in
// "_oneshot" or "_persistent".

struct SocketPair {
    int a = -1, b = -1;
    SocketPair() {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
            throw std::runtime_error(std::string("rearm: socketpair: ") + std::strerror(errno));
        a = sv[0];
        b = sv[1];
    }
    ~SocketPair() {
        ::close(a);
        ::close(b);
    }
    SocketPair(const SocketPair&) = delete;
    SocketPair& operator=(const SocketPair&) = delete;
};

// One event's I/O: the byte `a` had, and the one that makes it readable again
// (none after the last event, so the pair ends empty).
void rearm_io(const SocketPair& p, bool again) {
    char c;
    ssize_t r;
    do r = ::read(p.a, &c, 1);
    while (r < 0 && errno == EINTR);
    if (r != 1) throw std::runtime_error(r < 0 ? std::string("rearm: read: ") + std::strerror(errno)
                                               : std::string("rearm: read returned ") + std::to_string(r));
    if (!again) return;
    do r = ::write(p.b, &c, 1);
    while (r < 0 && errno == EINTR);
    if (r != 1) throw std::runtime_error(std::string("rearm: write: ") + std::strerror(errno));
}

void rearm_prime(const SocketPair& p) {
    if (::write(p.b, "x", 1) != 1) throw std::runtime_error(std::string("rearm: write: ") + std::strerror(errno));
}

// Runs `events` events with the chosen variant on a fresh loop; returns
// {wall ns, process CPU ns} for the whole run. A failed read or write ends
// the run (the waiter is dropped, so the loop has nothing left to wait for)
// and is rethrown here.
std::pair<double, double> rearm_round(std::string_view lib, bool oneshot, long events) {
    auto s = make_scheduler(lib);
    SocketPair p;
    long left = events;
    std::string error;
    struct OneShot {
        reactor::Scheduler* s;
        const SocketPair* p;
        long* left;
        std::string* error;
        void operator()() const {
            bool again = --*left > 0;
            try {
                rearm_io(*p, again);
            } catch (const std::exception& e) {
                *error = e.what();
                return;
            }
            if (again) s->read_wait(p->a, *this);
        }
    };
    struct Persistent {
        reactor::Scheduler* s;
        const SocketPair* p;
        long* left;
        std::string* error;
        void operator()() const {
            bool again = --*left > 0;
            try {
                rearm_io(*p, again);
            } catch (const std::exception& e) {
                *error = e.what();
                again = false;
            }
            if (!again) s->remove_reader(p->a);
        }
    };
    rearm_prime(p);
    if (oneshot) s->read_wait(p.a, OneShot{s.get(), &p, &left, &error});
    else s->add_reader(p.a, Persistent{s.get(), &p, &left, &error});
    double cpu0 = cpu_ns();
    auto t0 = WallClock::now();
    s->run();
    double wall = ns_since(t0);
    double cpu = cpu_ns() - cpu0;
    if (!error.empty()) throw std::runtime_error(error);
    if (left != 0) throw std::runtime_error("rearm: the loop stopped before every event ran");
    return {wall, cpu};
}

void rearm_reactor(std::string_view lib, long n) {
    long warmup = std::max(1L, std::min(n / 10, 10'000L));
    for (bool oneshot : {true, false}) {
        rearm_round(lib, oneshot, warmup);
        auto [wall, cpu] = rearm_round(lib, oneshot, n);
        std::string variant = oneshot ? "_oneshot" : "_persistent";
        result("rearm", lib, "ns_per_event" + variant, wall / static_cast<double>(n));
        result("rearm", lib, "cpu_ns_per_event" + variant, cpu / static_cast<double>(n));
    }
}

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: micro chain|post|timers|rearm reactor-select|reactor-poll|reactor-epoll|asio|asio-reactor|libuv "
                 "[N]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) usage();
    std::string_view bench = argv[1], lib = argv[2];
    long n = argc > 3 ? std::atol(argv[3]) : 1'000'000;
    if (n <= 0) usage();
    try {
        bool ours = lib.starts_with("reactor-");
        if (bench == "chain") {
            if (ours) chain_reactor(lib, n);
            else if (lib == "asio") chain_asio(n, false);
            else if (lib == "asio-reactor") chain_asio(n, true);
            else if (lib == "libuv") chain_libuv(n);
            else usage();
        } else if (bench == "post") {
            if (ours) post_reactor(lib, n);
            else if (lib == "asio") post_asio(n);
            else usage();
        } else if (bench == "timers") {
            if (ours) timers_reactor(lib, n);
            else if (lib == "asio") timers_asio(n);
            else if (lib == "libuv") timers_libuv(n);
            else usage();
        } else if (bench == "rearm") {
            if (ours) rearm_reactor(lib, n);
            else usage();
        } else {
            usage();
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "micro %s %s: %s\n", argv[1], argv[2], e.what());
        return 1;
    }
    return 0;
}
