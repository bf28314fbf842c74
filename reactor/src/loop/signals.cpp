// SPDX-License-Identifier: MIT
// Signal handlers (add_signal_handler): a self-pipe on the loop's own eventfd.
// The sigaction handler may run on any thread, at any moment, so all it
// touches is a fixed process-wide table of lock-free atomics and, through the
// owner pointer it finds there, the owner's wake flag and eventfd. A Scheduler
// lets go of a signal (restores the disposition, clears its pointer) and then
// waits until no handler that might have read the pointer is still running,
// so none ever touches a destroyed Scheduler or writes to a closed fd.
// Everything else here is loop thread only; the handler runs as an ordinary
// callback, queued by dispatch_signals in the I/O phase.
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "reactor/scheduler.hpp"

namespace reactor {
namespace {

// One entry per signal number, for the whole process: a disposition is
// process-wide, so at most one Scheduler owns a signal at a time.
struct SignalEntry {
    std::atomic<Scheduler*> owner{nullptr};  // written by the loop thread; read by the handler
    std::atomic<bool> pending{false};        // set by the handler; cleared by the owner's loop
    struct sigaction previous {};            // the disposition the owner replaced; the owner's only
};

static_assert(std::atomic<Scheduler*>::is_always_lock_free && std::atomic<bool>::is_always_lock_free &&
                  std::atomic<int>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");

constinit SignalEntry g_signals[NSIG];

// Handlers running right now, on any thread (see release_signal).
constinit std::atomic<int> g_handlers_running{0};

std::string signal_name(int signo) {
    const char* abbrev = ::sigabbrev_np(signo);
    return abbrev ? fmt::format("SIG{} ({})", abbrev, signo) : fmt::format("signal {}", signo);
}

void check_signal_number(int signo, const char* operation) {
    if (signo <= 0 || signo >= NSIG) {
        throw std::invalid_argument(
            fmt::format("reactor: {}: {} is not a signal number (1..{})", operation, signo, NSIG - 1));
    }
}

// Signals a loop callback cannot stand in for: uncatchable ones, and faults,
// whose handler must fix the cause before returning (returning re-runs the
// faulting instruction, long before the loop could get to the callback).
const char* why_not_handled(int signo) {
    switch (signo) {
    case SIGKILL:
    case SIGSTOP:
        return "it cannot be caught";
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
        return "a fault cannot wait for the loop (the faulting instruction would run again first)";
    default:
        return nullptr;
    }
}

}  // namespace

// The sigaction handler. Async-signal-safe: lock-free atomics and write(2).
// The pending flag is stored before the wake flag is taken, and the loop
// clears the wake flag before it reads the pending flags (dispatch_signals),
// all sequentially consistent: either the loop sees this signal at its
// current wake-up, or this handler finds the wake flag clear and wakes it
// again.
void Scheduler::on_signal(int signo) noexcept {
    const int saved_errno = errno;
    g_handlers_running.fetch_add(1);
    SignalEntry& entry = g_signals[signo];
    if (Scheduler* owner = entry.owner.load()) {
        entry.pending.store(true);
        owner->wake();  // a failed write is not sticky: see Scheduler::wake
    }
    g_handlers_running.fetch_sub(1);
    errno = saved_errno;
}

void Scheduler::add_signal_handler(int signo, Callback cb, std::source_location where) {
    require_loop_thread("add_signal_handler", &where);
    check_signal_number(signo, "add_signal_handler");
    if (const char* why = why_not_handled(signo)) {
        throw std::invalid_argument(fmt::format("reactor: add_signal_handler: {}: {}", signal_name(signo), why));
    }
    if (!cb) throw std::invalid_argument("reactor: empty callback");
    if (signal_handling_.empty()) signal_handling_.resize(NSIG);

    Ref r = alloc_slot(std::move(cb), where, SlotKind::signal_handler);
    slots_[r.slot].fd = signo;
    if (live(signal_handling_[static_cast<std::size_t>(signo)])) {
        // A replacement: the disposition is ours already.
        free_slot(std::exchange(signal_handling_[static_cast<std::size_t>(signo)], r).slot);
        return;
    }
    SignalEntry& entry = g_signals[signo];
    Scheduler* expected = nullptr;
    if (!entry.owner.compare_exchange_strong(expected, this)) {
        free_slot(r.slot);
        throw std::logic_error(fmt::format(
            "reactor: add_signal_handler: {} is handled by another Scheduler (a disposition is process-wide: "
            "remove it there first)",
            signal_name(signo)));
    }
    // A flag left by an earlier owner's last, undispatched delivery is not ours.
    entry.pending.store(false);
    struct sigaction action {};
    action.sa_handler = &Scheduler::on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // other threads' blocking calls carry on instead of failing with EINTR
    if (::sigaction(signo, &action, &entry.previous) != 0) {
        const int error = errno;  // EINVAL: a number the C library keeps for itself
        entry.owner.store(nullptr);
        free_slot(r.slot);
        throw std::invalid_argument(
            fmt::format("reactor: add_signal_handler: {}: {}", signal_name(signo), std::strerror(error)));
    }
    signal_handling_[static_cast<std::size_t>(signo)] = r;
    ++signal_handlers_;
}

bool Scheduler::remove_signal_handler(int signo) {
    require_loop_thread("remove_signal_handler");
    check_signal_number(signo, "remove_signal_handler");
    if (static_cast<std::size_t>(signo) >= signal_handling_.size()) return false;
    Ref& entry = signal_handling_[static_cast<std::size_t>(signo)];
    if (!live(entry)) return false;
    const Ref old = std::exchange(entry, Ref{});
    --signal_handlers_;
    release_signal(signo);
    // A delivery already queued names the freed slot and is skipped.
    free_slot(old.slot);
    return true;
}

void Scheduler::remove_all_signal_handlers() noexcept {
    for (std::size_t signo = 1; signo < signal_handling_.size(); ++signo) {
        if (!live(signal_handling_[signo])) continue;
        signal_handling_[signo] = Ref{};
        --signal_handlers_;
        release_signal(static_cast<int>(signo));
    }
}

// The disposition goes back first, so a signal arriving from here on gets
// what it got before this Scheduler, not silence. Then the owner pointer is
// cleared, and the wait makes sure no handler still holds it: one that counted
// itself in after the wait saw zero loads the pointer after it was cleared.
// The pending flag is left to the next owner to clear (add_signal_handler):
// cleared here, late, it could erase a delivery meant for that owner.
void Scheduler::release_signal(int signo) noexcept {
    SignalEntry& entry = g_signals[signo];
    ::sigaction(signo, &entry.previous, nullptr);
    entry.owner.store(nullptr);
    while (g_handlers_running.load() != 0) ::sched_yield();
}

// Loop thread, from move_ready_io, after drain_threadsafe cleared the wake
// flag (see on_signal for why that order).
void Scheduler::dispatch_signals() {
    for (std::size_t signo = 1; signo < signal_handling_.size(); ++signo) {
        const Ref r = signal_handling_[signo];
        if (!live(r)) continue;
        std::atomic<bool>& pending = g_signals[signo].pending;
        if (pending.load() && pending.exchange(false)) ready_.push_back(r);
    }
}

}  // namespace reactor
