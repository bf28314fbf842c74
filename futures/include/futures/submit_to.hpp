// SPDX-License-Identifier: MIT
// futures::submit_to: runs a function on another loop and brings its result
// back as a Future on the caller's loop (Seastar's smp::submit_to).
//
//   Future<int> f = futures::submit_to(group.loop(1), [] { return count_here(); });
//
// Ownership: a future belongs to the loop it was made on and is never touched
// from another. So fn runs on `target` (and is destroyed there, or on the
// caller's thread if `target` refuses it), the returned future lives on the
// caller's loop, and the two meet only through a small shared record (the
// outcome, a cancelled flag) handed across with posts; the caller's loop
// keeps the future's state, on its own thread, until the outcome comes back.
//
// The future:
//   - is done with fn's value, or failed with the exception fn threw; if fn
//     returns a Future<U> (made on `target`), the result is that future's U,
//     its failure, or, if it was cancelled there, a cancellation;
//   - cancelled before fn started: fn never runs; cancelled after: fn runs to
//     its end on `target`, and a future it returned is cancelled there, on
//     `target`'s thread (the cancellation is posted to it); the result is
//     discarded, and the future is cancelled at once;
//   - as a futures::Scope child (scope.spawn(submit_to(...))): the scope's
//     cancellation reaches the work on `target` as above, and close() also
//     waits until `target` is done with it (fn skipped, or fn returned and
//     the future it returned has settled there), though the caller's future
//     is cancelled at once (only a direct child is waited for that way);
//   - fails with futures::LoopClosedError if `target` has ended (a LoopGroup
//     loop that stopped, a Scheduler that refuses posts) before running fn,
//     or is closed or destroyed before the future fn returned completed;
//   - is cancelled if the caller's own loop is closed (Scheduler::close) or
//     destroyed before the outcome comes back: the outcome is then dropped
//     and nothing touches that loop any more.
// While the outcome is on its way the caller's loop counts it as work (run() waits for it; live()
// lists it by the line of the submit_to call). fn runs on another thread: it must capture only what
// is safe to use there (values, objects owned by `target`), never the caller's futures. Its value
// is moved across threads, so it too must not be bound to the caller's loop. `target` must outlive
// the call (a LoopGroup's loops live as long as the group); after that, an ended target is safe to
// name. Loop thread only (the caller's loop); `target` may be that same loop.
//
// In a sim world (reactor/testing/sim/world.hpp), between hosts of one world (or a host and itself):
// fn runs on the target host's loop; the world wakes a host at rest that is posted to and steps it
// in an order drawn from its seed; a target host that crashes first is an ended target. Refused
// (std::logic_error): a host to a loop not of its world, such a loop to a host (a post from another
// thread, or at a time no seed decides), two real loops while a world runs a host on this thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <reactor/export.hpp>
#include <reactor/loop_service.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/work_hold.hpp>

#include "futures/detail/remote_end.hpp"
#include "futures/future.hpp"

