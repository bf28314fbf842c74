// SPDX-License-Identifier: MIT
// reactor::Scheduler: one event loop, driven by one thread: a ready queue
// (FIFO), a sleeping heap of timers keyed (deadline, sequence), fd waiters,
// signal handlers and a selector (select(2) by default). It never owns the
// fds it watches. Members are loop thread only unless they say otherwise; no
// member calls a user callback synchronously: callbacks run only inside
// run()/run_once()/run_forever()/run_for(), one at a time. docs/scheduler.md
// is the guide this header's comments point into.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/callback.hpp"
#include "reactor/clock.hpp"
#include "reactor/detail/debug_state.hpp"
#include "reactor/detail/fd_table.hpp"
#include "reactor/detail/loop_inbox.hpp"
#include "reactor/detail/scheduler_slots.hpp"
#include "reactor/detail/service_registry.hpp"
#include "reactor/detail/timer_heap.hpp"
#include "reactor/detail/wait_failures.hpp"
#include "reactor/error_context.hpp"
#include "reactor/fd_owner.hpp"
#include "reactor/handle.hpp"
#include "reactor/loop_stats.hpp"
#include "reactor/live_item.hpp"
#include "reactor/loop_service.hpp"
#include "reactor/periodic.hpp"
#include "reactor/run_status.hpp"
#include "reactor/scheduler_options.hpp"
#include "reactor/selector.hpp"
#include "reactor/work_hold.hpp"

namespace reactor {

class REACTOR_API Scheduler {
public:
    using Options = SchedulerOptions;

    Scheduler();
    explicit Scheduler(Options options);
    // Destroys pending callbacks unrun (connections aborted, tasks cancelled);
    // closes only its own wakeup fd. Debug mode names what is still alive on
    // stderr first; close() first avoids both.
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // ---- callbacks and timers (loop thread only) ----
    Handle call_soon(Callback cb, std::source_location where = std::source_location::current());

    // Fires no earlier than now() + delay (rounded up to the clock's tick);
    // a negative delay counts as zero. Equal deadlines fire in scheduling order.
    template <class Rep, class Period>
    Handle call_later(std::chrono::duration<Rep, Period> delay, Callback cb,
                      std::source_location where = std::source_location::current()) {
        require_loop_thread("call_later", &where);  // before deadline_after reads the loop's clock
        return call_at(deadline_after(delay), std::move(cb), where);
    }
    Handle call_at(TimePoint deadline, Callback cb,
                   std::source_location where = std::source_location::current());
    // call_at for a service's own timer, one serving objects the service
    // lists itself: live() leaves it out (docs/scheduler.md, "Extending the loop").
    Handle call_at_unlisted(TimePoint deadline, Callback cb, std::source_location where);

    // `cb` every `interval` (first at now() + interval) until the Handle is
    // cancelled, also from inside `cb`; drift `policy` has no default
    // (Periodic; docs/scheduler.md, "Periodic timers"). Ticking allocates
    // nothing; an exception from `cb` goes to the exception handler and the
    // timer keeps ticking. An interval not > 0 or an empty callback throws
    // std::invalid_argument; one beyond the clock's range means "never again".
    template <class Rep, class Period>
    Handle call_every(std::chrono::duration<Rep, Period> interval, Callback cb, Periodic policy,
                      std::source_location where = std::source_location::current()) {
        if (!(interval > std::chrono::duration<Rep, Period>::zero()))
            throw std::invalid_argument("reactor: call_every needs an interval > 0");
        return call_every_checked(detail::ceil_saturating(interval), std::move(cb), policy, where);
    }

