// SPDX-License-Identifier: MIT
// The loop itself: the slot table behind every Handle, scheduling, and the
// ways to run it; iteration.cpp holds the phases of one iteration. Around
// it: cancel.cpp (Handle, lazy removal), fd_waiters.cpp (registration),
// periodic.cpp (re-arming periodic timers), signals.cpp (signal handlers),
// threadsafe_post.cpp (the only code other threads run), exception_handler.cpp
// (the reports), services.cpp (services and work holds), shutdown.cpp (the
// end). Loop thread only; never owns the fds it watches.
#include "reactor/scheduler.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>


namespace reactor {

// ---------------------------------------------------------------- lifetime

Scheduler::Scheduler() : Scheduler(Options{}) {}

Scheduler::Scheduler(Options options)
    : selector_(options.selector ? options.selector.take() : make_selector(options.backend)),
      kernel_(std::move(options.kernel)),
      clock_(std::move(options.clock)) {
    configure_debug(options);  // debug.cpp; first: it may throw, and nothing is owned yet
    if (options.wakeup_recheck_interval < Duration::zero())
        throw std::invalid_argument("reactor: Options::wakeup_recheck_interval must not be negative");
    if (!clock_) wakeup_recheck_ = options.wakeup_recheck_interval;
    wakeup_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wakeup_fd_ < 0)
        throw std::system_error(errno, std::generic_category(), "reactor: cannot create the loop's wake-up eventfd");
    check_fds_before_dispatch_ = selector_->may_report_closed_fds();
    try {
        wakeup_read_back_ = !selector_->watch_wakeup(wakeup_fd_);
    } catch (...) {
        ::close(wakeup_fd_);
        throw;
    }
}

// The phases are close()'s last two, then the services go (shutdown.cpp).
Scheduler::~Scheduler() {
    refuse_posts();
    if (debug_.on) report_leaks_at_destruction();
    services_.abandon_all();  // what owns itself on this loop ends first, while the loop is whole
    drop_everything();
    // What a service's destructor lets go of is dropped in turn, and a
    // service made meanwhile (a dropped callback's destructor submitting a
    // job) goes in the next round.
    do {
        services_.destroy_all();
        drop_everything();
    } while (!services_.empty());
    ::close(wakeup_fd_);
}

// ---------------------------------------------------------------- slots

Scheduler::Ref Scheduler::alloc_slot(Callback&& cb, std::source_location where, SlotKind kind) {
    std::uint32_t i;
    if (free_head_ != kNoSlot) {
        i = free_head_;
        free_head_ = slots_[i].next_free;
    } else {
        if (slots_.size() >= detail::kMaxSlots) throw std::length_error("reactor: too many scheduled callbacks");
        i = static_cast<std::uint32_t>(slots_.size());
        slots_.emplace_back();
    }
    Slot& s = slots_[i];
    s.cb = std::move(cb);
    s.where = where;
    s.kind = kind;
    return Ref{i, s.gen};
}

void Scheduler::free_slot(std::uint32_t i) {
    Slot& s = slots_[i];
    // Destroy the callable only after the bookkeeping: its captures' destructors
    // may re-enter the scheduler and grow slots_.
    Callback doomed = std::move(s.cb);
    if (s.kind == SlotKind::periodic || s.kind == SlotKind::periodic_due) periodic_.erase(i);
    s.kind = SlotKind::free;
    s.unlisted = false;
    ++s.gen;
    s.fd = -1;
    s.next_free = free_head_;
    free_head_ = i;
}

// ---------------------------------------------------------------- scheduling

Handle Scheduler::call_soon(Callback cb, std::source_location where) {
    require_loop_thread("call_soon", &where);
    Ref r = alloc_slot(std::move(cb), where, SlotKind::soon);
    ready_.push_back(r);
    return Handle(this, r.slot, r.gen);
}

Handle Scheduler::call_at(TimePoint deadline, Callback cb, std::source_location where) {
    require_loop_thread("call_at", &where);
    Ref r = alloc_slot(std::move(cb), where, SlotKind::timer);
    arm_timer(deadline, r);
    return Handle(this, r.slot, r.gen);
}

Handle Scheduler::call_at_unlisted(TimePoint deadline, Callback cb, std::source_location where) {
    Handle h = call_at(deadline, std::move(cb), where);
    slots_[h.slot_].unlisted = true;  // free_slot clears it
    return h;
}

void Scheduler::arm_timer(TimePoint deadline, Ref r) {
    timers_.push(deadline, r);
    ++timers_.live;
}

TimePoint Scheduler::timer_base() {
    // Inside the loop, delays count from the cached clock. Outside it the cache
    // may be arbitrarily old, and counting from it would fire early.
    if (!running_) now_stale_ = true;
    return now();
}

// ---------------------------------------------------------------- fd waiters