namespace futures {

// The loop that was to run a submit_to function ended first.
class REACTOR_API LoopClosedError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

namespace detail {

class SubmitPort;

// How the target reaches the caller's loop: the Scheduler, cleared (under the mutex) when the
// caller's SubmitPort is destroyed with its Scheduler: a late outcome never touches it then.
struct SubmitMailbox {
    std::mutex mutex;
    reactor::Scheduler* sched;
    explicit SubmitMailbox(reactor::Scheduler& s) : sched(&s) {}
};

// The record both loops share (destroyed by whichever lets go last); fields grouped by who touches them.
struct CrossCallBase {
    enum class Outcome : std::uint8_t { none, value, error, target_closed };
    virtual ~CrossCallBase() = default;
    // Set before the record is handed over; read-only after.
    std::shared_ptr<SubmitMailbox> mailbox;
    std::source_location where;
    // Set by the caller when its future is cancelled; the target then skips fn.
    std::atomic<bool> cancelled{false};
    // Written by the target before it posts the outcome (the post orders it).
    Outcome outcome = Outcome::none;
    std::exception_ptr error;
    // Caller's thread only: the port keeping the waiting state, or null once nothing waits any more.
    SubmitPort* port = nullptr;
    // Set before the record is handed over: told when the target is done with
    // fn (and the future it returned), however that ends; a futures::Scope
    // waits for it after cancelling the caller's future.
    std::shared_ptr<RemoteEnd> end;
    // Target's thread only: the state of the future fn returned, while it is pending there, so
    // that cancelling the caller's future cancels it on its own loop.
    StateBase* remote = nullptr;
};

template <class R>
struct CrossCall final : CrossCallBase {
    std::optional<Stored<R>> value;
};

// Posts `reply` to the caller's loop, if it is still there to take it. Any thread.
REACTOR_API void deliver(const std::shared_ptr<CrossCallBase>& call, reactor::Callback&& reply) noexcept;

// The caller loop's service: the states waiting for an outcome, each with a
// work hold naming its submit_to line; ended with the loop. Loop thread only.
class REACTOR_API SubmitPort final : public reactor::LoopService {
public:
    explicit SubmitPort(reactor::Scheduler& sched);
    // No outcome is posted to the Scheduler any more once this returns.
    ~SubmitPort() override;

    const std::shared_ptr<SubmitMailbox>& mailbox() const noexcept { return mailbox_; }
    void track(const std::shared_ptr<CrossCallBase>& call, Ref<StateBase> state);
    // The state still waiting for `call`'s outcome (then no longer tracked), or null.
    Ref<StateBase> untrack(CrossCallBase& call) noexcept;

    // Every waiting state is cancelled ("the caller's loop was closed").
    void close() override { drop_all(); }
    void abandon() noexcept override { drop_all(); }

private:
    struct Waiting {
        std::shared_ptr<CrossCallBase> call;
        Ref<StateBase> state;
        reactor::WorkHold hold;
    };
    void drop_all() noexcept;

    std::shared_ptr<SubmitMailbox> mailbox_;
    std::unordered_map<CrossCallBase*, Waiting> waiting_;
};

REACTOR_API std::exception_ptr target_closed_error(std::source_location where);
REACTOR_API void refuse_sim_hosts(const reactor::Scheduler& caller, const reactor::Scheduler& target);

// The caller's end: completes the state from the outcome, on the caller's loop; destroyed
// unrun (that loop closed), it does nothing: the port has already cancelled the state.
template <class R>
struct SubmitReply {
    std::shared_ptr<CrossCall<R>> call;