    // Any thread. Wakes the loop if it is blocked in the selector; posts from
    // one thread run in the order posted. A busy loop costs its posters no
    // system call (docs/cores.md). An empty callback throws std::invalid_argument.
    void call_soon_threadsafe(Callback cb, std::source_location where = std::source_location::current());
    // Any thread. call_soon_threadsafe, unless the loop refuses posts
    // (refuse_posts): then false, `cb` left to the caller (futures::submit_to,
    // LoopGroup: an ended loop refuses at once instead of keeping `cb`).
    bool try_call_soon_threadsafe(Callback&& cb, std::source_location where = std::source_location::current());
    // Any thread, irreversible: try_call_soon_threadsafe refuses from now on
    // (call_soon_threadsafe still queues; queued posts stay for close()).
    void refuse_posts() noexcept;
    // Any thread. For a callback whose one duty is to die on this loop's
    // thread (ForeignPtr): posted even when posts are refused, so the loop
    // runs or destroys it. False, `cb` left as it was, only once the loop has
    // finished for good and runs nothing more (docs/cores.md, "ForeignPtr").
    bool try_send_home(Callback&& cb, std::source_location where = std::source_location::current());

    // ---- fd waiters (loop thread only) ----
    // One-shot (Beazley): the waiter is removed before its callback runs.
    void read_wait(int fd, Callback cb, std::source_location where = std::source_location::current());
    void write_wait(int fd, Callback cb, std::source_location where = std::source_location::current());
    // Persistent (asyncio): called on every readiness until removed.
    void add_reader(int fd, Callback cb, std::source_location where = std::source_location::current());
    void add_writer(int fd, Callback cb, std::source_location where = std::source_location::current());
    // Return true if a waiter was registered. A removed waiter that was already
    // due in the current batch does not run.
    bool remove_reader(int fd);
    bool remove_writer(int fd);
    // Optional: removes both waiters and tells the selector `fd` is about to
    // be closed (nothing depends on it: see "Closed fds"). Harmless for an fd
    // the loop never saw. Ends an ownership (set_fd_owner).
    void forget_fd(int fd) noexcept;
    // Registering again replaces the waiter. A negative fd, one not open, or
    // one the selector cannot watch throws std::invalid_argument. Closed fds:
    // an fd may be closed any time; a waiter left on it is dropped and
    // reported, never called (docs/scheduler.md, "Closing fds needs no care").
    // A wait failing with EBADF, EINVAL, EFAULT, or kWaitFailureLimit times in
    // a row, makes the run throw std::system_error (docs/faults.md).
    static constexpr unsigned kWaitFailureLimit = 16;

    // ---- fd owners (loop thread only; docs/scheduler.md, "Extending the loop") ----
    // `owner` owns `fd` until forget_fd(fd) (FdOwner says what it promises
    // and gets); replaces an earlier owner. A negative fd: std::invalid_argument.
    void set_fd_owner(int fd, FdOwner& owner);
    FdOwner* fd_owner(int fd) const noexcept { return fds_.owner(fd); }  // or null
    // Watches fd for `interest` (none stops) with no slot: the owner's
    // on_ready(fd, which) runs in a persistent waiter's place. Throws as
    // add_reader does, and std::logic_error if fd has no owner.
    void watch(int fd, Interest interest);
    // The owner's one timer, with no slot: on_owner_timer(fd) runs once `due`
    // has come; a call while pending replaces it (call again only to move it
    // earlier). std::logic_error if fd has no owner.
    void set_owner_timer(int fd, TimePoint due);
    bool owner_timer_pending(int fd) const noexcept { return fds_.owner_timer_pending(fd); }  // set, not yet due

    // ---- signals (loop thread only) ----
    // `cb` runs as an ordinary callback after the process receives `signo`,
    // never in signal context; arrivals merge, never lost; not work (run()
    // does not wait for it). std::logic_error if another live Scheduler has
    // `signo`; std::invalid_argument for the signals docs/scheduler.md,
    // "Signals", lists, or an empty callback.
    void add_signal_handler(int signo, Callback cb, std::source_location where = std::source_location::current());
    // True if there was a handler (removed, a pending delivery dropped, the
    // previous disposition restored); also from inside the handler.
    bool remove_signal_handler(int signo);
    std::size_t signal_handler_count() const noexcept { return signal_handlers_; }

