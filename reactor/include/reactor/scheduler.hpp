// SPDX-License-Identifier: MIT
// reactor::Scheduler: one event loop, driven by one thread.
//
// It owns, and nothing else does:
//   ready queue   callbacks to run now, FIFO (call_soon)
//   sleeping heap timers keyed (deadline, sequence): equal deadlines fire FIFO (call_later/call_at)
//   read/write waiters   fd -> callback, one read and one write slot per fd (read_wait/add_reader/...)
//   signal handlers      signal number -> callback (add_signal_handler)
//   selector      the OS readiness call (select(2) by default)
// It never owns the fds it watches. Every member is "loop thread only" except
// call_soon_threadsafe(), which any thread may call and which wakes a loop
// blocked in the selector. No member ever calls a user callback synchronously:
// callbacks only run inside run()/run_once()/run_forever(), one at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/callback.hpp"
#include "reactor/clock.hpp"
#include "reactor/detail/loop_inbox.hpp"
#include "reactor/detail/scheduler_slots.hpp"
#include "reactor/error_context.hpp"
#include "reactor/fd_owner.hpp"
#include "reactor/handle.hpp"
#include "reactor/loop_stats.hpp"
#include "reactor/live_item.hpp"
#include "reactor/loop_service.hpp"
#include "reactor/periodic.hpp"
#include "reactor/scheduler_options.hpp"
#include "reactor/selector.hpp"
#include "reactor/work_hold.hpp"

namespace reactor {

// Why Scheduler::run_for() returned.
enum class RunStatus : std::uint8_t {
    idle,       // nothing was ready, sleeping or waiting (run() would have returned too)
    timed_out,  // the duration elapsed with work left
    stopped,    // stop() was called
};

class REACTOR_API Scheduler {
public:
    using Options = SchedulerOptions;

    Scheduler();
    explicit Scheduler(Options options);
    // Destroys pending callbacks unrun (connections are aborted and freed,
    // tasks cancelled with their machines destroyed unrun); closes only its
    // own wakeup fd. In debug mode, first names on stderr what is still alive
    // (live()), one line each and a summary; close() first avoids both.
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
    // call_at for a service's own timer (LoopService), one that serves what
    // the service lists itself: live() and close()'s report leave it out, so
    // an object is named once, by its service (the connections' deadline
    // queues). Otherwise a timer like any other: it keeps run() going.
    Handle call_at_unlisted(TimePoint deadline, Callback cb, std::source_location where);

    // A periodic timer: `cb` runs every `interval` (the first time `interval`
    // from now, rounded up to the clock's tick) until the Handle is cancelled,
    // with the drift policy `policy` (see Periodic: there is no default, the
    // choice is the caller's). One slot is reused for every tick, so ticking
    // allocates nothing. Like any timer it keeps run() going while it is
    // armed. The Handle stays pending across ticks; cancel() stops it for
    // good, also from inside its own callback (then it returns true: there
    // was a next tick to cancel). An exception from `cb` goes to the
    // exception handler and the timer keeps ticking. An interval that is not
    // > 0, or an empty callback, throws std::invalid_argument and schedules
    // nothing; one beyond the clock's range means "never again".
    template <class Rep, class Period>
    Handle call_every(std::chrono::duration<Rep, Period> interval, Callback cb, Periodic policy,
                      std::source_location where = std::source_location::current()) {
        if (!(interval > std::chrono::duration<Rep, Period>::zero())) {
            throw std::invalid_argument("reactor: call_every needs an interval > 0");
        }
        using Wide = std::chrono::duration<long double>;
        const Duration period = Wide(interval) >= Wide(Duration::max()) ? Duration::max()
                                                                         : std::chrono::ceil<Duration>(interval);
        return call_every_checked(period, std::move(cb), policy, where);
    }

