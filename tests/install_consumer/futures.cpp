// SPDX-License-Identifier: MIT
// Futures from the installed headers: a chain, a sleep, when_all, and an
// exception type caught across the library boundary.
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>

using namespace std::chrono_literals;

int main() {
    reactor::Scheduler sched;
    futures::Future<int> doubled = futures::make_ready_future(sched, 21).then([](int v) { return v * 2; });
    futures::Future<void> slept = futures::sleep(sched, 1ms);
    futures::run_until_complete(sched, futures::when_all(slept));
    const int value = futures::run_until_complete(sched, doubled);
    bool timed_out = false;
    try {
        futures::run_until_complete(sched, futures::with_timeout(futures::sleep(sched, 1h), 1ms));
    } catch (const futures::TimeoutError&) {  // thrown inside libreactor_futures, caught here
        timed_out = true;
    }
    std::printf("futures: %d, timeout %s\n", value, timed_out ? "caught" : "missed");
    return value == 42 && timed_out ? 0 : 1;
}