// Registration lives in fd_waiters.cpp; this is used by run_ready.
Interest Scheduler::interest_of(int fd) const {
    const FdCallbacks c = fds_.callbacks_of(fd);
    Interest i = Interest::none;
    if (live(c.read)) i = i | Interest::read;
    if (live(c.write)) i = i | Interest::write;
    return i | fds_.waiting[static_cast<std::size_t>(fd)].watched;
}

// ---------------------------------------------------------------- the loop

bool Scheduler::has_work() const {
    return !ready_.empty() || timers_.live > 0 || fds_.waiters > 0 || !holds_.empty() ||
           inbox_.wake_pending.load(std::memory_order_acquire) || inbox_.look_for_posts.load(std::memory_order_acquire);
}

// Not !has_work(), which may over-count (the loop then just spends one
// non-blocking iteration): a cancelled call_soon leaves a dead entry in ready_
// until the next run phase skips it, and inbox_.wake_pending can stay set after its
// post was already drained (a poster that pushed before the drain's swap but
// flipped the flag after it). Neither is work, so count what really is.
bool Scheduler::empty() const {
    if (ready_count() != 0 || timers_.live != 0 || fds_.waiters != 0 || !holds_.empty()) return false;
    std::lock_guard lock(inbox_.mutex);
    return inbox_.queue.empty();
}

// Posts taken from other threads count one each, not as their one entry.
std::size_t Scheduler::ready_count() const {
    return inbox_.batch.size() + static_cast<std::size_t>(std::count_if(ready_.begin(), ready_.end(), [this](Ref r) {
               return !detail::is_posted_batch(r) && ready_entry_live(r);
           }));
}

void Scheduler::stop() {
    require_loop_thread("stop");
    stopping_ = true;
}

// Marks the loop as running for the scope; refuses re-entry, because a
// callback that ran the loop again would run the batch its caller is running.
namespace {
// The Scheduler this thread is running (Scheduler::running()); a run is
// never nested on one thread for one Scheduler, but a callback may run
// another Scheduler, so the previous one is restored.
thread_local Scheduler* t_running = nullptr;
}  // namespace

Scheduler* Scheduler::running() noexcept { return t_running; }

class Scheduler::RunGuard {
public:
    explicit RunGuard(Scheduler& s) : s_(s), previous_(t_running) {
        s_.require_loop_thread("run/run_forever/run_once/run_for");
        if (s_.running_) throw std::logic_error("reactor: the loop is already running (run called from a callback?)");
        s_.running_ = true;
        t_running = &s_;
        // Debug mode: the thread other threads must not be (debug.cpp).
        if (s_.debug_.on) s_.debug_.loop_thread.store(std::this_thread::get_id(), std::memory_order_release);
    }
    ~RunGuard() {
        t_running = previous_;
        s_.running_ = false;
        if (s_.debug_.on) s_.debug_.loop_thread.store(std::thread::id{}, std::memory_order_release);
    }
    RunGuard(const RunGuard&) = delete;
    RunGuard& operator=(const RunGuard&) = delete;

private:
    Scheduler& s_;
    Scheduler* previous_;
};

void Scheduler::run() {
    RunGuard guard(*this);
    now_stale_ = true;
    // Like run_forever (and asyncio), a stop() requested before the call still
    // lets one iteration run.
    while (has_work()) {
        run_once_unguarded();
        if (stopping_) break;
    }
    stopping_ = false;
}

void Scheduler::run_forever() {
    RunGuard guard(*this);
    now_stale_ = true;
    do {
        run_once_unguarded();
    } while (!stopping_);
    stopping_ = false;
}

void Scheduler::run_once() {
    RunGuard guard(*this);
    run_once_unguarded();
    // A stop() made by this iteration's callbacks is satisfied: run_once
    // returns after one iteration anyway. Left pending, it would make the next
    // run() return without running anything and the next run_once() poll
    // instead of waiting (compute_timeout returns 0 while stopping_).
    stopping_ = false;
}

RunStatus Scheduler::run_until_time(TimePoint limit) {
    RunGuard guard(*this);
    now_stale_ = true;
    run_limit_ = limit;
    // Restores "no limit" however the run ends (a selector may throw).
    struct ClearLimit {
        TimePoint& limit;
        ~ClearLimit() { limit = TimePoint::max(); }
    } clear_limit{run_limit_};
    RunStatus status = RunStatus::idle;
    while (has_work()) {
        run_once_unguarded();
        if (stopping_) {
            status = RunStatus::stopped;
            break;
        }
        if (now() >= limit) {
            // has_work() may over-count (see empty()): say idle when nothing is left.
            status = empty() ? RunStatus::idle : RunStatus::timed_out;
            break;
        }
    }
    stopping_ = false;
    return status;
}

}  // namespace reactor