    // Any thread. Wakes the loop if it is blocked in the selector. Callbacks
    // posted from one thread run in the order posted. Posts join one
    // multi-producer queue that the loop takes whole, once per iteration
    // (a batch), and the eventfd is written only by the first post since the
    // loop last took the queue, and only if the loop is asleep in the
    // selector then: a busy loop receiving any number of posts costs its
    // posters no system call (stats().wakeup_writes counts the writes).
    // An empty callback throws std::invalid_argument and posts nothing.
    void call_soon_threadsafe(Callback cb, std::source_location where = std::source_location::current());
    // Any thread. Like call_soon_threadsafe, unless the loop has stopped
    // taking posts (refuse_posts): then returns false and leaves `cb` as it
    // was, for the caller to destroy on its own thread. For layers that must
    // know a post will be run or destroyed by its loop (futures::submit_to,
    // LoopGroup): a loop that has ended refuses at once instead of keeping
    // the callback until its destruction.
    bool try_call_soon_threadsafe(Callback&& cb, std::source_location where = std::source_location::current());
    // From now on try_call_soon_threadsafe refuses (call_soon_threadsafe
    // still queues). Posts already queued stay queued: the next close(), or
    // the destructor, drops them. Irreversible; any thread (a LoopGroup calls
    // it on the loop's thread as the loop ends).
    void refuse_posts() noexcept;
    // Any thread. For a callback whose one duty is to be destroyed on this
    // loop's thread (ForeignPtr sending its object home): posted as
    // call_soon_threadsafe posts, refused or not, so that it is run or
    // destroyed unrun by the loop itself (its next run, close(), or the
    // destructor). Returns false, leaving `cb` as it was, only once the loop
    // has finished for good (a LoopGroup loop whose thread has run its last
    // callback and closed it): then nothing of the loop runs any more, and
    // the caller may destroy `cb` on its own thread. A refusal before that
    // point would leave `cb` to die on the caller's thread while the loop
    // still runs close callbacks that may touch what it holds.
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
    // Optional: removes both waiters and tells the selector at once that `fd`
    // is about to be closed (epoll then deletes its registration now instead
    // of finding out later). Nothing depends on it: see "Closed fds" below.
    // Harmless for an fd the loop never saw. Ends an ownership (set_fd_owner).
    void forget_fd(int fd) noexcept;
    // Declares `owner` the owner of `fd` until forget_fd(fd): see FdOwner for
    // its promises (forget_fd before close) and what it gets (told, instead
    // of the exception handler, when the loop cannot watch fd). Replaces an
    // earlier owner. A negative fd throws std::invalid_argument.
    void set_fd_owner(int fd, FdOwner& owner);
    // fd's owner (set_fd_owner), or null: how a service that keeps its
    // objects by fd number finds them (the connections of a loop).
    FdOwner* fd_owner(int fd) const noexcept {
        return fd >= 0 && static_cast<std::size_t>(fd) < waiting_.size() ? waiting_[static_cast<std::size_t>(fd)].owner
                                                                          : nullptr;
    }
    // For fd's owner: watch fd for `interest` (Interest::none stops) without
    // a callback of its own. The owner's on_ready(fd, Interest::read or
    // Interest::write) runs from the run phase, like a persistent waiter's
    // callback and in its place in the ready queue, while that direction is
    // still watched; its exceptions go to the exception handler, naming the
    // owner's origin(). It costs no slot: a connection, listener or socket
    // type keeps nothing in the loop but the fd's entry (libuv's uv__io_t).
    // forget_fd, or a new set_fd_owner, ends it. Throws as add_reader does,
    // and std::logic_error if fd has no owner.
    void watch(int fd, Interest interest);
    // For fd's owner: one timer, with no slot and no callback of its own.
    // Once `due` has come, the owner's on_owner_timer(fd) runs from the run
    // phase, in the place a timer's callback would take. The owner keeps
    // `due` and answers it from owner_timer_due(fd): the loop keeps only a
    // heap entry (named by fd and the ownership, as watch's readiness is).
    // A call while the timer is pending replaces it: the replaced entry
    // stays in the heap, skipped when it comes up, so an owner calls again
    // only to move its timer earlier (replaced entries then are later than
    // the one pending, and are dropped like cancelled timers). Like a timer
    // it keeps run() going while pending. forget_fd, or a new set_fd_owner,
    // ends it. Throws std::logic_error if fd has no owner.
    void set_owner_timer(int fd, TimePoint due);
    // Whether fd's owner has a timer that has not come due yet (one that
    // is due but whose on_owner_timer has not run yet is not pending).
    bool owner_timer_pending(int fd) const noexcept {
        return fd >= 0 && static_cast<std::size_t>(fd) < waiting_.size() &&
               waiting_[static_cast<std::size_t>(fd)].owner_timer;
    }
    // Registering again on the same fd and direction replaces the waiter.
    // A negative fd, one that is not open, or one the selector cannot watch
    // (select: fd >= FD_SETSIZE) throws std::invalid_argument and changes
    // nothing.
    //
    // Closed fds, on every backend: an fd may be closed at any time, with or
    // without removing its waiters first, and its number reused; a waiter
    // left on a closed fd is dropped and reported through the exception
    // handler (ErrorContext::fd), never called, and the loop never spins on
    // it (docs/scheduler.md, "Closing fds needs no care").
    //
    // Failing system calls (docs/faults.md has the table): an fd the
    // selector cannot watch is dropped like a closed one and reported to its
    // FdOwner, or to the exception handler. A wait that fails transiently is
    // reported (rate-limited) and retried after a pause that doubles each
    // time, up to 100 ms; one that fails with EBADF, EINVAL or EFAULT, or
    // kWaitFailureLimit times in a row with the same error, makes the run
    // throw std::system_error naming the backend and the call.
    static constexpr unsigned kWaitFailureLimit = 16;

