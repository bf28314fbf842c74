// Test support: the library's own suites on virtual time, a thin layer over
// the public testing kit (reactor/testing/, docs/testing.md). The names are
// the ones the suites have always used:
//   FakeClock     reactor::testing::VirtualClock
//   TestSelector  a VirtualSelector that also records every timeout the loop
//                 asked for, in order (nullopt = no limit)
//   FakeLoop      a VirtualLoop with a TestSelector, on the backend under test
// The loop asks to wait T, the selector polls the real backend without
// blocking, and if nothing is ready it jumps the clock by exactly T; a loop
// that would wait forever with nothing that could wake it throws instead of
// hanging the test. Loop thread only; the FakeClock must outlive the Scheduler.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include <reactor/scheduler.hpp>
#include <reactor/selector.hpp>
#include <reactor/testing/virtual_clock.hpp>
#include <reactor/testing/virtual_loop.hpp>
#include <reactor/testing/virtual_selector.hpp>

#include "support/backends.hpp"

namespace reactor_test {

using FakeClock = reactor::testing::VirtualClock;

class TestSelector final : public reactor::testing::VirtualSelector {
public:
    // How long a wait with nothing to jump to blocks for real before it throws.
    static constexpr std::chrono::seconds kMaxRealBlock{5};

    TestSelector(FakeClock& clock, std::unique_ptr<reactor::Selector> inner) : VirtualSelector(clock, std::move(inner)) {
        set_real_wait_limit(kMaxRealBlock);
    }

    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<reactor::FdEvent>& out) override {
        timeouts.push_back(timeout);
        VirtualSelector::wait(timeout, out);
    }

    // Every timeout the loop asked for, in order (nullopt = no limit).
    std::vector<std::optional<std::chrono::nanoseconds>> timeouts;
};

// A Scheduler on a FakeClock, its TestSelector wrapping the backend under test.
struct FakeLoop : reactor::testing::BasicVirtualLoop<TestSelector> {
    explicit FakeLoop(reactor::Backend backend = backend_under_test()) : BasicVirtualLoop(backend) {}
};

}  // namespace reactor_test
