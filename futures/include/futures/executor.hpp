// SPDX-License-Identifier: MIT
// futures::run_in_executor: blocking or CPU-bound work on a thread pool, its
// result a Future completed on the loop thread (asyncio's run_in_executor,
// libuv's uv_queue_work). Built on reactor::ThreadPool (reactor/thread_pool.hpp),
// which says what runs on which thread.
//
//   Future<int> f = futures::run_in_executor(sched, [] { return crunch(); });
//
// The future:
//   - is done with fn's value, or failed with the exception fn threw
//     (result() rethrows it);
//   - cancelled before fn started: fn never runs;
//     cancelled while fn runs: fn runs to the end on its worker (a thread
//     cannot be stopped safely; an fn taking a std::stop_token is asked to
//     stop through it), its result is discarded, the future is cancelled at
//     once;
//   - as a futures::Scope child (scope.spawn(run_in_executor(...))): the
//     scope's cancellation (cancel(), a deadline, a sibling's error, its
//     parent's) is the future's, so a job still queued is taken out of the
//     queue and never runs, and a running fn taking a std::stop_token sees
//     stop_requested(); close() then also waits until fn has returned on its
//     worker (the future is cancelled at once, but the scope does not settle
//     while fn still runs: what fn captured by reference stays valid until
//     close() settles). A job further up a then chain is stopped all the
//     same, but only a direct child is waited for that way;
//   - fails with reactor::ThreadPoolFull at once when the pool's queue is full
//     (an error, not back-pressure: see thread_pool.hpp), with
//     reactor::ThreadPoolClosed after the pool's shutdown();
//   - is cancelled if the pool shuts down before fn started, or if the
//     Scheduler is destroyed before the result is back (the result is dropped).
// fn runs on another thread: it must not touch the loop, its futures or
// anything else that is loop-thread only, and it is destroyed on the worker
// (or where the job is cancelled). The future's origin() and the job's line
// in Scheduler::live() are `where`, the caller's line. Loop thread only.
#pragma once

#include <exception>
#include <memory>
#include <stop_token>
#include <source_location>
#include <system_error>
#include <type_traits>
#include <utility>

#include <reactor/scheduler.hpp>
#include <reactor/thread_pool.hpp>

#include "futures/detail/remote_end.hpp"
#include "futures/future.hpp"
#include "futures/leaves.hpp"

namespace futures {

// The process's pool, reactor::default_thread_pool() (reactor/thread_pool.hpp):
// made on first use, one worker per core, shut down at normal exit; calling
// shutdown() on it earlier makes later run_in_executor calls fail with
// ThreadPoolClosed. The pool reactor::connect resolves host names on, too.
// Any thread.
inline reactor::ThreadPool& default_executor() { return reactor::default_thread_pool(); }

namespace detail {

// The producer end of a pool job's future. Not a futures::Promise: the
// future must also reach back, cancelling it cancels the job (cancel_step).
template <class R>
class ExecutorState final : public State<R> {
public:
    ExecutorState(reactor::Scheduler& sched, std::source_location where) : State<R>(sched, where, false) {}

    template <class F>
    void start(reactor::ThreadPool& pool, F&& fn) {
        end_ = RemoteEnd::make(this->scheduler(), this->origin());
        job_ = pool.submit(this->scheduler(), Tracked<std::decay_t<F>>{std::forward<F>(fn), end_},
                           Complete{Ref<ExecutorState>(this)}, this->origin());
    }

private:
    // The work, telling end_ when it is over: destroyed on the worker once it
    // has run, or unrun where the job is cancelled or refused.
    template <class F>
    struct Tracked {
        F fn;
        std::shared_ptr<RemoteEnd> end;

        Tracked(F&& f, std::shared_ptr<RemoteEnd> e) : fn(std::move(f)), end(std::move(e)) {}
        Tracked(const F& f, std::shared_ptr<RemoteEnd> e) : fn(f), end(std::move(e)) {}
        Tracked(Tracked&&) = default;
        Tracked& operator=(Tracked&&) = delete;
        ~Tracked() {
            if (end) end->ended();
        }
        decltype(auto) operator()()
            requires(!reactor::detail::takes_stop_token_v<F>)
        {
            return fn();
        }
        decltype(auto) operator()(std::stop_token token)
            requires reactor::detail::takes_stop_token_v<F>
        {
            return fn(std::move(token));
        }
    };