    // ---- signals (loop thread only) ----
    // Runs `cb` on the loop thread, as an ordinary callback of the run phase
    // (an exception goes to the exception handler), after the process
    // receives signal `signo`; never in signal context. Registering again
    // replaces the callback. Arrivals before the loop gets to them are
    // merged into one run, never lost; signals pending together run in
    // signal-number order. A sigaction handler wakes the loop through its
    // eventfd, on every backend; no thread's signal mask changes
    // (docs/scheduler.md, "Signals", says why not signalfd).
    //
    // A disposition is process-wide: registering a signal that another live
    // Scheduler handles throws std::logic_error. Removing the last handler,
    // or destroying the Scheduler, restores the previous disposition. A
    // handler is not work: it keeps neither run() nor run_for() going (use
    // run_forever() and stop() to wait for a signal). std::invalid_argument
    // for a number outside 1..NSIG-1 or reserved by the C library, SIGKILL,
    // SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, or an empty callback.
    void add_signal_handler(int signo, Callback cb, std::source_location where = std::source_location::current());
    // Returns true if this Scheduler had a handler for `signo` (now removed, a
    // delivery not yet run dropped, the previous disposition restored).
    // Safe from inside any callback, the handler's own included. A number
    // outside 1..NSIG-1 throws std::invalid_argument.
    bool remove_signal_handler(int signo);
    std::size_t signal_handler_count() const noexcept { return signal_handlers_; }

    // ---- running ----
    // Loop thread only, and never from inside a callback (std::logic_error):
    // Until nothing is ready, sleeping or waiting (or stop()).
    void run();
    // Until stop(). Idle time is spent blocked in the selector.
    void run_forever();
    // Exactly one iteration (see the phase comment in src/loop/iteration.cpp). Blocks
    // in the selector only if nothing is ready: until an fd is ready, the
    // earliest timer is due, or another thread posts. With no work at all (no
    // waiter, no timer, nothing posted) it blocks forever, as asyncio's
    // _run_once would: check empty() first, or keep a timer as a bound.
    void run_once();
    // Like run(), for at most `duration` of the loop's clock: returns idle when
    // nothing is ready, sleeping or waiting, stopped after stop(), timed_out
    // once now() has reached the start plus `duration` with work left. The
    // wait in the selector never reaches past that point, so with nothing
    // ready the loop sleeps until then, not longer. With work, at least one
    // iteration runs: run_for(0s) runs what is ready now, without waiting.
    // A negative duration counts as zero; one beyond the clock's range as no
    // limit. What is still scheduled when it returns stays scheduled.
    template <class Rep, class Period>
    RunStatus run_for(std::chrono::duration<Rep, Period> duration) {
        require_loop_thread("run_for");  // before deadline_after reads the loop's clock
        return run_until_time(deadline_after(duration));
    }
    // Makes run()/run_forever()/run_for() return after the current iteration (inside
    // run_once() it only ends that iteration, which ends anyway). Called while
    // the loop is not running, the next run()/run_forever() does one iteration
    // and returns, as asyncio's run_forever does. Loop thread
    // only (from another thread: call_soon_threadsafe([&]{ s.stop(); })).
    void stop();
    // The Scheduler whose run()/run_once()/run_forever()/run_for() the
    // calling thread is inside, or null (asyncio's get_running_loop): what
    // futures::submit_to completes its future on. Any thread.
    static Scheduler* running() noexcept;

