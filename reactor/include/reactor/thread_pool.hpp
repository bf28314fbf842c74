// SPDX-License-Identifier: MIT
// reactor::ThreadPool: a fixed set of worker threads for blocking or
// CPU-bound work whose results come back to a loop thread.
//
//   pool.submit(sched, work, done)   (on sched's loop thread)
//
// `work()` runs on a worker; then `done(JobResult<R>&&)` runs on sched's loop
// thread, as an ordinary callback posted with call_soon_threadsafe (an
// exception it throws goes to the Scheduler's exception handler). Jobs start
// in submission order. The futures layer builds run_in_executor and resolve
// on this (futures/executor.hpp).
//
// Threads: `work` runs on a worker and is destroyed there, or where the job is
// cancelled (the loop thread, or the thread calling shutdown()), so it must
// only touch what is safe from other threads. `done` is only ever run and
// destroyed on the loop thread, so it may hold loop-thread objects (futures).
//
// A full queue is an error, not back-pressure: submit throws ThreadPoolFull
// and the job is not queued. The caller decides (retry later, fail the request,
// run it inline); waiting for room would block the loop thread, and a future
// that waited for room would hide how far behind the pool is.
//
// While a job's `done` is still to run, the job counts as work of its loop:
// run() does not return for lack of work while a result is on its way (it
// idles in the selector until the result is posted), and empty() is false.
//
// When the Scheduler is closed (Scheduler::close()) or destroyed first, its
// jobs still queued are removed unrun, the results of those running are
// dropped when they finish, and every pending `done` is destroyed unrun (a
// future it would complete is then cancelled): a worker never touches a
// destroyed Scheduler. Until then Scheduler::live() lists each job whose
// `done` is still to run, by the line that submitted it.
//
// Stopping early: a job whose work takes a std::stop_token (`work(token)`)
// is asked to stop (the token's stop_requested() becomes true, and its
// std::stop_callbacks run) when Job::cancel() is called, when its Scheduler is
// closed or destroyed, and when the pool shuts down, including while it runs:
// a cancelled CPU-bound job can end early instead of running to the end, and a
// program does not wait for it at exit (std::jthread's convention). What it
// returns then is dropped, as for any cancelled job. Work without a token
// pays nothing for this.
//
// In a simulated world (reactor/testing/sim/world.hpp): a job submitted on
// a host's Scheduler, or while a world runs a host on this thread, never
// reaches a worker: its work and then its `done` run on that loop, in one
// callback scheduled with call_soon, so the world stays on one thread.
//
// default_thread_pool() is the process's pool, made on first use, for those
// who need one without owning it: the futures layer's run_in_executor and
// resolve, and reactor::connect to a host name.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/scheduler.hpp"

namespace reactor {

enum class JobStatus : std::uint8_t {
    done,       // work returned: value holds its result
    failed,     // work threw: error holds the exception
    cancelled,  // shutdown() cancelled it before it started: work never ran
};

template <class R>
struct JobResult {
    JobStatus status = JobStatus::cancelled;
    std::optional<std::conditional_t<std::is_void_v<R>, std::monostate, R>> value;  // set iff done
    std::exception_ptr error;                                                    // set iff failed
};

// submit() into a queue that holds queue_capacity() jobs already.
class REACTOR_API ThreadPoolFull : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// submit() after shutdown().
class REACTOR_API ThreadPoolClosed : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

namespace detail {

class LoopPort;
struct PoolCore;
struct Mailbox;

// One submitted job, shared by the pool, the worker, the loop and the Job
// handle: reference counted atomically. The fields are grouped by who may
// touch them.
class REACTOR_API JobBase : public ListMember<JobBase> {
public:
    JobBase(const JobBase&) = delete;
    JobBase& operator=(const JobBase&) = delete;

    void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
    void release() noexcept {
        if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }

    // Worker (or the canceller, once the job is out of the queue): runs the
    // work, storing its outcome, or records that it will never run. Either
    // destroys the work.
    virtual void run() noexcept = 0;
    virtual void drop_work() noexcept = 0;
    // Loop thread: runs `done` with the outcome / destroys it unrun.
    virtual void finish() = 0;
    virtual void drop_done() noexcept = 0;

    // Under PoolCore::mutex.
    enum class Stage : std::uint8_t { queued, running, cancelled };
    Stage stage = Stage::queued;
    JobBase* queue_prev = nullptr;
    JobBase* queue_next = nullptr;
    std::shared_ptr<PoolCore> core;
    // Written once before the job is queued; the worker posts through it.
    std::shared_ptr<Mailbox> mailbox;
    std::source_location where;  // the submit() call, for Scheduler::live()
    // Set by the loop when nobody wants the result any more: the worker then
    // does not post it.
    std::atomic<bool> discarded{false};
    // Loop thread only (the port's list is the ListMember base).
    LoopPort* port = nullptr;
    WorkHold hold;  // while done_pending
    bool done_pending = false;
    // Any thread. Without a stop state unless the work takes a std::stop_token.
    std::stop_source stop{std::nostopstate};

protected:
    JobBase() = default;
    virtual ~JobBase() = default;

private:
    std::atomic<std::uint32_t> refs_{1};
};

template <class F>
inline constexpr bool takes_stop_token_v = std::is_invocable_v<F&, std::stop_token>;

template <class F>
struct WorkResult {
    using type = std::invoke_result_t<F&>;
};
template <class F>
    requires takes_stop_token_v<F>
struct WorkResult<F> {
    using type = std::invoke_result_t<F&, std::stop_token>;
};

template <class F, class D>
class JobImpl final : public JobBase {
public:
    using R = typename WorkResult<F>::type;

