// SPDX-License-Identifier: MIT
// A future's shared state, its waiters (the other half: state.cpp): adding
// and removing them, and running them once the state is complete, in order,
// from the loop (or inline, for an inline waiter).
#include "futures/future.hpp"  // with futures/detail/state.hpp (report_error) and link.hpp

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace futures::detail {

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

}  // namespace futures::detail