    // The loop's clock: read at most once per iteration, on first use after
    // the selector returned (an iteration that never asks, one with no timers
    // whose callbacks never call now() or call_later, pays no clock read).
    // The loop itself also reads the clock before it blocks until a deadline,
    // to measure the wait from the time the callbacks finished; that read
    // does not change now().
    TimePoint now() const {
        if (now_stale_) {
            now_ = read_clock();
            now_stale_ = false;
        }
        return now_;
    }
    // The calendar's time, for what a person or a protocol reads (an HTTP
    // Date header, a log line): the system clock (CLOCK_REALTIME), or a
    // simulated host's (its world's virtual time from a fixed epoch: see
    // testing/sim/world.hpp), through the loop's kernel (reactor/kernel.hpp).
    // Not monotonic and not cached: timers never use it; read it once per
    // use, not per message.
    std::chrono::system_clock::time_point wall_clock() const noexcept;

    // ---- errors ----
    // An exception escaping a callback never unwinds out of the loop: it goes
    // here and the loop carries on. Empty restores the default. A handler
    // that itself throws is not retried: one line on stderr says so, the
    // original error is printed by the default handler, and the loop carries
    // on.
    void set_exception_handler(ExceptionHandler handler);
    // Delivers ctx to the handler (used by the loop and by layers above it).
    void call_exception_handler(const ErrorContext& ctx) noexcept;

    // ---- work the loop cannot see, and state that ends with the loop ----
    // A hold that keeps run() going while it lives (see WorkHold), listed by
    // live() with `where`. Loop thread only.
    [[nodiscard]] WorkHold hold_work(std::source_location where = std::source_location::current()) {
        return hold_work(LiveItem::Kind::hold, "", where);
    }
    // The same, described as `kind` and `what` (a string that outlives the
    // hold): for layers that hold work on a user's behalf (a thread-pool
    // job, a child process), naming the user's line.
    [[nodiscard]] WorkHold hold_work(LiveItem::Kind kind, const char* what, std::source_location where);

    // The loop's service of type S (see LoopService), made with S(*this) on
    // first use. Loop thread only.
    template <class S>
    S& service() {
        static_assert(std::is_base_of_v<LoopService, S>, "a service derives from reactor::LoopService");
        if (LoopService* found = find_service(typeid(S))) return static_cast<S&>(*found);
        return static_cast<S&>(add_service(typeid(S), std::unique_ptr<LoopService>(new S(*this))));
    }
    // Null if the loop has no service S (yet).
    template <class S>
    S* find_service() const noexcept {
        return static_cast<S*>(find_service(typeid(S)));
    }

    // ---- the end (loop thread only, never from inside a callback: std::logic_error) ----
    // Ends everything on this loop while the program's objects are still
    // alive: the orderly shutdown the destructor cannot do. In phases
    // (shutdown.cpp; docs/scheduler.md, "The end of a loop"): report what is
    // alive (live(), signal handlers aside); close every service, newest
    // first (connections abort with EndKind::scheduler_closed, tasks and
    // pending futures are cancelled, thread-pool jobs cancelled, children
    // handed to reapers, holds released); run what that made ready, for a
    // bounded number of iterations that never wait; abandon what services
    // still keep; drop everything still scheduled, unrun. Returns what the
    // first phase reported. The Scheduler is then empty and may be used
    // again. The destructor does the last two phases only.
    std::vector<LiveItem> close();
    // Everything alive now: ready callbacks, timers, fd waiters, posted
    // callbacks, signal handlers, work holds, and what services keep
    // (connections, listeners, tasks, pending hand-made futures, thread-pool
    // jobs, child processes), each listed once, with the line that created
    // it: the user's line where the object was made on the user's behalf.
    std::vector<LiveItem> live() const;