    void operator()() {
        if (call->port == nullptr) return;
        Ref<StateBase> base = call->port->untrack(*call);
        if (!base || !base->pending()) return;
        auto& state = static_cast<State<R>&>(*base);
        switch (call->outcome) {
        case CrossCallBase::Outcome::value:
            if constexpr (std::is_void_v<R>) {
                state.finish_value();
            } else {
                state.finish_value(std::move(*call->value));
            }
            break;
        case CrossCallBase::Outcome::error: state.finish_exception(call->error); break;
        case CrossCallBase::Outcome::none:
        case CrossCallBase::Outcome::target_closed: state.finish_exception(target_closed_error(call->where)); break;
        }
    }
};

// The target's duty to answer: sends the outcome once; destroyed without
// having sent it (the target dropped fn, or the future fn returned, unrun),
// it sends "target closed".
template <class R>
class SubmitReplier {
public:
    explicit SubmitReplier(std::shared_ptr<CrossCall<R>> call) noexcept : call_(std::move(call)), end_(call_->end) {}
    SubmitReplier(SubmitReplier&&) noexcept = default;
    SubmitReplier& operator=(SubmitReplier&&) = delete;
    ~SubmitReplier() {
        if (call_) {
            call_->outcome = CrossCallBase::Outcome::target_closed;
            send();
        }
        if (end_) end_->ended();  // the target is done with fn, sent or not
    }
    CrossCall<R>& call() const noexcept { return *call_; }
    const std::shared_ptr<CrossCall<R>>& shared() const noexcept { return call_; }
    void send() noexcept {
        std::shared_ptr<CrossCall<R>> c = std::move(call_);
        std::shared_ptr<CrossCallBase> base = c;
        deliver(base, SubmitReply<R>{std::move(c)});
    }
    // Nobody waits (the caller cancelled): nothing to send.
    void drop() noexcept { call_.reset(); }

private:
    std::shared_ptr<CrossCall<R>> call_;
    std::shared_ptr<RemoteEnd> end_;
};

template <class R>
void store_outcome(CrossCall<R>& call, Future<R>& f) {
    try {
        if constexpr (std::is_void_v<R>) {
            f.result();
            call.value.emplace();
        } else {
            call.value.emplace(std::move(f.result()));
        }
        call.outcome = CrossCallBase::Outcome::value;
    } catch (...) {
        call.error = std::current_exception();
        call.outcome = CrossCallBase::Outcome::error;
    }
}

template <class F>
using submit_invoke_t = std::invoke_result_t<std::decay_t<F>&>;
template <class T>
struct FutureValue {
    using type = T;
};
template <class U>
struct FutureValue<Future<U>> {
    using type = U;
};

// The done-callback on the future fn returned, on the target: sends the
// outcome. While it exists the future is pending there, reachable through
// call.remote for a cancellation coming from the caller.
template <class R, class Result>
struct RemoteWatch {
    SubmitReplier<R> replier;
    std::shared_ptr<CrossCall<R>> call;

    RemoteWatch(SubmitReplier<R>&& r, std::shared_ptr<CrossCall<R>> c) noexcept
        : replier(std::move(r)), call(std::move(c)) {}
    RemoteWatch(RemoteWatch&&) noexcept = default;
    RemoteWatch& operator=(RemoteWatch&&) = delete;
    // Before the replier goes (which tells the caller the work has ended).
    ~RemoteWatch() {
        if (call) call->remote = nullptr;
    }
    void operator()(Result& done) {
        call->remote = nullptr;
        store_outcome(replier.call(), done);
        replier.send();
    }
};

// Target's thread: cancels the future fn returned, if it is still pending.
template <class R>
struct RemoteCancel {
    std::shared_ptr<CrossCall<R>> call;
    void operator()() const {
        if (call->remote == nullptr) return;
        Ref<StateBase> remote(call->remote);
        remote->cancel();
    }
};

// What runs on the target loop.
template <class R, class F>
class SubmitJob {
public:
    SubmitJob(std::shared_ptr<CrossCall<R>> call, F fn) : replier_(std::move(call)), fn_(std::move(fn)) {}
    SubmitJob(SubmitJob&&) noexcept(std::is_nothrow_move_constructible_v<F>) = default;

    void operator()() {
        CrossCall<R>& call = replier_.call();
        if (call.cancelled.load()) {
            replier_.drop();
            return;
        }
        using Result = submit_invoke_t<F>;
        try {
            if constexpr (is_future_v<Result>) {
                Result f = fn_();
                if (call.cancelled.load()) f.cancel();  // cancelled while fn ran: its RemoteCancel found nothing
                // The outcome goes when that future completes, on this loop.
                std::shared_ptr<CrossCall<R>> shared = replier_.shared();
                StateBase* remote = Access::base(f).get();
                f.add_done_callback(RemoteWatch<R, Result>(std::move(replier_), shared), call.where);
                if (remote->pending()) shared->remote = remote;
                return;
            } else if constexpr (std::is_void_v<R>) {
                fn_();
                call.value.emplace();
            } else {
                call.value.emplace(fn_());
            }
            call.outcome = CrossCallBase::Outcome::value;
        } catch (...) {
            call.error = std::current_exception();
            call.outcome = CrossCallBase::Outcome::error;
        }
        replier_.send();
    }

private:
    SubmitReplier<R> replier_;
    F fn_;
};

// The caller's future: cancelling it tells the target (fn not started:
// skipped) and lets go of the wait at once.
template <class R>
class SubmitState final : public State<R> {
public:
    SubmitState(reactor::Scheduler& sched, std::source_location where) : State<R>(sched, where, false) {}