    // ---- running (loop thread only, never from inside a callback: std::logic_error) ----
    void run();          // until nothing is ready, sleeping or waiting (or stop())
    void run_forever();  // until stop()
    // One iteration (docs/scheduler.md, "One iteration"); blocks only if
    // nothing is ready, and forever with no work at all: check empty() first.
    void run_once();
    // run() for at most `duration` of the loop's clock (negative: zero; beyond
    // its range: no limit), never waiting past it: idle, timed_out or stopped.
    template <class Rep, class Period>
    RunStatus run_for(std::chrono::duration<Rep, Period> duration) {
        require_loop_thread("run_for");  // before deadline_after reads the loop's clock
        return run_until_time(deadline_after(duration));
    }
    // The running run*() returns after the current iteration; called while
    // not running, the next run() does one iteration (asyncio's run_forever).
    void stop();
    static Scheduler* running() noexcept;  // any thread: the one whose run*() this thread is in, or null

    // The loop's clock, read at most once per iteration, on first use.
    TimePoint now() const {
        if (now_stale_) {
            now_ = read_clock();
            now_stale_ = false;
        }
        return now_;
    }
    // The calendar's time (an HTTP Date header, a log line) through the
    // loop's kernel: CLOCK_REALTIME, or a simulated host's. Not monotonic,
    // not cached: timers never use it.
    std::chrono::system_clock::time_point wall_clock() const noexcept;

    // ---- errors ----
    // Where an exception escaping a callback goes (docs/scheduler.md,
    // "Errors"); empty restores the default.
    void set_exception_handler(ExceptionHandler handler);
    // Delivers ctx to the handler (the loop's and the layers' errors).
    void call_exception_handler(const ErrorContext& ctx) noexcept;

    // ---- work the loop cannot see, and state that ends with the loop ----
    // Keeps run() going while it lives (WorkHold), listed by live().
    [[nodiscard]] WorkHold hold_work(std::source_location where = std::source_location::current()) {
        return hold_work(LiveItem::Kind::hold, "", where);
    }
    // The same, described as `kind` and `what` (outliving the hold).
    [[nodiscard]] WorkHold hold_work(LiveItem::Kind kind, const char* what, std::source_location where);

    // The loop's service S (LoopService), made with S(*this) on first use.
    template <class S>
    S& service() {
        static_assert(std::is_base_of_v<LoopService, S>, "a service derives from reactor::LoopService");
        if (LoopService* found = services_.find(typeid(S))) return static_cast<S&>(*found);
        return static_cast<S&>(add_service(typeid(S), std::unique_ptr<LoopService>(new S(*this))));
    }
    template <class S>  // null if the loop has no service S (yet)
    S* find_service() const noexcept { return static_cast<S*>(services_.find(typeid(S))); }

    // ---- the end (loop thread only, never from inside a callback: std::logic_error) ----
    // Ends everything on this loop while the program's objects still live,
    // in phases (docs/scheduler.md, "The end of a loop"): report live(), close
    // every service newest first, run what that made ready (bounded, never
    // waiting), abandon what is left, drop the rest unrun. Returns the report;
    // the Scheduler may be used again. The destructor does the last two phases.
    std::vector<LiveItem> close();
    // Everything alive now, each listed once with the line that created it.
    std::vector<LiveItem> live() const;

    // ---- introspection (tests, debugging) ----
    std::size_t ready_count() const;              // live callbacks in the ready queue
    std::size_t timer_count() const noexcept { return timers_.live; }
    std::size_t timer_entries() const noexcept { return timers_.size(); }  // cancelled ones not yet dropped too
    std::size_t waiter_count() const noexcept { return fds_.waiters; }
    bool empty() const;  // nothing ready, sleeping, waiting or posted
    const Selector& selector() const noexcept { return *selector_; }
    // The kernel its sockets call (Options::kernel): null for the C library's;
    // shared, for an object that may outlive the loop holding an fd.
    Kernel* kernel() const noexcept { return kernel_.get(); }
    const std::shared_ptr<Kernel>& shared_kernel() const noexcept { return kernel_; }
    LoopStats stats() const;  // a snapshot of the loop as data: O(fds + LagWindow::kSize)
    bool debug() const noexcept { return debug_.on; }  // debug mode is on (Options::debug or REACTOR_DEBUG)

