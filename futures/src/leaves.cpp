// SPDX-License-Identifier: MIT
// Leaf futures: timers and fd readiness, each one state that also remembers
// how to take back what it asked of the Scheduler when cancelled.
#include "futures/leaves.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace futures {
namespace detail {
namespace {

// The callback a leaf gives the Scheduler. If the Scheduler destroys it without
// running it (it is being destroyed; an fd wait was dropped because the fd was
// closed or the waiter replaced), the leaf can never complete: it is cancelled,
// so a task waiting on it is released instead of leaking with it.
template <class S>
class Producer {
public:
    Producer(S* state, const char* dropped) noexcept : state_(state), dropped_(dropped) {}
    Producer(Producer&&) noexcept = default;
    Producer& operator=(Producer&&) = delete;
    ~Producer() {
        if (state_) state_->abandon(dropped_);
    }
    void operator()() {
        if (state_->pending()) state_->finish_value();
    }

private:
    Ref<S> state_;
    const char* dropped_;
};

// Done when its timer fires; cancelling cancels the timer (releasing it now).
class TimerState final : public State<void> {
public:
    TimerState(reactor::Scheduler& sched, std::source_location where) : State<void>(sched, where, false) {}

    template <class Schedule>
    void start(Schedule&& schedule) {
        timer_ = schedule(Producer<TimerState>(this, "the Scheduler dropped this timer"));
    }

    std::string waits_on() const override {
        const std::optional<reactor::TimePoint> due = timer_.deadline();
        if (!due) return "a timer";  // due already: its callback is on its way
        const reactor::Duration left = std::max(*due - scheduler().now(), reactor::Duration::zero());
        return fmt::format("a timer due in {:.3f} s", std::chrono::duration<double>(left).count());
    }

private:
    Ref<StateBase> cancel_step(bool& accepted) override {
        Ref<StateBase> next = State<void>::cancel_step(accepted);
        if (accepted) timer_.cancel();  // the caller holds a reference: we survive our callback's
        return next;
    }

    reactor::Handle timer_;
};

// Done when its fd is ready in one direction; cancelling removes the waiter.
class FdState final : public State<void> {
public:
    FdState(reactor::Scheduler& sched, std::source_location where, int fd, bool read)
        : State<void>(sched, where, false), fd_(fd), read_(read) {}

    void start() {
        const char* dropped =
            "the Scheduler dropped this fd wait (the fd was closed or its waiter replaced, or the loop is gone)";
        if (read_) {
            scheduler().read_wait(fd_, Producer<FdState>(this, dropped), origin());
        } else {
            scheduler().write_wait(fd_, Producer<FdState>(this, dropped), origin());
        }
    }

    std::string waits_on() const override {
        return fmt::format("fd {} to become {}", fd_, read_ ? "readable" : "writable");
    }

private:
    Ref<StateBase> cancel_step(bool& accepted) override {
        Ref<StateBase> next = State<void>::cancel_step(accepted);
        if (accepted) {
            if (read_) {
                scheduler().remove_reader(fd_);
            } else {
                scheduler().remove_writer(fd_);
            }
        }
        return next;
    }

    int fd_;
    bool read_;
};

Future<void> make_fd_wait(reactor::Scheduler& sched, int fd, bool read, std::source_location where) {
    return launch<FdState>(sched, where, fd, read).start();  // a bad fd throws std::invalid_argument
}

}  // namespace

Future<void> make_sleep(reactor::Scheduler& sched, reactor::Duration delay, std::source_location where) {
    return launch<TimerState>(sched, where).start(
        [&](reactor::Callback cb) { return sched.call_later(delay, std::move(cb), where); });
}

}  // namespace detail

Future<void> sleep_until(reactor::Scheduler& sched, reactor::TimePoint deadline, std::source_location where) {
    return detail::launch<detail::TimerState>(sched, where).start(
        [&](reactor::Callback cb) { return sched.call_at(deadline, std::move(cb), where); });
}

Future<void> readable(reactor::Scheduler& sched, int fd, std::source_location where) {
    return detail::make_fd_wait(sched, fd, true, where);
}

Future<void> writable(reactor::Scheduler& sched, int fd, std::source_location where) {
    return detail::make_fd_wait(sched, fd, false, where);
}

Future<void> make_ready_future(reactor::Scheduler& sched, std::source_location where) {
    return detail::launch<detail::State<void>>(sched, where, false).done();
}

}  // namespace futures
