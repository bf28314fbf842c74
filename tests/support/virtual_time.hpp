// SPDX-License-Identifier: MIT
// Test support: the library's own suites on virtual time, through the public
// testing kit (reactor/testing/, docs/testing.md). A case's loop is the
// kit's own, on the backend under test:
//   reactor::testing::VirtualLoop loop(reactor_test::backend_under_test());
// (always pass the backend: VirtualLoop's default is select, which would run
// the case on select in every CTest run of the suite). Its VirtualClock
// (loop.clock) moves only when the loop would sleep: the selector polls the
// real backend without blocking, and if nothing is ready it jumps the clock
// by exactly the timeout the loop asked for; a loop that would wait forever
// with nothing that could wake it throws instead of hanging the test.
//
// What this header adds, for the cases that check the timeouts the loop
// asked its selector for:
//   TimeoutRecordingSelector  a VirtualSelector that records every timeout
//                             it is asked to wait, in order (nullopt = no limit)
//   TimeoutRecordingLoop      a BasicVirtualLoop on one (loop.selector->timeouts)
// Loop thread only.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <reactor/scheduler.hpp>
#include <reactor/selector.hpp>
#include <reactor/testing/virtual_clock.hpp>
#include <reactor/testing/virtual_loop.hpp>
#include <reactor/testing/virtual_selector.hpp>

#include "support/backends.hpp"

namespace reactor_test {

class TimeoutRecordingSelector final : public reactor::testing::VirtualSelector {
public:
    TimeoutRecordingSelector(reactor::testing::VirtualClock& clock, std::unique_ptr<reactor::Selector> inner)
        : VirtualSelector(clock, std::move(inner)) {}

    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<reactor::FdEvent>& out) override {
        timeouts.push_back(timeout);
        VirtualSelector::wait(timeout, out);
    }

    // Every timeout the loop asked for, in order (nullopt = no limit).
    std::vector<std::optional<std::chrono::nanoseconds>> timeouts;
};

// Construct it on the backend under test, as a VirtualLoop:
//   TimeoutRecordingLoop loop(backend_under_test());
using TimeoutRecordingLoop = reactor::testing::BasicVirtualLoop<TimeoutRecordingSelector>;

}  // namespace reactor_test