    template <class F>
    void start(reactor::Scheduler& target, F&& fn) {
        auto call = std::make_shared<CrossCall<R>>();
        SubmitPort& port = this->scheduler().template service<SubmitPort>();
        call->mailbox = port.mailbox();
        call->where = this->origin();
        call->end = RemoteEnd::make(this->scheduler(), this->origin());
        end_ = call->end;
        target_ = &target;
        port.track(call, Ref<StateBase>(this));
        call_ = call;
        reactor::Callback job(SubmitJob<R, std::decay_t<F>>(call, std::forward<F>(fn)));
        // Refused (the target has ended): the job is destroyed here, unrun,
        // and its replier posts "target closed" to this loop.
        (void)target.try_call_soon_threadsafe(std::move(job), this->origin());
    }

private:
    Ref<StateBase> cancel_step(bool& accepted) override {
        Ref<StateBase> next = State<R>::cancel_step(accepted);
        if (accepted) {
            if (auto call = call_.lock()) {
                call->cancelled.store(true);
                // The caller holds a reference: we survive the port's.
                if (call->port != nullptr) (void)call->port->untrack(*call);
                // fn may have returned a future that is pending on the target:
                // cancelled there, on its own loop. Refused (the target has
                // ended): that future has been, or will be, dropped with it.
                if (!end_->has_ended()) {
                    try {
                        (void)target_->try_call_soon_threadsafe(reactor::Callback(RemoteCancel<R>{std::move(call)}),
                                                                this->origin());
                    } catch (...) {
                        // Out of memory: that future runs to its end; the caller's is cancelled all the same.
                    }
                }
            }
        }
        return next;
    }
    void destroy_payload() noexcept override {
        call_.reset();
        end_.reset();
    }
    // Cancelled before the target was done with fn: a state that settles once
    // it is (fn skipped, or fn and the future it returned ended on the target).
    Ref<StateBase> drain() override { return end_ ? end_->drain(this->scheduler()) : Ref<StateBase>{}; }

    std::weak_ptr<CrossCall<R>> call_;
    std::shared_ptr<RemoteEnd> end_;
    reactor::Scheduler* target_ = nullptr;
};

}  // namespace detail

template <class F>
using submit_result_t = typename detail::FutureValue<detail::submit_invoke_t<F>>::type;

// Runs fn() on `target`; the future completes on `caller` (see above). Loop thread of `caller` only.
template <class F>
[[nodiscard]] Future<submit_result_t<F>> submit_to(reactor::Scheduler& caller, reactor::Scheduler& target, F&& fn,
                                                   std::source_location where = std::source_location::current()) {
    using R = submit_result_t<F>;
    static_assert(std::is_void_v<R> || (std::is_object_v<R> && std::is_move_constructible_v<R>),
                  "submit_to: fn must return void, a movable object type, or a Future of one");
    detail::refuse_sim_hosts(caller, target);
    return detail::launch<detail::SubmitState<R>>(caller, where).start(target, std::forward<F>(fn));
}

// The same, completing on the loop the calling thread is running
// (reactor::Scheduler::running()); std::logic_error when it runs none.
template <class F>
[[nodiscard]] Future<submit_result_t<F>> submit_to(reactor::Scheduler& target, F&& fn,
                                                   std::source_location where = std::source_location::current()) {
    reactor::Scheduler* caller = reactor::Scheduler::running();
    if (caller == nullptr)
        throw std::logic_error("futures::submit_to(target, fn): the calling thread runs no loop; name the caller's "
                               "loop: submit_to(caller, target, fn)");
    return submit_to(*caller, target, std::forward<F>(fn), where);
}

}  // namespace futures
