// SPDX-License-Identifier: MIT
// The virtual-time kit from the installed headers: an hour's timer runs at
// once, on virtual time.
#include <chrono>
#include <cstdio>

#include <reactor/scheduler.hpp>
#include <reactor/testing/virtual_loop.hpp>

using namespace std::chrono_literals;

int main() {
    const auto started = std::chrono::steady_clock::now();
    reactor::testing::VirtualLoop loop;
    reactor::Duration fired_at{};
    loop.sched.call_later(1h, [&] { fired_at = loop.clock.elapsed(); });
    loop.sched.run();
    const bool quick = std::chrono::steady_clock::now() - started < 60s;  // a bound, nothing near an hour
    std::printf("testing: the 1 h timer fired at %lld s of virtual time\n",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(fired_at).count()));
    return fired_at == 1h && quick ? 0 : 1;
}