    // ---- introspection (tests, debugging) ----
    std::size_t ready_count() const;              // live callbacks in the ready queue
    std::size_t timer_count() const noexcept { return live_timers_; }
    // Entries of the sleeping heap, cancelled or replaced ones not yet
    // dropped included: what its memory holds.
    std::size_t timer_entries() const noexcept { return sleeping_.size(); }
    std::size_t waiter_count() const noexcept { return waiters_; }
    bool empty() const;  // nothing ready, sleeping, waiting or posted
    const Selector& selector() const noexcept { return *selector_; }
    // The kernel its sockets call (Options::kernel): null for the C
    // library's functions, called directly (reactor/detail/kernel_calls.hpp).
    // Read on every socket call: inline, one load.
    Kernel* kernel() const noexcept { return kernel_.get(); }
    // The same, shared: for an object that may outlive the loop while it
    // still holds an fd of its kernel (a Connector whose loop ended
    // mid-connect closes its socket when it is destroyed). Null for the C
    // library's calls.
    const std::shared_ptr<Kernel>& shared_kernel() const noexcept { return kernel_; }
    // A snapshot of the loop as data (see LoopStats for what is always
    // counted and what debug mode adds). O(fds + LagWindow::kSize).
    LoopStats stats() const;
    bool debug() const noexcept { return debug_; }  // debug mode is on (Options::debug or REACTOR_DEBUG)

    // ---- debug mode's check for the objects that belong to this loop ----
    // A Connection, Listener, Future or Promise starts its members that act
    // with one of these (docs/cores.md, "The ownership rule"): one branch on
    // debug() outside debug mode. In debug mode, a call from a thread other
    // than the one running this loop is reported on its exception handler,
    // naming `where` (the caller's line) or `made_at` (the object's), then
    // check_owner_thread throws std::logic_error with that text, and
    // off_owner_thread (for noexcept members) returns true: the member
    // returns without acting. Any thread.
    void check_owner_thread(const char* member, const std::source_location* where,
                            const std::source_location* made_at = nullptr, const char* what = nullptr) {
        if (debug_) [[unlikely]]
            refuse_off_owner_thread(member, where, made_at, what);
    }
    [[nodiscard]] bool off_owner_thread(const char* member, const std::source_location* where,
                                        const std::source_location* made_at = nullptr,
                                        const char* what = nullptr) noexcept {
        return debug_ && report_off_owner_thread(member, where, made_at, what);
    }

private:
    friend class Handle;
    friend class WorkHold;
    friend class LoopGroup;  // finish()
    class RunGuard;

    // Loop thread, the last thing a LoopGroup's loop does on it (after
    // close()): what was sent home since is destroyed now, on this thread,
    // until none is left; from then on try_send_home returns false (and
    // try_call_soon_threadsafe too). Nothing of this loop runs afterwards.
    void finish() noexcept;

    // The slab of scheduled callables and what refers into it
    // (reactor/detail/scheduler_slots.hpp).
    using SlotKind = detail::SlotKind;
    using Slot = detail::Slot;
    using PeriodicTiming = detail::PeriodicTiming;
    using Ref = detail::Ref;
    using Timer = detail::Timer;
    using FdWaiters = detail::FdWaiters;
    using FdCallbacks = detail::FdCallbacks;
    static constexpr std::uint32_t kNoSlot = detail::kNoSlot;

    // Phases of one iteration, in order (run_once_unguarded).
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

    // The end (shutdown.cpp).
    void drop_everything() noexcept;  // close() phase 5 and the destructor
    void report_leaks_at_destruction() noexcept;
    template <class Tell>
    void tell_services(Tell tell);
    void close_services();
    void abandon_services() noexcept;
    void release_holds() noexcept;
    void destroy_services() noexcept;
    LoopService* find_service(const std::type_info& type) const noexcept;
    LoopService& add_service(const std::type_info& type, std::unique_ptr<LoopService> service);

