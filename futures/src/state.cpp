// The non-template half of a future's shared state: completion, callback
// scheduling, cancellation, and death (with the "exception was never retrieved"
// report). See futures/detail/state.hpp for the state diagram.
#include "futures/detail/state.hpp"

#include <memory>

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
// recursion keeps the stack flat for a million-long pending chain.
struct DisposeQueue {
    StateBase* head = nullptr;
    StateBase* tail = nullptr;
    bool draining = false;
};
thread_local DisposeQueue dispose_queue;

}  // namespace

// ---------------------------------------------------------------- callbacks

std::uint32_t WaiterList::push(Waiter w) {
    if (size_ == UINT32_MAX - 1) throw std::length_error("futures: too many done-callbacks on one future");
    if (size_ == 0) {
        first_ = w;
    } else {
        rest_.push_back(w);
    }
    return size_++;
}

void WaiterList::drop(Waiter w) noexcept {
    switch (w.kind) {
    case Waiter::Kind::state:
        static_cast<StateBase*>(w.target)->release();
        break;
    case Waiter::Kind::user:
        delete static_cast<UserCallback*>(w.target);
        break;
    case Waiter::Kind::empty:
        break;
    }
}

void WaiterList::clear() noexcept {
    // Emptied before anything is released: releasing may run destructors that
    // reach other states, never this list, but keep it consistent anyway.
    Waiter first = std::exchange(first_, Waiter{});
    std::vector<Waiter> rest = std::move(rest_);
    rest_.clear();
    size_ = 0;
    drop(first);
    for (Waiter w : rest) drop(w);
}

CallbackId StateBase::add_callback(reactor::Callback cb, std::source_location where) {
    if (!cb) throw std::invalid_argument("futures: empty done-callback");
    auto* box = new UserCallback{std::move(cb), where};
    std::uint32_t index;
    try {
        index = callbacks_.push(Waiter{box, 0, Waiter::Kind::user});
    } catch (...) {
        delete box;
        throw;
    }
    if (!pending()) schedule(index);  // already done: still never inline
    return CallbackId{index};
}

CallbackId StateBase::add_waiter(StateBase* waiter, std::uint32_t tag) {
    std::uint32_t index = callbacks_.push(Waiter{waiter, tag, Waiter::Kind::state});
    waiter->add_ref();
    if (!pending()) schedule(index);
    return CallbackId{index};
}

bool StateBase::remove_callback(CallbackId id) noexcept {
    if (id.index >= callbacks_.size()) return false;
    Waiter w = callbacks_.take(id.index);
    if (w.kind == Waiter::Kind::empty) return false;  // already started, or removed
    WaiterList::drop(w);  // a trampoline already scheduled finds the entry empty
    return true;
}

void StateBase::on_ready(StateBase&, std::uint32_t) {}

// What a completed state puts on the ready queue for each of its waiters.
// It keeps the state alive until the waiter has run, so the waiter may read
// the state through a plain reference (and so hold no reference to it that
// would make a cycle while pending). If the Scheduler drops it unrun (it is
// being destroyed), it drops the waiter too: that releases whatever the waiter
// held (a task waiting on this state, say), which breaks the cycle a pending
// task forms with the future it waits on. 16 bytes: stored inline.
struct StateBase::Trampoline {
    Ref<StateBase> self;
    std::uint32_t index;

    Trampoline(Ref<StateBase> s, std::uint32_t i) noexcept : self(std::move(s)), index(i) {}
    Trampoline(Trampoline&&) noexcept = default;
    Trampoline& operator=(Trampoline&&) = delete;
    ~Trampoline() {
        if (self) WaiterList::drop(self->callbacks_.take(index));  // after a run: already empty
    }
    void operator()() { self->run_callback(index); }
};

void StateBase::schedule(std::uint32_t index) {
    const Waiter& w = callbacks_[index];
    std::source_location where = w.kind == Waiter::Kind::user ? static_cast<UserCallback*>(w.target)->where
                                                               : static_cast<StateBase*>(w.target)->origin_;
    sched_->call_soon(Trampoline(Ref<StateBase>(this), index), where);
}

void StateBase::schedule_all() {
    for (std::uint32_t i = 0, n = callbacks_.size(); i < n; ++i) {
        if (callbacks_[i].kind != Waiter::Kind::empty) schedule(i);
    }
}

void StateBase::run_callback(std::uint32_t index) {
    // Taken out before it runs: it runs once, and remove_callback now says false.
    Waiter w = callbacks_.take(index);
    switch (w.kind) {
    case Waiter::Kind::state: {
        auto waiter = Ref<StateBase>::adopt(static_cast<StateBase*>(w.target));
        waiter->on_ready(*this, w.tag);
        break;
    }
    case Waiter::Kind::user: {
        std::unique_ptr<UserCallback> box(static_cast<UserCallback*>(w.target));
        box->cb();  // an exception goes to the Scheduler's handler, naming `where`
        break;
    }
    case Waiter::Kind::empty:
        break;  // removed after it was scheduled
    }
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

StateBase* StateBase::cancel_step(bool& accepted) {
    accepted = pending();
    if (!accepted) return nullptr;
    StateBase* upstream = waiting_on();
    clear_wait();
    finish_cancelled();
    return upstream;
}

bool StateBase::cancel() {
    bool accepted = false;
    Ref<StateBase> next(cancel_step(accepted));
    while (next) {
        bool ignored = false;
        next = Ref<StateBase>(next->cancel_step(ignored));
    }
    return accepted;
}

// ---------------------------------------------------------------- death

void StateBase::die(StateBase* s) noexcept {
    DisposeQueue& q = dispose_queue;
    s->next_dead_ = nullptr;
    if (q.tail) {
        q.tail->next_dead_ = s;
    } else {
        q.head = s;
    }
    q.tail = s;
    if (q.draining) return;  // the outer die() gets to it
    q.draining = true;
    while (StateBase* dead = q.head) {
        q.head = dead->next_dead_;
        if (!q.head) q.tail = nullptr;
        dead->dispose();
    }
    q.draining = false;
}

void StateBase::dispose() noexcept {
    ++weak_;  // the memory must outlive the payload's destructors, which may drop weak refs to us
    report_unretrieved();
    destroy_payload();
    callbacks_.clear();
    link_.reset();
    error_ = nullptr;
    if (--weak_ == 0) delete this;
}

void StateBase::report_unretrieved() noexcept {
    if (status_ != Status::failed || retrieved_) return;
    reactor::ErrorContext ctx;
    try {
        ctx.message = fmt::format("{} exception was never retrieved", kind());
    } catch (...) {
        ctx.message = "exception was never retrieved";
    }
    ctx.exception = error_;
    ctx.origin = origin_;
    ctx.origin_known = true;
    sched_->call_exception_handler(ctx);
}

}  // namespace detail
}  // namespace futures
