// SPDX-License-Identifier: MIT
// bench/executor: the thread pool's round trip against Asio's, and the echo
// path while the pool is busy. Driven by bench/executor/compare.
//
//   executor_bench roundtrip <lib> [N]
//       One job at a time, N times: the loop thread hands an empty job to a
//       one-thread pool, the worker runs it, the result comes back to the
//       loop, which submits the next. Wall ns per job.
//       <lib>: reactor       ThreadPool::submit, done on the loop (epoll backend)
//              futures       run_in_executor + a state-machine task awaiting it
//              asio          asio::thread_pool(1), post to it, post back to an
//                            io_context (a bare one: no reactor, it waits on a
//                            condition variable)
//              asio-reactor  the same with a socket open on the io_context, so
//                            it waits in epoll and is woken through its
//                            eventfd, as our loop is
//       Output: "RESULT roundtrip <lib> ns_per_job <value>".
//
//   executor_bench echo none|busy [PORT]
//       The callback echo server (epoll). busy: a one-thread pool, its worker
//       pinned to CPU 1, runs CPU-bound jobs back to back (about 1 ms of
//       arithmetic each; every completion comes back to the loop, which
//       submits the next), so the loop serves the echo clients while results
//       keep arriving. Prints "listening on 127.0.0.1:PORT (epoll)", then runs
//       until killed (compare bounds it with timeout).
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <asio.hpp>
#include <futures/executor.hpp>
#include <futures/futures.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/thread_pool.hpp>

namespace {

using Clock = std::chrono::steady_clock;

double ns_per(Clock::time_point t0, long n) {
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / static_cast<double>(n);
}

void result(const char* lib, double value) { std::printf("RESULT roundtrip %s ns_per_job %.1f\n", lib, value); }

reactor::Scheduler::Options epoll_options() {
    reactor::Scheduler::Options options;
    options.backend = reactor::Backend::epoll;
    return options;
}

void roundtrip_reactor(long n) {
    reactor::Scheduler sched(epoll_options());
    reactor::ThreadPool pool(1);
    long left = n;
    struct Next {
        reactor::Scheduler* sched;
        reactor::ThreadPool* pool;
        long* left;
        void operator()(reactor::JobResult<void>&&) const {
            if (--*left > 0) (void)pool->submit(*sched, [] {}, *this);
        }
    };
    const auto t0 = Clock::now();
    (void)pool.submit(sched, [] {}, Next{&sched, &pool, &left});
    sched.run();
    result("reactor", ns_per(t0, n));
}

// A task that awaits n jobs one after the other.
class Jobs {
public:
    Jobs(reactor::Scheduler& s, reactor::ThreadPool& p, long n) : s_(&s), p_(&p), left_(n) {}
    futures::Step<void> resume() {
        if (left_-- == 0) return futures::finished;
        return job_ = futures::run_in_executor(*s_, *p_, [] {});
    }

private:
    reactor::Scheduler* s_;
    reactor::ThreadPool* p_;
    long left_;
    futures::Future<void> job_;
};

void roundtrip_futures(long n) {
    reactor::Scheduler sched(epoll_options());
    reactor::ThreadPool pool(1);
    const auto t0 = Clock::now();
    futures::run_until_complete(sched, futures::spawn(sched, Jobs(sched, pool, n)));
    result("futures", ns_per(t0, n));
}

void roundtrip_asio(long n, bool with_reactor) {
    asio::io_context io;
    std::optional<asio::ip::tcp::socket> sock;
    if (with_reactor) sock.emplace(io, asio::ip::tcp::v4());
    auto guard = asio::make_work_guard(io);
    asio::thread_pool pool(1);
    long left = n;
    struct Next {
        asio::io_context* io;
        asio::thread_pool* pool;
        long* left;
        decltype(guard)* g;
        void operator()() const {
            if (--*left == 0) return g->reset();
            Next self = *this;
            asio::post(*pool, [self] { asio::post(*self.io, self); });
        }
    };
    const auto t0 = Clock::now();
    Next first{&io, &pool, &left, &guard};
    asio::post(pool, [first] { asio::post(*first.io, first); });
    io.run();
    result(with_reactor ? "asio-reactor" : "asio", ns_per(t0, n));
    pool.join();
}

// About 1 ms of arithmetic that the optimizer cannot drop.
unsigned long spin() {
    volatile unsigned long x = 1;
    for (int i = 0; i < 400000; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

void pin_to_cpu(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

int echo(bool busy, std::uint16_t port) {
    reactor::Scheduler sched(epoll_options());
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(port), [](const reactor::ConnectionPtr& c) {
        c->set_data_callback([](reactor::Connection& conn, std::string_view d) { conn.write(d); });
    });
    reactor::ThreadPool pool(1);
    unsigned long jobs = 0;
    struct Again {
        reactor::Scheduler* sched;
        reactor::ThreadPool* pool;
        unsigned long* jobs;
        void operator()(reactor::JobResult<unsigned long>&&) const {
            ++*jobs;
            (void)pool->submit(*sched, spin, *this);
        }
    };
    if (busy) {
        (void)pool.submit(sched, [] { pin_to_cpu(1); }, [](reactor::JobResult<void>&&) {});
        (void)pool.submit(sched, spin, Again{&sched, &pool, &jobs});
    }
    std::printf("listening on 127.0.0.1:%u (epoll)\n", listener->address().port());
    std::fflush(stdout);
    sched.run();
    return 0;
}

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: executor_bench roundtrip reactor|futures|asio|asio-reactor [N]\n"
                 "       executor_bench echo none|busy [PORT]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) usage();
    const std::string_view what = argv[1], mode = argv[2];
    if (what == "roundtrip") {
        const long n = argc > 3 ? std::atol(argv[3]) : 200000;
        if (n <= 0) usage();
        if (mode == "reactor") roundtrip_reactor(n);
        else if (mode == "futures") roundtrip_futures(n);
        else if (mode == "asio") roundtrip_asio(n, false);
        else if (mode == "asio-reactor") roundtrip_asio(n, true);
        else usage();
        return 0;
    }
    if (what == "echo" && (mode == "none" || mode == "busy"))
        return echo(mode == "busy", static_cast<std::uint16_t>(argc > 3 ? std::atoi(argv[3]) : 0));
    usage();
}