    void dispatch_signals();
    void remove_all_signal_handlers() noexcept;
    void release_signal(int signo) noexcept;
    static void on_signal(int signo) noexcept;  // the sigaction handler: async-signal-safe

    bool has_work() const;
    bool nothing_to_poll(std::optional<std::chrono::nanoseconds> timeout) const;
    TimePoint read_clock() const { return clock_ ? clock_() : Clock::now(); }
    TimePoint timer_base();
    // now() + delay rounded up, saturating at TimePoint::max(): a delay beyond
    // the clock's range (seconds::max() meaning "never", a huge double) must not
    // overflow into the past and fire at once. Negative (or NaN) counts as zero.
    template <class Rep, class Period>
    TimePoint deadline_after(std::chrono::duration<Rep, Period> delay) {
        const TimePoint base = timer_base();
        if (!(delay > std::chrono::duration<Rep, Period>::zero())) return base;
        using Wide = std::chrono::duration<long double>;
        if (Wide(delay) >= Wide(TimePoint::max() - base)) return TimePoint::max();
        return base + std::chrono::ceil<Duration>(delay);
    }
    Interest interest_of(int fd) const;  // fd < waiting_.size()
    // An fd beyond callback_waiters_'s end has no callback waiter.
    FdCallbacks callbacks_of(int fd) const noexcept {
        const auto index = static_cast<std::size_t>(fd);
        return index < callback_waiters_.size() ? callback_waiters_[index] : FdCallbacks{};
    }
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
    // A loop busy with callbacks alone takes the posts once per this many
    // callbacks run (take_posts_now).
    static constexpr std::uint64_t kPostTakeBudget = 64;
    void consume_wakeup() noexcept;
    void wake() noexcept;  // any thread, signal handlers too
    void wait_in_selector(std::optional<std::chrono::nanoseconds> timeout);
    void wait_announced(std::optional<std::chrono::nanoseconds> timeout);
    void on_wait_failure(const std::system_error& failure);
    bool fd_number_closed(int fd) const;
    void tell_owner_unwatchable(int fd);
    // A Callback, or a posted entry (detail::PostedQueue::Entry).
    template <class Target>
    void invoke(Target& target, const std::source_location& where) noexcept;
    void invoke_owner(FdOwner& owner, int fd, Interest which) noexcept;
    void invoke_owner_timer(FdOwner& owner, int fd) noexcept;
    void report_owner_exception(const FdOwner& owner) noexcept;

    // Debug mode and stats (debug.cpp, stats.cpp). run_ready picks the timed
    // run_batch once per batch, so a loop not in debug mode pays no branch
    // per callback for it.
    void configure_debug(const Options& options);
    template <bool Timed>
    void run_batch();
    void report_slow_callback(Duration took, const std::source_location& where);
    void report_late_timers(Duration latest, std::size_t count, const std::source_location& where);
    // Loop-thread-only members start with this. In debug mode, while a run
    // is under way on another thread, the call is reported and refused
    // (std::logic_error) before it changes anything.
    void require_loop_thread(const char* member, const std::source_location* where = nullptr) {
        if (debug_) [[unlikely]]
            check_loop_thread(member, where);
    }
    void check_loop_thread(const char* member, const std::source_location* where);
    // The same check for noexcept members: true (reported) when off the loop thread.
    bool off_loop_thread(const char* member, const std::source_location* where) noexcept;
    // What both checks share: off the loop's thread, count and report (debug.cpp).
    template <class Describe>
    bool report_off_thread(Describe describe, const std::source_location* origin) noexcept;
    // check_owner_thread's and off_owner_thread's slow halves (debug.cpp).
    void refuse_off_owner_thread(const char* member, const std::source_location* where,
                                 const std::source_location* made_at, const char* what);
    bool report_off_owner_thread(const char* member, const std::source_location* where,
                                 const std::source_location* made_at, const char* what) noexcept;
    void purge_cancelled_timers() noexcept;
    void purge_if_mostly_dead(std::size_t more) noexcept;

