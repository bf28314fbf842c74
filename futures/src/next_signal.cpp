// SPDX-License-Identifier: MIT
// next_signal: a future per wait, and one loop service per Scheduler that
// owns the signal handlers the waits share. The service holds every pending
// wait (a chain built on a wait whose handle was dropped must still run), and
// registers a signal's handler while some wait needs it, no longer.
#include "futures/next_signal.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include <reactor/live_item.hpp>
#include <reactor/loop_service.hpp>
#include <reactor/work_hold.hpp>

namespace futures {
namespace detail {
namespace {

class SignalWaitState;

class SignalWaits final : public reactor::LoopService {
public:
    explicit SignalWaits(reactor::Scheduler& sched) noexcept : LoopService(sched) {}

    // Registers the handlers `wait` needs and keeps it until it completes.
    // Throws (having registered nothing new) if a handler cannot be.
    void add(SignalWaitState& wait);
    // Forgets a wait that ended otherwise (cancelled), and the handlers only it needed.
    void remove(SignalWaitState& wait) noexcept;

    // Scheduler::close(): every wait is cancelled, as a hand-made future would be.
    void close() override {
        std::vector<Ref<SignalWaitState>> waits = waits_;
        for (auto& w : waits) cancel(*w);
    }
    // Nothing may run any more: every wait is cancelled silently, every handler removed.
    void abandon() noexcept override;

private:
    void deliver(int signo);
    void remove_unneeded_handlers() noexcept;
    bool needed(int signo) const noexcept;
    static void cancel(SignalWaitState& w);

    std::vector<Ref<SignalWaitState>> waits_;  // pending, oldest first
    std::vector<int> handled_;                 // signals whose handler this service registered
};

class SignalWaitState final : public State<int> {
public:
    SignalWaitState(reactor::Scheduler& sched, std::source_location where, std::vector<int> signals)
        : State<int>(sched, where, false), signals_(std::move(signals)) {}

    void start() {
        scheduler().service<SignalWaits>().add(*this);
        hold_ = scheduler().hold_work(reactor::LiveItem::Kind::future, "next_signal: waiting for a signal", origin());
    }

    const std::vector<int>& signals() const noexcept { return signals_; }
    bool waits_for(int signo) const noexcept { return std::find(signals_.begin(), signals_.end(), signo) != signals_.end(); }

    void deliver(int signo) {
        hold_.release();
        if (pending()) finish_value(signo);
    }
    void abandoned() noexcept {
        hold_.release();
        abandon("the Scheduler ended while this signal wait was pending");
    }

private:
    Ref<StateBase> cancel_step(bool& accepted) override {
        Ref<StateBase> next = State<int>::cancel_step(accepted);
        if (accepted) {
            hold_.release();
            scheduler().service<SignalWaits>().remove(*this);  // the caller holds a reference to us
        }
        return next;
    }

    std::vector<int> signals_;
    reactor::WorkHold hold_;
};

void SignalWaits::add(SignalWaitState& wait) {
    try {
        for (int signo : wait.signals()) {
            if (std::find(handled_.begin(), handled_.end(), signo) != handled_.end()) continue;
            scheduler().add_signal_handler(signo, [this, signo] { deliver(signo); }, wait.origin());
            handled_.push_back(signo);
        }
    } catch (...) {
        remove_unneeded_handlers();  // the ones just added for this wait
        throw;
    }
    waits_.emplace_back(&wait);
}

void SignalWaits::remove(SignalWaitState& wait) noexcept {
    std::erase_if(waits_, [&](const Ref<SignalWaitState>& w) { return w.get() == &wait; });
    remove_unneeded_handlers();
}

void SignalWaits::cancel(SignalWaitState& w) { w.cancel(); }

void SignalWaits::abandon() noexcept {
    std::vector<Ref<SignalWaitState>> waits = std::move(waits_);
    waits_.clear();
    for (auto& w : waits) w->abandoned();
    remove_unneeded_handlers();
}

// The handler of `signo`, on the loop thread: every wait for it completes.
void SignalWaits::deliver(int signo) {
    std::vector<Ref<SignalWaitState>> woken;
    std::erase_if(waits_, [&](const Ref<SignalWaitState>& w) {
        if (!w->waits_for(signo)) return false;
        woken.push_back(w);
        return true;
    });
    remove_unneeded_handlers();  // safe from inside the handler itself
    for (auto& w : woken) w->deliver(signo);
}

bool SignalWaits::needed(int signo) const noexcept {
    return std::any_of(waits_.begin(), waits_.end(), [&](const Ref<SignalWaitState>& w) { return w->waits_for(signo); });
}

void SignalWaits::remove_unneeded_handlers() noexcept {
    std::erase_if(handled_, [&](int signo) {
        if (needed(signo)) return false;
        try {
            scheduler().remove_signal_handler(signo);
        } catch (...) {  // only a number out of range throws, and ours were accepted
        }
        return true;
    });
}

}  // namespace
}  // namespace detail

Future<int> next_signal(reactor::Scheduler& sched, std::span<const int> signals, std::source_location where) {
    if (signals.empty()) throw std::invalid_argument("next_signal: no signal to wait for");
    std::vector<int> list(signals.begin(), signals.end());
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    return detail::launch<detail::SignalWaitState>(sched, where, std::move(list)).start();
}

}  // namespace futures
