// SPDX-License-Identifier: MIT
// micro_futures: the cost of futures::Future continuations on a reactor::Scheduler.
// One measurement per process; bench/run repeats and takes medians.
//
//   micro_futures then   <lib> [N]  a chain f.then(+1).then(+1)... of N links,
//                                   the root completed, the loop run to the end
//                                   -> ns per then (attach + run), and the two parts
//   micro_futures fanout <lib> [N]  N thens on one future (all due in one
//                                   iteration: no loop iteration per link)
//                                   -> ns per then (attach + run)
//   micro_futures pair   <lib> [N]  N times: a Future made, set_result, result()
//                                   read, destroyed -> ns per future/promise pair
//   micro_futures scope  <lib> [N]  N empty tasks (one resume(), then done), 1000
//                                   at a time: spawned bare and joined (run,
//                                   result() read), then spawned into a
//                                   futures::Scope and joined by its close()
//                                   -> ns per task, each (issue 47: the target
//                                   is scope <= 1.5x bare)
//   then and fanout: two rounds on one loop, like micro's post and timers:
//   round 1 grows every pool (allocator, ready queue, slot table) from empty
//   and is reported with "_cold" appended to the metric names; round 2 is the
//   steady state and the headline figure. A fresh process touching fresh
//   memory mostly measures page faults (~6 us each on the bench VMs).
// <lib>: reactor-select | reactor-poll | reactor-epoll (the Scheduler's backend).
// Output: lines "RESULT <bench> <lib> <metric> <value>", <bench> = futures.
//
// A chain link completes one loop iteration after the previous one (done
// callbacks always go through call_soon, and a callback scheduled during the
// run phase runs in the next iteration), so `then` includes one iteration of
// the loop per link by design; `fanout` shows the continuation cost alone.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <futures/future.hpp>
#include <futures/scope.hpp>
#include <futures/task.hpp>
#include <reactor/scheduler.hpp>

namespace {

using WallClock = std::chrono::steady_clock;

double ns_since(WallClock::time_point t0) {
    return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(WallClock::now() - t0).count());
}

void result(std::string_view lib, std::string_view metric, double value) {
    std::printf("RESULT futures %.*s %.*s %.3f\n", static_cast<int>(lib.size()), lib.data(),
                static_cast<int>(metric.size()), metric.data(), value);
}

std::unique_ptr<reactor::Scheduler> make_scheduler(std::string_view lib) {
    reactor::Scheduler::Options opts;
    auto backend = reactor::parse_backend(lib.substr(lib.find('-') + 1));
    if (!backend) throw std::invalid_argument("unknown backend in " + std::string(lib));
    opts.backend = *backend;
    return std::make_unique<reactor::Scheduler>(std::move(opts));
}

std::string metric(const char* name, int round) { return std::string(name) + (round == 0 ? "_cold" : ""); }

void then_chain(std::string_view lib, long n) {
    auto s = make_scheduler(lib);
    for (int round = 0; round < 2; ++round) {
        auto t0 = WallClock::now();
        futures::Future<long> root(*s);
        futures::Future<long> tail = root;
        for (long i = 0; i < n; ++i) tail = tail.then([](long v) { return v + 1; });
        double attach = ns_since(t0);
        auto t1 = WallClock::now();
        root.set_result(0);
        s->run();
        double run = ns_since(t1);
        if (!tail.done() || tail.result() != n) throw std::runtime_error("then chain: wrong result");
        result(lib, metric("ns_per_then", round), (attach + run) / static_cast<double>(n));
        result(lib, metric("ns_per_then_attach", round), attach / static_cast<double>(n));
        result(lib, metric("ns_per_then_run", round), run / static_cast<double>(n));
    }
}

void then_fanout(std::string_view lib, long n) {
    auto s = make_scheduler(lib);
    for (int round = 0; round < 2; ++round) {
        long sum = 0;
        auto t0 = WallClock::now();
        futures::Future<long> root(*s);
        for (long i = 0; i < n; ++i) {
            // The result futures are dropped: only the continuation's effect matters.
            (void)root.then([&sum](long v) { sum += v; });
        }
        root.set_result(1);
        s->run();
        double total = ns_since(t0);
        if (sum != n) throw std::runtime_error("then fan-out: not every continuation ran");
        result(lib, metric("ns_per_then_fanout", round), total / static_cast<double>(n));
    }
}

void pair(std::string_view lib, long n) {
    auto s = make_scheduler(lib);
    long sum = 0;
    auto t0 = WallClock::now();
    for (long i = 0; i < n; ++i) {
        futures::Future<long> f(*s);
        f.set_result(i);
        sum += f.result();
    }
    double total = ns_since(t0);
    if (sum != n * (n - 1) / 2) throw std::runtime_error("pair: wrong sum");
    result(lib, "ns_per_pair", total / static_cast<double>(n));
}

struct EmptyTask {
    futures::Step<void> resume() { return futures::finished; }
};

// In batches of kScopeBatch live tasks (a server's scope holds its live
// connections, not a million), on one loop. Round 1 grows the pools, round
// 2 is reported (as then/fanout do).
constexpr long kScopeBatch = 1000;

void scope_spawn(std::string_view lib, long n) {
    auto s = make_scheduler(lib);
    std::vector<futures::Future<void>> joins;
    joins.reserve(static_cast<std::size_t>(kScopeBatch));
    const long batches = (n + kScopeBatch - 1) / kScopeBatch;
    double bare = 0, scoped = 0;
    for (int round = 0; round < 2; ++round) {
        auto t0 = WallClock::now();
        for (long b = 0; b < batches; ++b) {
            for (long i = 0; i < kScopeBatch; ++i) joins.push_back(futures::spawn(*s, EmptyTask{}));
            s->run();
            for (auto& j : joins) j.result();
            joins.clear();
        }
        bare = ns_since(t0);

        t0 = WallClock::now();
        for (long b = 0; b < batches; ++b) {
            futures::Scope scope(*s);
            for (long i = 0; i < kScopeBatch; ++i) scope.spawn(EmptyTask{});
            futures::run_until_complete(*s, scope.close());
        }
        scoped = ns_since(t0);
    }
    const double tasks = static_cast<double>(batches * kScopeBatch);
    result(lib, "ns_per_task_bare", bare / tasks);
    result(lib, "ns_per_task_scope", scoped / tasks);
}

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: micro_futures then|fanout|pair|scope reactor-select|reactor-poll|reactor-epoll [N]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) usage();
    std::string_view bench = argv[1], lib = argv[2];
    long n = argc > 3 ? std::atol(argv[3]) : 1'000'000;
    if (n <= 0 || !lib.starts_with("reactor-")) usage();
    try {
        if (bench == "then") then_chain(lib, n);
        else if (bench == "fanout") then_fanout(lib, n);
        else if (bench == "pair") pair(lib, n);
        else if (bench == "scope") scope_spawn(lib, n);
        else usage();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "micro_futures %s %s: %s\n", argv[1], argv[2], e.what());
        return 1;
    }
    return 0;
}