    // ---- debug mode's owner-thread check (any thread; docs/cores.md, "The ownership rule") ----
    // In debug mode a call off the loop's thread is reported, then refused:
    // std::logic_error, or true for noexcept members (which then return).
    void check_owner_thread(const char* member, const std::source_location* where,
                            const std::source_location* made_at = nullptr, const char* what = nullptr) {
        if (debug_.on) [[unlikely]]
            refuse_off_owner_thread(member, where, made_at, what);
    }
    [[nodiscard]] bool off_owner_thread(const char* member, const std::source_location* where,
                                        const std::source_location* made_at = nullptr,
                                        const char* what = nullptr) noexcept {
        return debug_.on && report_off_owner_thread(member, where, made_at, what);
    }

private:
    friend class Handle;
    friend class WorkHold;
    friend class LoopGroup;  // finish()
    class RunGuard;

    void finish() noexcept;  // LoopGroup, after close(): destroys what was sent home; then refuses it

    // The slab of scheduled callables and what refers into it (detail/scheduler_slots.hpp).
    using SlotKind = detail::SlotKind;
    using Slot = detail::Slot;
    using PeriodicTiming = detail::PeriodicTiming;
    using Ref = detail::Ref;
    using Timer = detail::Timer;
    using FdWaiters = detail::FdWaiters;
    using FdCallbacks = detail::FdCallbacks;
    static constexpr std::uint32_t kNoSlot = detail::kNoSlot;

    // Phases of one iteration, in order (iteration.cpp).
    void run_once_unguarded();
    std::optional<std::chrono::nanoseconds> compute_timeout();
    void poll_io(std::optional<std::chrono::nanoseconds> timeout);
    void move_ready_io();
    void move_due_timers();
    void run_ready();

    Handle call_every_checked(Duration interval, Callback cb, Periodic policy, std::source_location where);
    void arm_timer(TimePoint deadline, Ref r);
    void rearm_periodic(Ref r);
    RunStatus run_until_time(TimePoint limit);

    // The end (shutdown.cpp, services.cpp).
    void drop_everything() noexcept;  // close() phase 5 and the destructor
    void report_leaks_at_destruction() noexcept;
    void release_holds() noexcept;
    LoopService& add_service(const std::type_info& type, std::unique_ptr<LoopService> service);

    // Signals (signals.cpp); on_signal, the sigaction handler, is async-signal-safe.
    void dispatch_signals();
    void remove_all_signal_handlers() noexcept;
    void release_signal(int signo) noexcept;
    static void on_signal(int signo) noexcept;

    bool has_work() const;
    bool nothing_to_poll(std::optional<std::chrono::nanoseconds> timeout) const;
    TimePoint read_clock() const { return clock_ ? clock_() : Clock::now(); }
    TimePoint timer_base();
    template <class Rep, class Period>
    TimePoint deadline_after(std::chrono::duration<Rep, Period> delay) {
        return detail::deadline_after(timer_base(), delay);
    }
    Interest interest_of(int fd) const;  // fd < fds_.waiting.size()
    bool live(Ref r) const { return r.slot != kNoSlot && slots_[r.slot].gen == r.gen; }
    bool ready_entry_live(Ref r) const;  // a slot's, or an owner's readiness (watch)
    void unwatch_owned(FdWaiters& w) noexcept;
    bool timer_live(const Timer& t) const noexcept;  // a slot's timer, or an owner's (set_owner_timer)
    void end_owner_timer(FdWaiters& w) noexcept;
    Ref alloc_slot(Callback&& cb, std::source_location where, SlotKind kind);
    void free_slot(std::uint32_t slot);
    bool cancel(std::uint32_t slot, std::uint32_t gen);
    void set_waiter(int fd, bool is_read, bool persistent, Callback cb, std::source_location where);
    bool remove_waiter(int fd, bool is_read);
    void drop_closed_fd(int fd, int error);
    void drain_threadsafe();
    bool take_posts_now() const noexcept;
    static constexpr std::uint64_t kPostTakeBudget = 64;  // callbacks run between takes of the posts
    void consume_wakeup() noexcept;
    void wake() noexcept;  // any thread, signal handlers too
    void wait_in_selector(std::optional<std::chrono::nanoseconds> timeout);
    void wait_announced(std::optional<std::chrono::nanoseconds> timeout);
    void on_wait_failure(const std::system_error& failure);
    bool fd_number_closed(int fd) const;
    void tell_owner_unwatchable(int fd);
    template <class Target>  // a Callback, or a posted entry (detail::PostedQueue::Entry)
    void invoke(Target& target, const std::source_location& where) noexcept;
    void invoke_owner(FdOwner& owner, int fd, Interest which) noexcept;
    void invoke_owner_timer(FdOwner& owner, int fd) noexcept;
    void report_owner_exception(const FdOwner& owner) noexcept;
    void purge_cancelled_timers() noexcept;
    void purge_if_mostly_dead(std::size_t more) noexcept;

