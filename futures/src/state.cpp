// SPDX-License-Identifier: MIT
// The non-template half of a future's shared state: completion, waking the
// waiters, cancellation along links, and death (with the "exception was never
// retrieved" report). The state diagram is in futures/future.hpp.
#include "futures/future.hpp"  // with futures/detail/state.hpp and link.hpp
#include "futures/then.hpp"    // report_orphan_exception

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace futures {

std::string_view to_string(Status status) noexcept {
    switch (status) {
    case Status::pending:
        return "pending";
    case Status::done:
        return "done";
    case Status::failed:
        return "failed";
    case Status::cancelled:
        return "cancelled";
    }
    return "?";
}

namespace detail {
namespace {

bool is_cancelled_error(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const CancelledError&) {
        return true;
    } catch (...) {
        return false;
    }
}

// States whose last strong reference went while another state was being
// disposed. Disposing a state drops its callbacks, which may hold the last
// reference to the next state of a chain, and so on: a queue instead of
// recursion keeps the stack flat for a million-long pending chain. The queue
// is a vector of the loop thread's, not a link in every state (every future's
// state is a word smaller); it keeps a modest capacity for the next time. If
// it cannot grow (out of memory), or is gone (the thread is exiting and a
// thread_local held a future), the state is disposed on the spot instead:
// recursion, which only a chain that long and that unlucky would notice.
struct DisposeQueue {
    static constexpr std::size_t kKeptCapacity = 1024;
    std::vector<StateBase*> dead;  // in order of death; disposed from `next` on
    std::size_t next = 0;
    ~DisposeQueue();
};
thread_local constinit bool disposing = false;  // a die() is draining the queue
thread_local constinit bool queued = false;     // ... and has queued states since it began
thread_local constinit bool dispose_queue_gone = false;
thread_local DisposeQueue dispose_queue;
DisposeQueue::~DisposeQueue() { dispose_queue_gone = true; }

}  // namespace

// ---------------------------------------------------------------- waiters

CallbackId StateBase::add_user_callback(UserCallback* box) {
    std::uint32_t index;
    try {
        index = waiters_.push(Waiter::user(box));
    } catch (...) {
        box->dispose();
        throw;
    }
    if (!pending()) schedule(index, index + 1);  // already done: still never inline
    return CallbackId{index};
}

void StateBase::throw_complete(const char* operation) {
    throw std::logic_error(fmt::format("futures: {} on a complete state", operation));
}

void StateBase::add_waiter(Link& link) {
    std::uint32_t index = waiters_.push(Waiter::link(&link));
    link.owner().add_ref();
    if (!pending()) schedule(index, index + 1);
}

bool StateBase::remove_callback(CallbackId id) noexcept {
    if (id.index >= waiters_.size()) return false;
    Waiter w = waiters_[id.index];
    if (!w.as_user()) return false;  // already started, or removed (ids name user callbacks only)
    waiters_.take(id.index);
    WaiterList::drop(w);  // a trampoline already scheduled finds the entry empty
    return true;
}

std::span<Link> StateBase::links() noexcept { return {}; }

std::vector<StateBase*> StateBase::awaited() const {
    std::vector<StateBase*> out;
    // links() only lists them; it is not const because cancel() cuts them.
    for (const Link& link : const_cast<StateBase*>(this)->links())
        if (StateBase* up = link.upstream()) out.push_back(up);
    return out;
}

// What a completed state puts on the ready queue: it runs the waiters
// [next, end) in order. One for all the waiters registered before the state
// completed (they would have been consecutive entries of one batch of the
// ready queue anyway: the same order, but one call_soon instead of one per
// waiter), one per waiter added afterwards. It keeps the state alive until the
// waiters have run, so a waiter may read the state through a plain reference
// (and so hold no reference to it that would make a cycle while pending). If
// the Scheduler drops it unrun (it is being destroyed: nothing else drops a
// scheduled callback), a waiting state among the waiters can never be resumed:
// it is told so (wakeup_lost), and its other waiters are dropped. That frees
// the cycles of pending work: a task holds the future it waits on, whose
// waiter list holds the task.
// 16 bytes: stored inline, and relocatable (a counted pointer and two
// indexes): the Scheduler moves it as bytes.
struct StateBase::Trampoline {
    using relocatable = void;
    Ref<StateBase> self;
    std::uint32_t next;
    std::uint32_t end;

    Trampoline(Ref<StateBase> s, std::uint32_t first, std::uint32_t last) noexcept
        : self(std::move(s)), next(first), end(last) {}
    Trampoline(Trampoline&&) noexcept = default;
    Trampoline& operator=(Trampoline&&) = delete;
    ~Trampoline() {
        if (!self) return;  // moved from
        for (; next < end; ++next) {
            Waiter w = self->waiters_.take(next);
            if (Link* link = w.as_link()) {
                auto owner = Ref<StateBase>::adopt(&link->owner());  // the entry's reference
                owner->wakeup_lost();
            } else {
                WaiterList::drop(w);
            }
        }
    }
    void operator()() {
        while (next < end) self->run_waiter(next++);
    }
};

void StateBase::schedule(std::uint32_t first, std::uint32_t end) {
    sched_->call_soon(Trampoline(Ref<StateBase>(this), first, end), origin_);
}

void StateBase::schedule_all() {
    // Entries removed before completion are skipped; none left: nothing to schedule.
    std::uint32_t first = 0, end = waiters_.size();
    if (end == 0) return;  // nobody waits (a joined task, a future read by result())
    if (inline_waiters_) [[unlikely]]
        return schedule_all_and_run_inline();
    while (first < end && waiters_[first].empty()) ++first;
    while (end > first && waiters_[end - 1].empty()) --end;
    if (first < end) schedule(first, end);
}

// schedule_all with inline waiters (add_inline_waiter): the batch is
// scheduled first, without them at its ends (a state whose one waiter is
// its scope's record schedules nothing), then each is taken out (one inside
// the batch leaves an empty entry behind, which the batch skips) and run.
// What one schedules (a scope's reaping call) goes after the batch.
void StateBase::schedule_all_and_run_inline() {
    inline_waiters_ = false;
    if (waiters_.size() == 1 && waiters_[0].is_inline()) {  // a scope's child that nothing else waits on
        run_inline(waiters_.take(0).as_user());
        return;
    }
    struct RunInline {
        StateBase& self;
        ~RunInline() { self.run_inline_waiters(); }  // also if scheduling throws
    } run_inline{*this};
    auto skipped = [this](std::uint32_t i) {
        const Waiter w = waiters_[i];
        return w.empty() || w.is_inline();
    };
    std::uint32_t first = 0, end = waiters_.size();
    while (first < end && skipped(first)) ++first;
    while (end > first && skipped(end - 1)) --end;
    if (first < end) schedule(first, end);
}

void StateBase::run_inline_waiters() noexcept {
    const std::uint32_t n = waiters_.size();
    for (std::uint32_t i = 0; i < n; ++i)
        if (waiters_[i].is_inline()) run_inline(waiters_.take(i).as_user());
}

void StateBase::run_inline(UserCallback* w) noexcept {
    try {
        w->run(*this);
    } catch (...) {
        report_error(*sched_, "exception in an inline waiter", std::current_exception(), w->where());
    }
}

void StateBase::run_waiter(std::uint32_t index) noexcept {
    // Taken out before it runs: it runs once, and remove_callback now says false.
    // What it throws goes to the exception handler, naming where it was
    // registered, as the Scheduler does for a callback of its own.
    Waiter w = waiters_.take(index);
    if (Link* link = w.as_link()) {
        auto owner = Ref<StateBase>::adopt(&link->owner());  // the entry's reference
        try {
            link->wake(*this);
        } catch (...) {
            report_error(*sched_, "exception in callback", std::current_exception(), owner->origin_);
        }
    } else if (UserCallback* user = w.as_user()) {
        try {
            user->run(*this);
        } catch (...) {
            report_error(*sched_, "exception in callback", std::current_exception(), user->where());
        }
        user->dispose();
    }  // else removed after it was scheduled
}

// ---------------------------------------------------------------- completion

void StateBase::abandon(const char* why) noexcept {
    if (!pending()) return;
    try {
        finish_cancelled(std::make_exception_ptr(CancelledError(
            fmt::format("{} (the future created at {}:{})", why, origin_.file_name(), origin_.line()))));
    } catch (...) {
        finish_cancelled();  // out of memory for the message: plain CancelledError
    }
}

void StateBase::wakeup_lost() noexcept {
    if (!pending()) return;
    // What it holds goes first, without running: a task's machine (or a
    // continuation's function) may hold the very futures whose waiter lists
    // hold this state, and the objects its code would touch may be gone.
    for (Link& link : links()) link.cut();
    destroy_payload();
    abandon("the Scheduler was destroyed while this future waited");
}

void StateBase::finish_done() {
    status_ = Status::done;
    schedule_all();
}

void StateBase::finish_failed(std::exception_ptr e) {
    status_ = Status::failed;
    error_ = std::move(e);
    schedule_all();
}

void StateBase::finish_exception(std::exception_ptr e) {
    if (is_cancelled_error(e)) {
        finish_cancelled(std::move(e));
    } else {
        finish_failed(std::move(e));
    }
}

void StateBase::finish_cancelled(std::exception_ptr e) {
    status_ = Status::cancelled;
    error_ = std::move(e);  // null: result() makes a CancelledError naming this future
    schedule_all();
}

void StateBase::finish_like(StateBase& src) {
    if (src.status_ == Status::cancelled) {
        finish_cancelled(src.error_);
    } else {
        src.retrieved_ = true;  // passed on: from now on this state answers for it
        finish_failed(src.error_);
    }
}

void StateBase::require_settable(const char* operation) const {
    if (!settable_) {
        throw InvalidStateError(fmt::format(
            "{}: this {} (created at {}:{}) completes itself; only a future made with Future(sched) can be "
            "completed by hand",
            operation, kind(), origin_.file_name(), origin_.line()));
    }
    if (!pending()) {
        throw InvalidStateError(fmt::format("{}: the future created at {}:{} is already {}", operation,
                                            origin_.file_name(), origin_.line(), to_string(status_)));
    }
}

void StateBase::throw_not_done() {
    switch (status_) {
    case Status::pending:
        throw InvalidStateError(fmt::format("result() of the {} created at {}:{}: it is still pending", kind(),
                                            origin_.file_name(), origin_.line()));
    case Status::failed:
        retrieved_ = true;
        std::rethrow_exception(error_);
    case Status::cancelled:
        if (error_) std::rethrow_exception(error_);
        throw CancelledError(
            fmt::format("the {} created at {}:{} was cancelled", kind(), origin_.file_name(), origin_.line()));
    case Status::done:
        break;
    }
    throw InvalidStateError("futures: throw_not_done on a done future");
}

std::exception_ptr StateBase::exception() {
    if (status_ == Status::done) return nullptr;
    if (status_ == Status::failed) {
        retrieved_ = true;
        return error_;
    }
    throw_not_done();  // pending: InvalidStateError; cancelled: CancelledError
}

// ---------------------------------------------------------------- cancellation

Ref<StateBase> StateBase::cancel_step(bool& accepted) {
    accepted = pending();
    if (!accepted) return {};
    finish_cancelled();
    return cancel_links();
}

Ref<StateBase> StateBase::cancel_links() {
    std::span<Link> all = links();
    if (all.empty()) return {};
    // The last one is held first: cancelling the others must not free it.
    Ref<StateBase> last = all.back().cut();
    for (Link& link : all.first(all.size() - 1)) {
        if (Ref<StateBase> up = link.cut()) up->cancel();
    }
    return last;
}

void StateBase::cancel_upstream() {
    if (Ref<StateBase> up = cancel_links()) up->cancel();
}

bool StateBase::cancel() {
    bool accepted = false;
    Ref<StateBase> next = cancel_step(accepted);
    while (next) {
        bool ignored = false;
        next = next->cancel_step(ignored);
    }
    return accepted;
}

// ---------------------------------------------------------------- death

void StateBase::die(StateBase* s) noexcept {
    if (disposing) {  // the outer die() gets to it
        if (!dispose_queue_gone) {
            try {
                dispose_queue.dead.push_back(s);
                queued = true;
                return;
            } catch (...) {
                // out of memory: on the spot
            }
        }
        s->dispose();
        return;
    }
    disposing = true;
    s->dispose();
    if (queued && !dispose_queue_gone) {  // most deaths free nothing else: no vector touched
        DisposeQueue& q = dispose_queue;
        while (q.next < q.dead.size()) q.dead[q.next++]->dispose();  // may push more
        queued = false;
        q.dead.clear();
        q.next = 0;
        if (q.dead.capacity() > DisposeQueue::kKeptCapacity) std::vector<StateBase*>().swap(q.dead);
    }
    disposing = false;
}

void StateBase::dispose() noexcept {
    ++weak_;  // the memory must outlive what runs below, which may drop weak refs to us
    report_unretrieved();
    if (weak_ == 1) {
        // No link points here (the usual case): the destructors destroy the
        // payload, the links, the value and the waiters, in that order.
        weak_ = 0;
        delete this;
        return;
    }
    // Links still point here: the memory stays for them, what it holds goes now.
    for (Link& link : links()) link.cut();
    destroy_payload();
    destroy_value();
    waiters_.clear();
    error_ = nullptr;
    if (--weak_ == 0) delete this;
}

void StateBase::report_unretrieved() noexcept {
    if (status_ != Status::failed || retrieved_) return;
    std::string message;
    try {
        message = fmt::format("{} exception was never retrieved", kind());
    } catch (...) {
    }
    report_error(*sched_, message.empty() ? "exception was never retrieved" : message, error_, origin_);
}

void report_error(reactor::Scheduler& sched, std::string_view message, std::exception_ptr error,
                  std::source_location where) noexcept {
    reactor::ErrorContext ctx;
    try {
        ctx.message = message;
    } catch (...) {
        // out of memory: the report goes out without its message
    }
    ctx.exception = std::move(error);
    ctx.origin = where;
    ctx.origin_known = true;
    sched.call_exception_handler(ctx);
}

// Declared in futures/then.hpp: a continuation threw after its output was
// already complete (cancelled, say), so the error has nowhere else to go.
void report_orphan_exception(StateBase& out, std::exception_ptr error) noexcept {
    report_error(out.scheduler(), "exception in a continuation whose future was already complete", std::move(error),
                 out.origin());
}

}  // namespace detail
}  // namespace futures
