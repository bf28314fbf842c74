// SPDX-License-Identifier: MIT
// The loop from the installed headers: callbacks, a timer, the version the
// headers say and the one the library says (they differ only if the program
// runs against another build of the shared library).
#include <chrono>
#include <cstdio>
#include <cstring>

#include <reactor/scheduler.hpp>
#include <reactor/version.hpp>

static_assert(REACTOR_VERSION == REACTOR_MAKE_VERSION(REACTOR_VERSION_MAJOR, REACTOR_VERSION_MINOR, REACTOR_VERSION_PATCH));

int main() {
    reactor::Scheduler sched;
    int ran = 0;
    sched.call_soon([&] { ++ran; });
    sched.call_later(std::chrono::milliseconds(1), [&] { ++ran; });
    sched.call_soon([&] { sched.call_soon([&] { ++ran; }); });
    sched.run();
    const bool same_version = std::strcmp(reactor::version_string(), REACTOR_VERSION_STRING) == 0;
    std::printf("scheduler: %d callbacks ran, version %s (headers %s)\n", ran, reactor::version_string(),
                REACTOR_VERSION_STRING);
    return ran == 3 && same_version ? 0 : 1;
}
