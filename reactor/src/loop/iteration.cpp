// SPDX-License-Identifier: MIT
// One iteration of the loop, in the five phases of the comment below; the
// only place user callbacks are invoked. Entered from the run entry points
// in scheduler.cpp. Loop thread only.
#include "reactor/scheduler.hpp"
#include "reactor/kernel.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>


namespace reactor {

// One iteration, in phases (asyncio's _run_once, libuv's uv_run):
//  1. compute_timeout: 0 if anything is ready (or stop() was called), else until
//     the earliest live deadline (by the clock as it is now, read afresh),
//     else no limit; never past run_for's end.
//     Cancelled timers at the top of the heap are dropped here so they cannot
//     cause an early wake-up.
//  2. poll_io: block in the selector, then mark the clock to be read (once, on
//     first use). When there is nothing to wait for (timeout 0) and no fd to
//     watch but our own wakeup eventfd, the selector is not called: the
//     inbox_.wake_pending flag already says whether anything was posted. A chain of
//     call_soon callbacks therefore costs no system call per iteration (libuv
//     likewise skips the poll when it watches nothing).
//  3. move_ready_io: due fd waiters (and posts from other threads, and
//     signals received) join the ready queue; nothing user-written runs yet.
//  4. move_due_timers: every timer with deadline <= now joins the ready queue
//     in (deadline, seq) order, all before any runs, so a zero-delay timer that
//     re-arms itself lands in the next iteration and cannot starve I/O.
//  5. run_ready: run exactly the callbacks that were ready when this phase
//     began; whatever they schedule runs in the next iteration, after the next
//     poll. This is the only place user callbacks are invoked.
// Measurement points for stats() and debug mode: the counters are always
// kept; the wait in the selector and every callback are timed in debug mode
// only (a clock read each), and the choice is made once per wait and once
// per batch, never per callback.
void Scheduler::run_once_unguarded() {
    ++stats_.iterations;
    poll_io(compute_timeout());
    move_ready_io();
    move_due_timers();
    run_ready();
}

std::optional<std::chrono::nanoseconds> Scheduler::compute_timeout() {
    if (!ready_.empty() || stopping_ || inbox_.look_for_posts.load(std::memory_order_relaxed))
        return std::chrono::nanoseconds::zero();
    while (!timers_.empty() && !timer_live(timers_.earliest())) {
        timers_.pop();
        --timers_.dead;
    }
    if (timers_.empty() && run_limit_ == TimePoint::max()) return std::nullopt;
    // About to block until a deadline: count from the clock as it is, not as
    // cached when this iteration's callbacks started, or the time they took
    // would be slept again (every timer late by that much, run_for past its
    // end). One clock read, before a wait that costs a system call anyway.
    const TimePoint t = read_clock();
    std::optional<std::chrono::nanoseconds> timeout;
    if (!timers_.empty()) timeout = std::max(timers_.earliest().deadline - t, Duration::zero());
    if (run_limit_ != TimePoint::max()) {
        const std::chrono::nanoseconds left = std::max(run_limit_ - t, Duration::zero());
        if (!timeout || *timeout > left) timeout = left;
    }
    return timeout;
}

// The selector still gets the call when it has registrations to bring up to
// date (epoll's batched epoll_ctl): a closed fd must leave the kernel's set
// before its number can come back.
bool Scheduler::nothing_to_poll(std::optional<std::chrono::nanoseconds> timeout) const {
    return fds_.waiters == 0 && timeout == std::chrono::nanoseconds::zero() && !selector_->has_pending_changes();
}

void Scheduler::poll_io(std::optional<std::chrono::nanoseconds> timeout) {
    events_.clear();
    polled_ = !nothing_to_poll(timeout);
    if (polled_) {
        ++stats_.selector_waits;
        if (debug_.on) [[unlikely]] {
            const TimePoint before = read_clock();
            wait_announced(timeout);
            // This is the read now() would make first: keep it.
            now_ = read_clock();
            now_stale_ = false;
            stats_.selector_time += now_ - before;
            return;
        }
        wait_announced(timeout);
    }
    now_stale_ = true;
}

// A wait that may block is announced first (inbox_.asleep), and the posts are
// looked at after the announcement: a post made before it is seen here (the
// wait does not block), one made after it finds the loop asleep and writes
// the eventfd (see wake()). A wait with a zero timeout is not announced, so
// a busy loop is never written to.
// A wake-up whose write failed leaves inbox_.look_for_posts set and nobody to wake
// the loop: so no wait is longer than wakeup_recheck_ (a wait cut short only
// iterates; the timers' deadlines are computed again next time).
void Scheduler::wait_announced(std::optional<std::chrono::nanoseconds> timeout) {
    if (timeout == std::chrono::nanoseconds::zero()) {
        wait_in_selector(timeout);
        return;
    }
    if (wakeup_recheck_ != std::chrono::nanoseconds::zero() && (!timeout || *timeout > wakeup_recheck_))
        timeout = wakeup_recheck_;
    inbox_.asleep.store(true);
    if (inbox_.wake_pending.load()) timeout = std::chrono::nanoseconds::zero();
    try {
        wait_in_selector(timeout);
    } catch (...) {
        inbox_.asleep.store(false, std::memory_order_relaxed);
        throw;
    }
    // A simulated host's loop rests after a wait that found nothing: it stays
    // announced, so that a post reaches its kernel (Kernel::loop_rests).
    if (kernel_ == nullptr || !kernel_->loop_rests()) inbox_.asleep.store(false, std::memory_order_relaxed);
}

// Whether this iteration takes what other threads posted (inbox_.wake_pending
// says there is something). A loop that called its selector, or has nothing
// else to run, takes it at once. A loop kept busy by callbacks alone (a
// call_soon chain: no system call per iteration, so its iterations are
// short) takes it once every kPostTakeBudget callbacks. Taking the queue
// moves its cache lines to the loop's CPU and a poster pays to bring them
// back, so a queue taken at every short iteration costs each post a cache
// miss or two; taken in batches, it costs one per batch. (libuv's async
// handle and Netty's task queue are taken once per iteration, but their
// iterations all call the selector.) A post then waits at most that many
// callbacks longer; no clock is read to decide.
bool Scheduler::take_posts_now() const noexcept {
    return polled_ || ready_.empty() || stats_.callbacks_run - inbox_.callbacks_at_take >= kPostTakeBudget ||
           inbox_.look_for_posts.load(std::memory_order_relaxed);
}

void Scheduler::move_ready_io() {
    // Posts and signals are looked for whether or not the eventfd was
    // written (a busy loop is not written to), and when a wake-up write
    // failed (see wake()): at once, or within the budget (take_posts_now).
    if ((inbox_.wake_pending.load(std::memory_order_acquire) || inbox_.look_for_posts.load(std::memory_order_relaxed)) &&
        take_posts_now()) {
        drain_threadsafe();
        // After the drain cleared inbox_.wake_pending: a signal marked pending
        // before that is seen here, one after it wakes the loop again.
        if (signal_handlers_ != 0) dispatch_signals();
    }
    for (const FdEvent& ev : events_) {
        if (ev.fd == wakeup_fd_) {
            if (wakeup_read_back_) consume_wakeup();  // else reported once per write (Selector::watch_wakeup)
            continue;
        }
        if (ev.fd < 0 || static_cast<std::size_t>(ev.fd) >= fds_.waiting.size()) continue;
        if (ev.error != 0) {
            drop_closed_fd(ev.fd, ev.error);
            continue;
        }
        // Every fd with a callback waiter has an entry in fds_.waiting too, so
        // the check above skips none; an fd beyond fds_.callbacks has none.
        const FdWaiters& w = fds_.waiting[static_cast<std::size_t>(ev.fd)];
        const FdCallbacks c = fds_.callbacks_of(ev.fd);
        const bool read = ev.readable && live(c.read);
        const bool write = ev.writable && live(c.write);
        const bool owner_read = ev.readable && wants(w.watched, Interest::read);
        const bool owner_write = ev.writable && wants(w.watched, Interest::write);
        if (!read && !write && !owner_read && !owner_write) continue;
        if (check_fds_before_dispatch_ && !w.owner && fd_number_closed(ev.fd)) [[unlikely]] {
            drop_closed_fd(ev.fd, EBADF);
            continue;
        }
        // An owner's readiness is an entry of its own (see OwnerReady), in
        // the place a waiter's callback would take.
        const auto fd_bits = static_cast<std::uint32_t>(ev.fd);
        if (read) ready_.push_back(c.read);
        if (owner_read) ready_.push_back(Ref{detail::kOwnerReady | fd_bits, w.owner_gen});
        if (write) ready_.push_back(c.write);
        if (owner_write) ready_.push_back(Ref{detail::kOwnerReady | detail::kOwnerWrite | fd_bits, w.owner_gen});
        stats_.io_events += unsigned(read) + unsigned(owner_read) + unsigned(write) + unsigned(owner_write);
    }
}

void Scheduler::move_due_timers() {
    if (timers_.empty()) return;
    const TimePoint t = now();
    // Debug mode: the latest of the timers over the lateness threshold.
    std::size_t late = 0;
    Duration latest{};
    std::source_location latest_where;
    while (!timers_.empty() && timers_.earliest().deadline <= t) {
        const Timer& earliest = timers_.earliest();
        const bool is_live = timer_live(earliest);
        const Ref r = earliest.ref;
        const TimePoint deadline = earliest.deadline;
        timers_.pop();
        if (!is_live) {
            --timers_.dead;
            continue;
        }
        // Due: from now on it is an ordinary ready callback (a periodic one is
        // re-armed after it runs); an owner's timer, an owner entry of the
        // ready queue, its pending one ended (the owner may set the next).
        FdOwner* owner = nullptr;
        Slot* s = nullptr;
        if (detail::is_owner_timer(r)) {
            FdWaiters& w = fds_.waiting[static_cast<std::size_t>(detail::owner_fd(r))];
            w.owner_timer = false;
            owner = w.owner;
        } else {
            s = &slots_[r.slot];
            s->kind = s->kind == SlotKind::periodic ? SlotKind::periodic_due : SlotKind::soon;
        }
        --timers_.live;
        ready_.push_back(r);
        // Loop lag: how long after its deadline the loop got to this timer.
        const Duration lateness = t - deadline;
        ++stats_.timers_fired;
        lag_.record(lateness);
        if (debug_.on && lateness > debug_.late_threshold) [[unlikely]] {
            ++late;
            if (lateness >= latest) {
                latest = lateness;
                latest_where = s != nullptr ? s->where : owner->origin();
            }
        }
    }
    if (late != 0) [[unlikely]]
        report_late_timers(latest, late, latest_where);
}

void Scheduler::run_ready() {
    if (debug_.on) [[unlikely]]
        run_batch<true>();
    else
        run_batch<false>();
}

// Timed (debug mode): each callback between two clock reads, for
// stats().callback_time and the slow-callback report.
template <bool Timed>
void Scheduler::run_batch() {
    // `call` runs one callback; `origin` names its line, asked only for a report.
    auto measured = [this](auto&& call, auto&& origin) {
        ++stats_.callbacks_run;
        if constexpr (Timed) {
            const TimePoint start = read_clock();
            call();
            const Duration took = read_clock() - start;
            stats_.callback_time += took;
            stats_.slowest_callback = std::max(stats_.slowest_callback, took);
            if (took > debug_.slow_threshold) report_slow_callback(took, origin());
        } else {
            call();
        }
    };
    auto run = [&](auto& target, const std::source_location& where) {
        measured([&] { invoke(target, where); }, [&] { return where; });
    };
    running_batch_.swap(ready_);
    // Both buffers keep the largest capacity either has needed: a burst the
    // loop absorbed once never allocates again, whichever buffer it lands in.
    if (ready_.capacity() < running_batch_.capacity()) ready_.reserve(running_batch_.capacity());
    for (Ref r : running_batch_) {
        if (detail::is_posted_batch(r)) {
            // Cross-thread posts, in the order posted (drain_threadsafe), run
            // where the poster put them and destroyed at once (their captures
            // go now, as a slot's would). Each leaves the queue before it
            // runs, so one that throws past the exception handler is not run
            // twice; what is left then waits for the next batch, ahead of it.
            inbox_.batch.consume([&](Posted& p) { run(p, p.where); });
            continue;
        }
        if (detail::is_owner_entry(r)) {
            // An owner's readiness (watch) or timer (set_owner_timer): still
            // its owner's, still watched?
            if (!ready_entry_live(r)) continue;
            const int fd = detail::owner_fd(r);
            FdOwner& owner = *fds_.waiting[static_cast<std::size_t>(fd)].owner;
            // Asked before the call: the owner may be gone after it.
            const std::source_location where = Timed ? owner.origin() : std::source_location{};
            if (detail::is_owner_timer(r)) {
                measured([&] { invoke_owner_timer(owner, fd); }, [&] { return where; });
            } else {
                const Interest which = (r.slot & detail::kOwnerWrite) != 0 ? Interest::write : Interest::read;
                measured([&] { invoke_owner(owner, fd, which); }, [&] { return where; });
            }
            continue;
        }
        // Skips entries cancelled or removed by an earlier callback of this batch.
        if (!live(r)) continue;
        Slot& s = slots_[r.slot];
        std::source_location where = s.where;
        Callback cb = std::move(s.cb);
        switch (s.kind) {
        case SlotKind::soon:
            free_slot(r.slot);
            run(cb, where);
            break;
        case SlotKind::oneshot_waiter: {
            // One-shot: deregistered before it runs, so it may re-register itself.
            int fd = s.fd;
            FdCallbacks& registered = fds_.callbacks[static_cast<std::size_t>(fd)];  // live: registered
            Ref& entry = s.is_read ? registered.read : registered.write;
            entry = Ref{};
            --fds_.waiters;
            free_slot(r.slot);
            selector_->set_interest(fd, interest_of(fd));
            run(cb, where);
            break;
        }
        case SlotKind::persistent_waiter:
        case SlotKind::signal_handler:
            // Run it from a local so it may remove or replace itself; put it
            // back only if it is still the registered waiter afterwards.
            run(cb, where);
            if (live(r)) slots_[r.slot].cb = std::move(cb);
            break;
        case SlotKind::periodic_due:
            // Likewise; re-armed unless it was cancelled meanwhile.
            run(cb, where);
            if (live(r)) {
                slots_[r.slot].cb = std::move(cb);
                rearm_periodic(r);
            }
            break;
        case SlotKind::timer:
        case SlotKind::periodic:
        case SlotKind::free:
            break;  // unreachable: due timers are re-kinded, free slots are not live
        }
    }
    running_batch_.clear();
    // Nothing was scheduled meanwhile: the buffer whose memory was just used
    // becomes the queue again (a reserved buffer's pages are still untouched).
    if (ready_.empty()) ready_.swap(running_batch_);
}

bool Scheduler::ready_entry_live(Ref r) const {
    if (detail::is_posted_batch(r)) return !inbox_.batch.empty();
    if (!detail::is_owner_entry(r)) return live(r);
    const auto fd = static_cast<std::size_t>(detail::owner_fd(r));
    if (fd >= fds_.waiting.size()) return false;
    const FdWaiters& w = fds_.waiting[fd];
    if (detail::is_owner_timer(r)) return w.owner != nullptr && w.owner_gen == r.gen;
    const Interest which = (r.slot & detail::kOwnerWrite) != 0 ? Interest::write : Interest::read;
    return w.owner != nullptr && w.owner_gen == r.gen && wants(w.watched, which);
}

void Scheduler::invoke_owner(FdOwner& owner, int fd, Interest which) noexcept {
    try {
        owner.on_ready(fd, which);
    } catch (...) {
        report_owner_exception(owner);
    }
}

void Scheduler::invoke_owner_timer(FdOwner& owner, int fd) noexcept {
    try {
        owner.on_owner_timer(fd);
    } catch (...) {
        report_owner_exception(owner);
    }
}

// From inside a catch block: the exception in flight is the one reported.
void Scheduler::report_owner_exception(const FdOwner& owner) noexcept {
    ErrorContext ctx;
    ctx.message = "exception in callback";
    ctx.exception = std::current_exception();
    ctx.origin = owner.origin();
    ctx.origin_known = true;
    call_exception_handler(ctx);
}

template <class Target>
void Scheduler::invoke(Target& target, const std::source_location& where) noexcept {
    try {
        target();
    } catch (...) {
        ErrorContext ctx;
        ctx.message = "exception in callback";
        ctx.exception = std::current_exception();
        ctx.origin = where;
        ctx.origin_known = true;
        call_exception_handler(ctx);
    }
}

}  // namespace reactor
