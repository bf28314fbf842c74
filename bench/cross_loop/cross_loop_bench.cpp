// SPDX-License-Identifier: MIT
// bench/cross_loop: posting from one thread to another thread's loop, ours
// (call_soon_threadsafe) against Asio (post to another io_context) and libuv
// (uv_async_send over a mutex-guarded queue, the libuv idiom: uv_async_t
// carries no data). Driven by bench/cross_loop/compare.
//
//   cross_loop_bench post <lib> [N]
//       One producer thread posts N small callbacks (each bumps a counter
//       owned by the target) to a loop kept busy on its own thread (it always
//       has work: a callback that reschedules itself; Asio a handler that
//       re-posts itself; libuv an idle handle, which makes its poll
//       non-blocking). Wall ns per post, from the first post to the target
//       having run the last; and, where it can be counted, the wake-ups per
//       post (ours: eventfd writes, stats().wakeup_writes; libuv: async
//       callbacks run, at most one per write it made; Asio: not observable).
//       Output: "RESULT post <lib> ns_per_post <v> wakeups_per_post <v|na>".
//
//   cross_loop_bench pingpong <lib> [N]
//       Two idle loops on two threads bounce one message N times: each
//       receiver is asleep in its selector when the message comes. Wall ns
//       per round trip. Output: "RESULT pingpong <lib> ns_per_roundtrip <v>".
//
// <lib>: reactor (epoll backend), asio, libuv.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <asio.hpp>
#include <reactor/loop_group.hpp>
#include <reactor/scheduler.hpp>
#include <uv.h>

namespace {

using Clock = std::chrono::steady_clock;

double ns_per(Clock::duration d, long n) {
    return std::chrono::duration<double, std::nano>(d).count() / static_cast<double>(n);
}

reactor::Scheduler::Options epoll_options() {
    reactor::Scheduler::Options options;
    options.backend = reactor::Backend::epoll;
    return options;
}

// ---------------------------------------------------------------- post

// The count of posts run: written by the target loop once per post, so on a
// cache line of its own. Beside the producer's locals (its stack, where each
// post's callback is built) or the queue's header, every increment would take
// the producer's line away, and the benchmark would time that false sharing,
// by the luck of the stack layout, instead of the post.
struct alignas(64) Received {
    long value = 0;
};

void post_reactor(long n) {
    reactor::Scheduler target(epoll_options());
    Received received;  // target thread only
    std::atomic<bool> ready{false};
    Clock::time_point end;
    std::function<void()> busy = [&] {
        if (received.value == n) {
            end = Clock::now();
            target.stop();
            return;
        }
        target.call_soon([&] { busy(); });
    };
    target.call_soon([&] {
        ready = true;
        busy();
    });
    std::thread loop([&] { target.run_forever(); });
    while (!ready.load()) std::this_thread::yield();
    const Clock::time_point start = Clock::now();
    for (long i = 0; i < n; ++i) target.call_soon_threadsafe([&received] { ++received.value; });
    loop.join();
    const reactor::LoopStats st = target.stats();
    std::printf("RESULT post reactor ns_per_post %.1f wakeups_per_post %.6f\n", ns_per(end - start, n),
                static_cast<double>(st.wakeup_writes) / static_cast<double>(n));
}

void post_asio(long n) {
    asio::io_context target(1);
    Received received;
    std::atomic<bool> ready{false};
    Clock::time_point end;
    auto guard = asio::make_work_guard(target);
    std::function<void()> busy = [&] {
        if (received.value == n) {
            end = Clock::now();
            guard.reset();
            target.stop();
            return;
        }
        asio::post(target, [&] { busy(); });
    };
    asio::post(target, [&] {
        ready = true;
        busy();
    });
    std::thread loop([&] { target.run(); });
    while (!ready.load()) std::this_thread::yield();
    const Clock::time_point start = Clock::now();
    for (long i = 0; i < n; ++i) asio::post(target, [&received] { ++received.value; });
    loop.join();
    std::printf("RESULT post asio ns_per_post %.1f wakeups_per_post na\n", ns_per(end - start, n));
}

// libuv: the posted callbacks wait in a queue under a mutex; uv_async_send
// wakes the loop (libuv coalesces: one async callback for many sends).
struct UvTarget {
    uv_loop_t loop;
    uv_async_t async;
    uv_idle_t idle;
    std::mutex mutex;
    std::vector<std::function<void()>> queue, batch;
    long async_runs = 0;
    long n = 0;
    Received received;
    Clock::time_point end;
};

void post_libuv(long n) {
    UvTarget t;
    t.n = n;
    uv_loop_init(&t.loop);
    t.async.data = &t;
    uv_async_init(&t.loop, &t.async, [](uv_async_t* a) {
        auto& t = *static_cast<UvTarget*>(a->data);
        ++t.async_runs;
        {
            std::lock_guard lock(t.mutex);
            t.batch.swap(t.queue);
        }
        for (auto& f : t.batch) f();
        t.batch.clear();
        if (t.received.value == t.n) {
            t.end = Clock::now();
            uv_stop(&t.loop);
        }
    });
    t.idle.data = &t;
    uv_idle_init(&t.loop, &t.idle);
    uv_idle_start(&t.idle, [](uv_idle_t*) {});  // busy: poll never blocks
    std::thread loop([&] { uv_run(&t.loop, UV_RUN_DEFAULT); });
    const Clock::time_point start = Clock::now();
    for (long i = 0; i < n; ++i) {
        {
            std::lock_guard lock(t.mutex);
            t.queue.emplace_back([&t] { ++t.received.value; });
        }
        uv_async_send(&t.async);
    }
    loop.join();
    std::printf("RESULT post libuv ns_per_post %.1f wakeups_per_post %.6f\n", ns_per(t.end - start, n),
                static_cast<double>(t.async_runs) / static_cast<double>(n));
    uv_close(reinterpret_cast<uv_handle_t*>(&t.async), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&t.idle), nullptr);
    uv_run(&t.loop, UV_RUN_DEFAULT);
    uv_loop_close(&t.loop);
}

