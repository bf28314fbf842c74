// SPDX-License-Identifier: MIT
// reactor::testing::VirtualLoop: a Scheduler on virtual time, for users'
// tests of timer-heavy code. The loop's clock is a VirtualClock, its selector
// a VirtualSelector around a real backend: whenever nothing is ready, time
// jumps to the next deadline, so a 24-hour retry schedule runs in
// milliseconds and does the same thing on every run.
//
//     reactor::testing::VirtualLoop loop;
//     loop.sched.call_later(24h, [&] { ... });
//     loop.sched.run();                      // returns at once
//     assert(loop.clock.elapsed() == 24h);
//
// Everything built on the Scheduler runs on it unchanged: timers, periodic
// timers, run_for, connection deadlines, futures and their timeouts. Real fds
// too (sockets on 127.0.0.1, pipes); FdScript fakes readiness without them;
// a TimeHold keeps time still while real I/O is in flight (see
// virtual_selector.hpp). docs/testing.md shows the pattern. Loop thread only.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

#include "reactor/scheduler.hpp"
#include "reactor/selector.hpp"
#include "reactor/testing/fd_script.hpp"
#include "reactor/testing/virtual_clock.hpp"
#include "reactor/testing/virtual_selector.hpp"

namespace reactor::testing {

// SelectorT: VirtualSelector or a class derived from it with the same
// constructor (a test's own recording selector, say). The members are
// declared in construction order: the clock outlives the Scheduler, which
// owns the selector.
template <class SelectorT>
class BasicVirtualLoop {
    static_assert(std::is_base_of_v<VirtualSelector, SelectorT>, "SelectorT must derive from VirtualSelector");

public:
    // `backend` is the real backend inside: the one real fds are watched with.
    explicit BasicVirtualLoop(Backend backend = Backend::select) : sched(make_options(clock, selector, backend)) {}
    BasicVirtualLoop(const BasicVirtualLoop&) = delete;
    BasicVirtualLoop& operator=(const BasicVirtualLoop&) = delete;

    VirtualClock clock;
    SelectorT* selector = nullptr;  // owned by sched
    Scheduler sched;

    // Shorthands for the selector's script and holds.
    FdScript& script() noexcept { return selector->script(); }
    TimeHold hold_time() noexcept { return selector->hold_time(); }

private:
    static Scheduler::Options make_options(VirtualClock& clock, SelectorT*& out, Backend backend) {
        auto sel = std::make_unique<SelectorT>(clock, make_selector(backend));
        out = sel.get();
        Scheduler::Options options;
        options.selector = std::move(sel);
        options.clock = clock.function();
        return options;
    }
};

using VirtualLoop = BasicVirtualLoop<VirtualSelector>;

}  // namespace reactor::testing
