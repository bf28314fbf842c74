// SPDX-License-Identifier: MIT
// The toolkit from the installed headers: a bounded Queue, an Event, a
// Semaphore and a Lock.
#include <cstdio>
#include <optional>
#include <vector>

#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>

int main() {
    reactor::Scheduler sched;
    futures::Queue<int> queue(sched, 2);
    std::vector<futures::Future<void>> puts;
    for (int i = 1; i <= 3; ++i) puts.push_back(queue.put(i));  // the third waits for room
    int sum = 0;
    for (int i = 0; i < 3; ++i) sum += futures::run_until_complete(sched, queue.get());
    futures::run_until_complete(sched, futures::when_all(puts));

    futures::Event ready(sched);
    futures::Future<void> waiting = ready.wait();
    sched.call_soon([&] { ready.set(); });
    futures::run_until_complete(sched, waiting);

    futures::Semaphore sem(sched, 1);
    std::optional<futures::Permit> permit = futures::run_until_complete(sched, sem.acquire());
    const bool second_waits = !sem.try_acquire().has_value();
    permit.reset();

    futures::Lock lock(sched);
    const bool lock_free = lock.try_acquire().has_value();
    std::printf("toolkit: queue sum %d, event set, semaphore %s, lock %s\n", sum,
                second_waits ? "limits" : "does not limit", lock_free ? "taken" : "busy");
    return sum == 6 && second_waits && lock_free && sem.available() == 1 ? 0 : 1;
}