    std::unique_ptr<Selector> selector_;
    // Declared early: destroyed after the services, whose sockets close
    // their fds through it.
    std::shared_ptr<Kernel> kernel_;
    ClockFunction clock_;  // empty: Clock::now, called directly
    // Options::wakeup_recheck_interval; zero on a virtual clock (see wait_announced).
    std::chrono::nanoseconds wakeup_recheck_{};
    mutable TimePoint now_{};
    mutable bool now_stale_ = true;  // now_ is to be re-read on its next use

    std::vector<Slot> slots_;  // slab of scheduled callables; indexes are stable, storage is not
    // The schedule of each periodic timer, by slot: few timers are periodic,
    // and every slot would otherwise carry these bytes.
    std::unordered_map<std::uint32_t, detail::PeriodicTiming> periodic_;
    std::uint32_t free_head_ = kNoSlot;

    std::vector<Ref> ready_;          // FIFO; double-buffered with running_batch_
    std::vector<Ref> running_batch_;  // so the run phase takes exactly a snapshot
    std::vector<Timer> sleeping_;  // binary min-heap on (deadline, seq)
    std::uint64_t timer_seq_ = 0;
    std::size_t live_timers_ = 0;  // in the heap and not cancelled
    std::size_t dead_timers_ = 0;  // cancelled but still in the heap (removed lazily)

    // Indexed by fd. waiting_: the owner of each fd and what it watches (one
    // entry per fd number up to the largest owned or given a callback
    // waiter); callback_waiters_: the add_reader/add_writer/read_wait/
    // write_wait callbacks, only up to the largest fd given one (never
    // longer than waiting_, so an fd with a callback has an entry in both).
    std::vector<FdWaiters> waiting_;
    std::vector<FdCallbacks> callback_waiters_;
    std::size_t waiters_ = 0;
    // Work no slot shows (hold_work): run() keeps going, idle in the
    // selector, while a hold is linked here.
    IntrusiveList<WorkHold> holds_;
    std::vector<FdEvent> events_;    // reused across iterations
    // epoll: readiness may name an fd number closed behind its waiter's back
    // (Selector::may_report_closed_fds): checked before dispatch (move_ready_io).
    bool check_fds_before_dispatch_ = false;
    // The selector's wait failing (wait_failures.cpp): the error and how many
    // times in a row it came, and the rate limit of its reports.
    int wait_error_ = 0;
    unsigned wait_failures_in_row_ = 0;
    TimePoint wait_reported_at_{};
    std::uint64_t wait_reports_left_out_ = 0;

    std::vector<Ref> signal_handling_;  // indexed by signal number; empty until the first handler
    // The services, in creation order; `told` marks those told in the
    // current round of tell_services.
    struct ServiceEntry {
        const std::type_info* type;
        std::unique_ptr<LoopService> service;
        bool told = false;
    };
    std::vector<ServiceEntry> services_;
    std::size_t signal_handlers_ = 0;

    // call_soon_threadsafe's queue and flags: the only state other threads
    // touch, on cache lines of its own (reactor/detail/loop_inbox.hpp).
    using Posted = detail::PostedQueue::Entry;
    detail::LoopInbox inbox_;
    bool polled_ = false;  // this iteration called the selector (poll_io)
    int wakeup_fd_ = -1;  // eventfd, watched for reading; owned
    bool wakeup_read_back_ = true;  // its counter must be read after each wake-up (Selector::watch_wakeup)

    ExceptionHandler exception_handler_;
    bool stopping_ = false;
    bool running_ = false;  // inside run()/run_forever()/run_once()/run_for()
    TimePoint run_limit_ = TimePoint::max();  // run_for's end: no selector wait reaches past it

    // Debug mode and stats.
    LoopStats stats_;  // the counters (and debug-mode timings); stats() adds the rest
    LagWindow lag_;
    bool debug_ = false;
    Duration slow_threshold_{};
    Duration late_threshold_{};
    // The thread running the loop, while a run is under way (debug mode
    // only); atomic because other threads read it to find they are not it.
    std::atomic<std::thread::id> loop_thread_{};
    std::atomic<std::uint64_t> wrong_thread_calls_{0};
};

}  // namespace reactor
