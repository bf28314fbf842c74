// SPDX-License-Identifier: MIT
// The non-template half of a future's shared state: completion,
// cancellation along links, and death (with the "exception was never
// retrieved" report); its waiters are in state_waiters.cpp. The state
// diagram is in futures/future.hpp.
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
