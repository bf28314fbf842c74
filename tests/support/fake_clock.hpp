// Test support: a manual clock and a Selector wrapper that makes time pass
// only when the loop would sleep (asyncio's TestLoop + TestSelector idea).
//
// With them, timer tests run instantly and deterministically: the loop asks
// to wait T, the wrapper polls the real selector without blocking, and if
// nothing is ready it advances the fake clock by exactly T. Real fds still
// work (the wrapped selector is a real backend), so the same loop can mix
// pipes and timers. Loop thread only; the FakeClock must outlive the Scheduler.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <reactor/scheduler.hpp>
#include <reactor/selector.hpp>

#include "support/backends.hpp"

namespace reactor_test {

// A monotonic clock that moves only when told to. Starts far from the epoch
// so that "now - something" never underflows.
class FakeClock {
public:
    reactor::TimePoint now() const noexcept { return now_; }
    void advance(reactor::Duration d) noexcept {
        if (d > reactor::Duration::zero()) now_ += d;  // never backwards: it must stay monotonic
    }
    // For Scheduler::Options::clock. Captures `this`: keep the clock alive.
    reactor::ClockFunction function() {
        return [this] { return now_; };
    }

private:
    reactor::TimePoint now_ = reactor::TimePoint{} + std::chrono::hours(1000);
};

// Wraps a real Selector. wait(timeout) first polls the real one with a zero
// timeout; only if nothing is ready does it "sleep": with a finite timeout it
// advances the fake clock by exactly that timeout (and returns); with no
// timeout it blocks in the real selector for up to kMaxRealBlock and, if still
// nothing came, throws instead of hanging the test (a loop waiting forever
// with nothing that could wake it is a bug). Every requested timeout is recorded.
class TestSelector final : public reactor::Selector {
public:
    static constexpr std::chrono::seconds kMaxRealBlock{5};

    TestSelector(FakeClock& clock, std::unique_ptr<reactor::Selector> inner)
        : clock_(clock), inner_(std::move(inner)) {}

    std::string_view name() const noexcept override { return inner_->name(); }
    void set_interest(int fd, reactor::Interest interest) override { inner_->set_interest(fd, interest); }
    bool has_pending_changes() const noexcept override { return inner_->has_pending_changes(); }
    void forget(int fd) noexcept override { inner_->forget(fd); }

    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<reactor::FdEvent>& out) override {
        timeouts.push_back(timeout);
        std::size_t before = out.size();
        inner_->wait(std::chrono::nanoseconds::zero(), out);
        if (out.size() != before) return;  // something is ready: no time passes
        if (timeout) {
            clock_.advance(std::chrono::ceil<reactor::Duration>(*timeout));
        } else {
            inner_->wait(kMaxRealBlock, out);
            if (out.size() == before) {
                throw std::runtime_error("TestSelector: the loop waits forever with nothing ready (it would hang)");
            }
        }
    }

    // Every timeout the loop asked for, in order (nullopt = no limit).
    std::vector<std::optional<std::chrono::nanoseconds>> timeouts;

private:
    FakeClock& clock_;
    std::unique_ptr<reactor::Selector> inner_;
};

// A Scheduler on a FakeClock, its TestSelector wrapping a real backend.
// Members are declared in construction order: the clock outlives the loop.
struct FakeLoop {
    explicit FakeLoop(reactor::Backend backend = backend_under_test())
        : sched(make_options(clock, selector, backend)) {}

    FakeClock clock;
    TestSelector* selector = nullptr;  // owned by sched
    reactor::Scheduler sched;

private:
    static reactor::Scheduler::Options make_options(FakeClock& clock, TestSelector*& out, reactor::Backend backend) {
        auto sel = std::make_unique<TestSelector>(clock, reactor::make_selector(backend));
        out = sel.get();
        reactor::Scheduler::Options options;
        options.selector = std::move(sel);
        options.clock = clock.function();
        return options;
    }
};

}  // namespace reactor_test