    // Debug mode and stats (debug.cpp, stats.cpp). run_ready picks the timed
    // run_batch once per batch: outside debug mode, no branch per callback.
    void configure_debug(const Options& options);
    template <bool Timed>
    void run_batch();
    void report_slow_callback(Duration took, const std::source_location& where);
    void report_late_timers(Duration latest, std::size_t count, const std::source_location& where);
    // Loop-thread-only members start with this: in debug mode, a call while
    // another thread runs the loop is reported and refused (std::logic_error).
    void require_loop_thread(const char* member, const std::source_location* where = nullptr) {
        if (debug_.on) [[unlikely]]
            check_loop_thread(member, where);
    }
    void check_loop_thread(const char* member, const std::source_location* where);
    bool off_loop_thread(const char* member, const std::source_location* where) noexcept;  // noexcept members
    template <class Describe>
    bool report_off_thread(Describe describe, const std::source_location* origin) noexcept;
    void refuse_off_owner_thread(const char* member, const std::source_location* where,
                                 const std::source_location* made_at, const char* what);
    bool report_off_owner_thread(const char* member, const std::source_location* where,
                                 const std::source_location* made_at, const char* what) noexcept;

    std::unique_ptr<Selector> selector_;
    std::shared_ptr<Kernel> kernel_;  // before the services: their sockets close through it
    ClockFunction clock_;  // empty: Clock::now, called directly
    std::chrono::nanoseconds wakeup_recheck_{};  // zero on a virtual clock (wait_announced)
    mutable TimePoint now_{};
    mutable bool now_stale_ = true;  // now_ is to be re-read on its next use

    std::vector<Slot> slots_;  // slab of scheduled callables; indexes are stable, storage is not
    std::unordered_map<std::uint32_t, detail::PeriodicTiming> periodic_;  // by slot: few timers are periodic
    std::uint32_t free_head_ = kNoSlot;

    std::vector<Ref> ready_;          // FIFO; double-buffered with running_batch_
    std::vector<Ref> running_batch_;  // so the run phase takes exactly a snapshot
    detail::TimerHeap timers_;        // the sleeping timers (detail/timer_heap.hpp)
    detail::FdTable fds_;             // by fd number: owners, waiters (detail/fd_table.hpp)
    IntrusiveList<WorkHold> holds_;  // work no slot shows (hold_work)
    std::vector<FdEvent> events_;    // reused across iterations
    // epoll may name an fd closed behind its waiter's back: checked before dispatch.
    bool check_fds_before_dispatch_ = false;
    detail::WaitFailures wait_failures_;  // the selector's wait failing (wait_failures.cpp)

    std::vector<Ref> signal_handling_;  // by signal number; empty until the first handler
    std::size_t signal_handlers_ = 0;
    detail::ServiceRegistry services_;

    // call_soon_threadsafe's queue and flags, on cache lines of their own.
    using Posted = detail::PostedQueue::Entry;
    detail::LoopInbox inbox_;
    bool polled_ = false;           // this iteration called the selector (poll_io)
    int wakeup_fd_ = -1;            // eventfd, watched for reading; owned
    bool wakeup_read_back_ = true;  // its counter is read after each wake-up (Selector::watch_wakeup)

    ExceptionHandler exception_handler_;
    bool stopping_ = false;
    bool running_ = false;                    // inside a run*()
    TimePoint run_limit_ = TimePoint::max();  // run_for's end: no wait reaches past it

    LoopStats stats_;  // the counters (and debug-mode timings); stats() adds the rest
    LagWindow lag_;
    detail::DebugState debug_;
};

}  // namespace reactor