    // The job's `done`: completes the state from the job's outcome. Destroyed
    // unrun (the Scheduler is being destroyed, or the future was cancelled),
    // it cancels the state if still pending.
    struct Complete {
        Ref<ExecutorState> state;

        void operator()(reactor::JobResult<R>&& r) {
            Ref<ExecutorState> s = std::move(state);
            if (!s->pending()) return;
            switch (r.status) {
            case reactor::JobStatus::done:
                if constexpr (std::is_void_v<R>) {
                    s->finish_value();
                } else {
                    s->finish_value(std::move(*r.value));
                }
                break;
            case reactor::JobStatus::failed: s->finish_exception(std::move(r.error)); break;
            case reactor::JobStatus::cancelled:
                s->abandon("the thread pool was shut down before this job started");
                break;
            }
        }
        Complete(Ref<ExecutorState> s) noexcept : state(std::move(s)) {}  // NOLINT: aggregate-like
        Complete(Complete&&) noexcept = default;
        Complete& operator=(Complete&&) = delete;
        ~Complete() {
            if (state) state->abandon("the Scheduler was closed or destroyed before this job's result came back");
        }
    };

    Ref<StateBase> cancel_step(bool& accepted) override {
        Ref<StateBase> next = State<R>::cancel_step(accepted);
        if (accepted) job_.cancel();  // the caller holds a reference: we survive our Complete's
        return next;
    }
    void destroy_payload() noexcept override {
        job_ = {};
        end_.reset();
    }
    // Cancelled while fn runs on its worker: a state that settles once fn has
    // returned (a futures::Scope waits for it).
    Ref<StateBase> drain() override { return end_ ? end_->drain(this->scheduler()) : Ref<StateBase>{}; }

    reactor::Job job_;
    std::shared_ptr<RemoteEnd> end_;
};

}  // namespace detail

// fn() or, for fn taking a std::stop_token, fn(token): the token is asked
// to stop when the future is cancelled, also while fn runs, and when the
// pool shuts down, so a CPU-bound fn can end early (reactor/thread_pool.hpp).
template <class F>
using executor_result_t = reactor::work_result_t<F>;

// Runs fn() on `pool`; see the top of this file.
template <class F>
[[nodiscard]] Future<executor_result_t<F>> run_in_executor(
    reactor::Scheduler& sched, reactor::ThreadPool& pool, F&& fn,
    std::source_location where = std::source_location::current()) {
    using R = executor_result_t<F>;
    static_assert(!is_future_v<R>, "run_in_executor: fn runs on another thread and cannot return a Future");
    static_assert(std::is_void_v<R> || (std::is_object_v<R> && std::is_move_constructible_v<R>),
                  "run_in_executor: fn must return void or a movable object type");
    try {
        return detail::launch<detail::ExecutorState<R>>(sched, where).start(pool, std::forward<F>(fn));
    } catch (const reactor::ThreadPoolFull&) {
        return make_exception_future<R>(sched, std::current_exception(), where);
    } catch (const reactor::ThreadPoolClosed&) {
        return make_exception_future<R>(sched, std::current_exception(), where);
    }
}

// Runs fn() on default_executor(). The default pool is made on first use: if
// it cannot start its threads (std::system_error, EAGAIN), the future fails
// with that error, and the next call tries to make the pool again.
template <class F>
[[nodiscard]] Future<executor_result_t<F>> run_in_executor(
    reactor::Scheduler& sched, F&& fn, std::source_location where = std::source_location::current()) {
    reactor::ThreadPool* pool = nullptr;
    try {
        pool = &default_executor();
    } catch (const std::system_error&) {
        return make_exception_future<executor_result_t<F>>(sched, std::current_exception(), where);
    }
    return run_in_executor(sched, *pool, std::forward<F>(fn), where);
}

}  // namespace futures