    template <class FF, class DD>
    JobImpl(FF&& work, DD&& done) : work_(std::in_place, std::forward<FF>(work)), done_(std::in_place, std::forward<DD>(done)) {
        if constexpr (takes_stop_token_v<F>) stop = std::stop_source();
    }

    void run() noexcept override {
        try {
            if constexpr (std::is_void_v<R>) {
                call();
                result_.value.emplace();
            } else {
                result_.value.emplace(call());
            }
            result_.status = JobStatus::done;
        } catch (...) {
            result_.error = std::current_exception();
            result_.status = JobStatus::failed;
        }
        work_.reset();
    }
    void drop_work() noexcept override {
        work_.reset();
        result_.status = JobStatus::cancelled;
    }
    void finish() override {
        // Out of the job first: it is destroyed right after it runs, even if it throws.
        D done = std::move(*done_);
        done_.reset();
        done(std::move(result_));
    }
    void drop_done() noexcept override { done_.reset(); }

private:
    R call() {
        if constexpr (takes_stop_token_v<F>) return (*work_)(stop.get_token());
        else return (*work_)();
    }

    std::optional<F> work_;
    std::optional<D> done_;
    JobResult<R> result_;
};

}  // namespace detail

// What a job's work returns: work() or, for work taking a std::stop_token,
// work(token).
template <class F>
using work_result_t = typename detail::WorkResult<std::decay_t<F>>::type;

// A submitted job, as its loop sees it. Loop thread only; may outlive its
// Scheduler (the job is then cancelled). Dropping the handle does not cancel
// the job.
class REACTOR_API Job {
public:
    Job() noexcept = default;
    Job(Job&& other) noexcept : job_(std::exchange(other.job_, nullptr)) {}
    Job& operator=(Job&& other) noexcept {
        if (this != &other) {
            reset();
            job_ = std::exchange(other.job_, nullptr);
        }
        return *this;
    }
    Job(const Job&) = delete;
    Job& operator=(const Job&) = delete;
    ~Job() { reset(); }

    explicit operator bool() const noexcept { return job_ != nullptr; }
    // True until `done` has run or been dropped.
    bool is_pending() const noexcept { return job_ && job_->done_pending; }
    // Loop thread. If `done` has not run yet, it never will: it is destroyed
    // now. A job still queued is taken out of the queue and its work never
    // runs; one already running runs to the end on its worker (a thread
    // cannot be stopped safely; work taking a std::stop_token is asked to
    // stop) and its result is dropped. Returns whether `done` was still
    // pending.
    bool cancel() noexcept;

private:
    friend class ThreadPool;
    explicit Job(detail::JobBase* job) noexcept : job_(job) {}
    void reset() noexcept {
        if (job_) std::exchange(job_, nullptr)->release();
    }
    detail::JobBase* job_ = nullptr;
};

class REACTOR_API ThreadPool {
public:
    static constexpr std::size_t kDefaultQueueCapacity = 16384;

    // `threads` workers (0: one per core, std::thread::hardware_concurrency,
    // at least 1), started now; a queue of at most `queue_capacity` jobs
    // waiting for a worker (not counting those running). A zero capacity
    // throws std::invalid_argument.
    explicit ThreadPool(std::size_t threads = 0, std::size_t queue_capacity = kDefaultQueueCapacity);
    ~ThreadPool();  // shutdown()
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // Loop thread of `sched`. Queues `work` (called as work() or work(std::stop_token), returning R or
    // void) and returns its handle; `done` (called as done(JobResult<R>&&))
    // runs on sched's loop afterwards, unless the job is cancelled. Throws
    // ThreadPoolFull when the queue is full, ThreadPoolClosed after
    // shutdown(), std::logic_error while `sched` is being destroyed; then
    // nothing is queued and both callables are destroyed unrun.
    template <class F, class D>
    Job submit(Scheduler& sched, F&& work, D&& done, std::source_location where = std::source_location::current()) {
        using Impl = detail::JobImpl<std::decay_t<F>, std::decay_t<D>>;
        static_assert(std::is_invocable_v<std::decay_t<D>&, JobResult<typename Impl::R>&&>,
                      "ThreadPool::submit: done must be callable as done(JobResult<R>&&)");
        return enqueue(sched, new Impl(std::forward<F>(work), std::forward<D>(done)), where);
    }

    // Any thread but a worker of this pool (std::logic_error: it would wait
    // for itself). Stops taking jobs, cancels every job still queued (each
    // `done` runs on its loop with JobStatus::cancelled), waits for the running
    // ones to finish (their results are delivered as usual) and joins the
    // workers. Called on a loop thread, it blocks that loop meanwhile.
    // Idempotent.
    void shutdown();

    std::size_t thread_count() const noexcept { return thread_count_; }
    std::size_t queue_capacity() const noexcept { return capacity_; }
    std::size_t queued() const;  // jobs waiting for a worker, now
    bool is_shut_down() const;

    // The worker count for `threads == 0`.
    static std::size_t default_thread_count() noexcept;

private:
    Job enqueue(Scheduler& sched, detail::JobBase* job, std::source_location where);
    void work_loop() noexcept;

    std::shared_ptr<detail::PoolCore> core_;
    std::size_t thread_count_;
    std::size_t capacity_;
    std::mutex join_mutex_;  // one shutdown() at a time
    std::vector<std::thread> workers_;
};

// The process's default pool: made on first use (thread-safe), one worker per
// core (ThreadPool::default_thread_count()) and the default queue capacity;
// shut down, its workers joined, when the process exits normally. Calling
// shutdown() on it earlier makes later submissions throw ThreadPoolClosed.
// Any thread.
REACTOR_API ThreadPool& default_thread_pool();

}  // namespace reactor
