// SPDX-License-Identifier: MIT
// The end of a loop, in numbered phases as iteration.cpp numbers those of
// one iteration:
//
//   phase        close()   ~Scheduler   what may be scheduled during it
//   1 report       yes     debug mode   nothing (it only reads)
//   2 close        yes         -        anything: it runs in phase 3
//   3 run          yes         -        anything: only what is ready runs, a
//                                       bounded number of iterations
//   4 abandon      yes        yes       anything, but none of it will run
//   5 drop         yes        yes       anything, but none of it will run
//   then ~Scheduler destroys the services, newest first, and drops again
//   whatever their destructors let go of.
//
// Phase 2 tells every service close(), phase 4 abandon(), both newest first
// (services.cpp). Phase 5, drop_everything(), destroys every callback still
// scheduled (its captures' destructors run; the futures waiting on it are
// cancelled) and releases every work hold. Nothing scheduled after phase 3
// ever runs, and nothing that outlives the loop is left pointing at it. Also
// live(): what is still alive, each object once.
#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "reactor/scheduler.hpp"

namespace reactor {

namespace {

// Enough for any chain of close callbacks and cancelled tasks a program
// builds on purpose; a callback that reschedules itself forever is cut off.
constexpr int kCloseIterations = 1000;

std::string due_in(Duration left) {
    return fmt::format("due in {:.3f} s", std::chrono::duration<double>(left).count());
}

// What close() and the debug-mode destructor report: everything alive but the
// signal handlers. A handler is not work (run() does not wait for it), and a
// program that ends with its SIGINT handler still installed is the norm.
std::vector<LiveItem> reportable(std::vector<LiveItem> items) {
    std::erase_if(items, [](const LiveItem& item) { return item.kind == LiveItem::Kind::signal_handler; });
    return items;
}

// One line per item ("still alive at <when>: ..."), then `summary`, each
// handed to `deliver` as an ErrorContext. Nothing for no item.
template <class Deliver>
void report_alive(const std::vector<LiveItem>& items, std::string_view when, const std::string& summary,
                  Deliver deliver) {
    if (items.empty()) return;
    ErrorContext ctx;
    for (const LiveItem& item : items) {
        ctx.message = fmt::format("still alive at {}: {}", when, item.to_string());
        deliver(ctx);
    }
    ctx.message = summary;
    deliver(ctx);
}

}  // namespace

std::string_view to_string(LiveItem::Kind kind) noexcept {
    switch (kind) {
    case LiveItem::Kind::ready: return "ready callback";
    case LiveItem::Kind::timer: return "timer";
    case LiveItem::Kind::periodic: return "periodic timer";
    case LiveItem::Kind::reader: return "reader";
    case LiveItem::Kind::writer: return "writer";
    case LiveItem::Kind::posted: return "posted callback";
    case LiveItem::Kind::signal_handler: return "signal handler";
    case LiveItem::Kind::hold: return "work hold";
    case LiveItem::Kind::listener: return "listener";
    case LiveItem::Kind::connecting: return "connect";
    case LiveItem::Kind::connection: return "connection";
    case LiveItem::Kind::udp_socket: return "UDP socket";
    case LiveItem::Kind::process: return "child process";
    case LiveItem::Kind::task: return "task";
    case LiveItem::Kind::future: return "future";
    case LiveItem::Kind::job: return "thread-pool job";
    case LiveItem::Kind::scope: return "scope";
    case LiveItem::Kind::other: return "other";
    }
    return "?";
}

std::string LiveItem::to_string() const {
    std::string line(reactor::to_string(kind));
    if (!detail.empty()) line += fmt::format(" ({})", detail);
    if (where_known) line += fmt::format(" created at {}:{}", where.file_name(), where.line());
    return line;
}

std::vector<LiveItem> Scheduler::live() const {
    std::vector<LiveItem> out;
    auto add = [&out](LiveItem::Kind kind, std::string detail, std::source_location where) {
        out.push_back(LiveItem{kind, std::move(detail), where, true});
    };
    // Timers by deadline, from the heap (a cancelled entry's slot is no
    // longer live). An owner's timer is its owner's: listed with it, below;
    // an unlisted one (call_at_unlisted), its service's.
    std::vector<Timer> timers;
    for (const Timer& t : timers_) {
        if (!detail::is_owner_timer(t.ref) && timer_live(t) && !slots_[t.ref.slot].unlisted) timers.push_back(t);
    }
    std::sort(timers.begin(), timers.end(),
              [](const Timer& a, const Timer& b) { return a.deadline < b.deadline || (a.deadline == b.deadline && a.seq < b.seq); });
    const TimePoint t0 = now();
    for (const Timer& t : timers) {
        const Slot& s = slots_[t.ref.slot];
        add(s.kind == SlotKind::periodic ? LiveItem::Kind::periodic : LiveItem::Kind::timer,
            due_in(std::max(t.deadline - t0, Duration::zero())), s.where);
    }
    for (const Slot& s : slots_) {
        switch (s.kind) {
        case SlotKind::soon:
        case SlotKind::periodic_due: add(LiveItem::Kind::ready, "", s.where); break;
        case SlotKind::oneshot_waiter:
        case SlotKind::persistent_waiter:
            if (fds_.waiting[static_cast<std::size_t>(s.fd)].owner) break;  // the owner says what it is, below
            add(s.is_read ? LiveItem::Kind::reader : LiveItem::Kind::writer,
                fmt::format("fd {}{}", s.fd, s.kind == SlotKind::oneshot_waiter ? ", one-shot" : ""), s.where);
            break;
        case SlotKind::signal_handler: add(LiveItem::Kind::signal_handler, fmt::format("signal {}", s.fd), s.where); break;
        case SlotKind::free:
        case SlotKind::timer:
        case SlotKind::periodic: break;
        }
    }
    {
        std::lock_guard lock(inbox_.mutex);
        inbox_.queue.for_each([&](const Posted& p) { add(LiveItem::Kind::posted, "", p.where); });
    }
    inbox_.batch.for_each([&](const Posted& p) { add(LiveItem::Kind::posted, "", p.where); });
    holds_.for_each([&out](const WorkHold& h) { out.push_back(h.describe()); });
    // An owned fd is its owner's, listed once, by the owner, whatever its waiters.
    for (std::size_t fd = 0; fd < fds_.waiting.size(); ++fd) {
        const FdWaiters& w = fds_.waiting[fd];
        const FdCallbacks c = fds_.callbacks_of(static_cast<int>(fd));
        if (w.owner && (live(c.read) || live(c.write) || w.watched != Interest::none || w.owner_timer))
            w.owner->describe(static_cast<int>(fd), out);
    }
    services_.describe(out);
    std::stable_sort(out.begin(), out.end(), [](const LiveItem& a, const LiveItem& b) { return a.kind < b.kind; });
    return out;
}

std::vector<LiveItem> Scheduler::close() {
    require_loop_thread("close");
    if (running_) throw std::logic_error("reactor: close() while the loop is running (called from a callback?)");
    // 1. report
    std::vector<LiveItem> alive = reportable(live());
    report_alive(alive, "close",
                 fmt::format("close: {} item(s) were still alive: connections aborted, tasks cancelled, the rest "
                             "destroyed unrun",
                             alive.size()),
                 [this](const ErrorContext& ctx) { call_exception_handler(ctx); });
    // 2. close
    services_.close_all();
    release_holds();
    // 3. run
    {
        running_ = true;  // run_once_unguarded's precondition; refuses re-entry meanwhile
        struct Unmark {
            bool& running;
            ~Unmark() { running = false; }
        } unmark{running_};
        inbox_.look_for_posts.store(true);  // what was posted before close() is taken at once
        for (int i = 0; i < kCloseIterations && ready_count() != 0; ++i) run_once_unguarded();
    }
    stopping_ = false;
    // 4. abandon
    services_.abandon_all();
    // 5. drop
    drop_everything();
    return alive;
}

// ~Scheduler in debug mode: what is left alive is named on stderr (the
// default handler's channel), never through the program's exception handler:
// it may capture objects declared after the Scheduler, already destroyed.
void Scheduler::report_leaks_at_destruction() noexcept {
    try {
        std::vector<LiveItem> alive = reportable(live());
        report_alive(alive, "destruction",
                     fmt::format("~Scheduler: {} item(s) were still alive, destroyed unrun (call close() first to "
                                 "end them in order)",
                                 alive.size()),
                     default_exception_handler);
    } catch (...) {
        // out of memory while reporting: the destruction goes on regardless
    }
}

// A hold's owner may still release or destroy it: it then finds it empty.
void Scheduler::release_holds() noexcept {
    while (WorkHold* h = holds_.pop_front()) h->sched_ = nullptr;
}

void Scheduler::drop_everything() noexcept {
    // First, while the wakeup fd the signal handler writes to is still open.
    remove_all_signal_handlers();
    release_holds();
    // Destroying a callback may run user destructors that touch the scheduler
    // (schedule, cancel, report): keep every member alive until none is left.
    // inbox_.queue only under its mutex: a pool worker may be posting right now.
    // Posts taken but not run (a batch cut short) go first, in their order.
    // Their chunks go back to the allocator, spares too.
    auto take_posted = [this](detail::PostedQueue& doomed) {
        doomed.append(inbox_.batch);
        inbox_.batch.release_spares();
        std::lock_guard lock(inbox_.mutex);
        doomed.append(inbox_.queue);
        inbox_.queue.release_spares();
    };
    // Each round's posts and slots are destroyed at its end; what their
    // destructors schedule or post is dropped by the next round.
    for (;;) {
        detail::PostedQueue doomed_posted;
        take_posted(doomed_posted);
        if (slots_.empty() && doomed_posted.empty()) break;
        auto doomed_slots = std::move(slots_);
        slots_.clear();
        periodic_.clear();
        free_head_ = kNoSlot;
        ready_.clear();
        timers_.clear();
        // The fds stay open (they are not ours), but the selector must stop
        // watching them: close() leaves a loop that may run again.
        for (std::size_t fd = 0; fd < fds_.waiting.size(); ++fd) {
            const FdCallbacks c = fds_.callbacks_of(static_cast<int>(fd));
            if (c.read.slot != kNoSlot || c.write.slot != kNoSlot || fds_.waiting[fd].watched != Interest::none) {
                selector_->forget(static_cast<int>(fd));
            }
        }
        fds_.waiting.clear();
        fds_.callbacks.clear();
        signal_handling_.clear();
        timers_.live = timers_.dead = fds_.waiters = 0;
    }
}

}  // namespace reactor