// ---------------------------------------------------------------- ping-pong

void pingpong_reactor(long n) {
    reactor::LoopGroupOptions options;
    options.loops = 2;
    options.loop_options = [](std::size_t) { return epoll_options(); };
    reactor::LoopGroup group(options);
    reactor::Scheduler& a = group.loop(0);
    reactor::Scheduler& b = group.loop(1);
    std::atomic<bool> done{false};
    std::function<void(long)> ping = [&](long left) {
        if (left == 0) {
            done = true;
            return;
        }
        b.call_soon_threadsafe([&, left] { a.call_soon_threadsafe([&, left] { ping(left - 1); }); });
    };
    group.start();
    const Clock::time_point start = Clock::now();
    a.call_soon_threadsafe([&] { ping(n); });
    while (!done.load()) std::this_thread::yield();
    const Clock::time_point end = Clock::now();
    group.stop();
    std::printf("RESULT pingpong reactor ns_per_roundtrip %.1f\n", ns_per(end - start, n));
}

void pingpong_asio(long n) {
    asio::io_context a(1), b(1);
    auto ga = asio::make_work_guard(a);
    auto gb = asio::make_work_guard(b);
    std::atomic<bool> done{false};
    std::function<void(long)> ping = [&](long left) {
        if (left == 0) {
            done = true;
            return;
        }
        asio::post(b, [&, left] { asio::post(a, [&, left] { ping(left - 1); }); });
    };
    std::thread ta([&] { a.run(); });
    std::thread tb([&] { b.run(); });
    const Clock::time_point start = Clock::now();
    asio::post(a, [&] { ping(n); });
    while (!done.load()) std::this_thread::yield();
    const Clock::time_point end = Clock::now();
    ga.reset();
    gb.reset();
    a.stop();
    b.stop();
    ta.join();
    tb.join();
    std::printf("RESULT pingpong asio ns_per_roundtrip %.1f\n", ns_per(end - start, n));
}

// One message in flight: each side's async handle is its mailbox.
struct UvSide {
    uv_loop_t loop;
    uv_async_t async;
    UvSide* other = nullptr;
    std::atomic<long>* left = nullptr;
    std::atomic<bool>* done = nullptr;
    bool is_a = false;
};

void pingpong_libuv(long n) {
    UvSide a, b;
    std::atomic<long> left{n};
    std::atomic<bool> done{false};
    for (UvSide* s : {&a, &b}) {
        uv_loop_init(&s->loop);
        s->async.data = s;
        s->left = &left;
        s->done = &done;
        uv_async_init(&s->loop, &s->async, [](uv_async_t* h) {
            auto* s = static_cast<UvSide*>(h->data);
            if (s->done->load()) {
                uv_close(reinterpret_cast<uv_handle_t*>(h), nullptr);
                return;
            }
            if (s->is_a && s->left->fetch_sub(1) == 0) {
                s->done->store(true);
                uv_async_send(&s->other->async);  // tell b to close too
                uv_close(reinterpret_cast<uv_handle_t*>(h), nullptr);
                return;
            }
            uv_async_send(&s->other->async);
        });
    }
    a.other = &b;
    b.other = &a;
    a.is_a = true;
    std::thread ta([&] { uv_run(&a.loop, UV_RUN_DEFAULT); });
    std::thread tb([&] { uv_run(&b.loop, UV_RUN_DEFAULT); });
    const Clock::time_point start = Clock::now();
    uv_async_send(&b.async);
    while (!done.load()) std::this_thread::yield();
    const Clock::time_point end = Clock::now();
    ta.join();
    tb.join();
    uv_loop_close(&a.loop);
    uv_loop_close(&b.loop);
    std::printf("RESULT pingpong libuv ns_per_roundtrip %.1f\n", ns_per(end - start, n));
}

int usage() {
    std::fprintf(stderr, "usage: cross_loop_bench post|pingpong reactor|asio|libuv [N]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) return usage();
    const std::string_view what = argv[1];
    const std::string_view lib = argv[2];
    const long n = argc > 3 ? std::atol(argv[3]) : (what == "post" ? 1'000'000 : 20'000);
    if (n <= 0) return usage();
    if (what == "post") {
        if (lib == "reactor") post_reactor(n);
        else if (lib == "asio") post_asio(n);
        else if (lib == "libuv") post_libuv(n);
        else return usage();
    } else if (what == "pingpong") {
        if (lib == "reactor") pingpong_reactor(n);
        else if (lib == "asio") pingpong_asio(n);
        else if (lib == "libuv") pingpong_libuv(n);
        else return usage();
    } else {
        return usage();
    }
    return 0;
}
