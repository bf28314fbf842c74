// SPDX-License-Identifier: MIT
// ThreadPool: the workers and the queue. The loop's side (ports, delivery,
// Job::cancel) is in job_port.cpp.
#include "reactor/thread_pool.hpp"

#include <algorithm>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "job_port.hpp"
#include "reactor/detail/world_mark.hpp"

namespace reactor {
namespace detail {

void PoolCore::push(JobBase* job) noexcept {
    job->queue_next = nullptr;
    job->queue_prev = tail;
    if (tail) tail->queue_next = job;
    else head = job;
    tail = job;
    ++queued;
}

JobBase* PoolCore::pop() noexcept {
    JobBase* job = head;
    if (job) unlink(job);
    return job;
}

void PoolCore::unlink(JobBase* job) noexcept {
    if (job->queue_prev) job->queue_prev->queue_next = job->queue_next;
    else head = job->queue_next;
    if (job->queue_next) job->queue_next->queue_prev = job->queue_prev;
    else tail = job->queue_prev;
    job->queue_prev = job->queue_next = nullptr;
    --queued;
}

}  // namespace detail

namespace {
// The pool whose worker this thread is, if any (shutdown() from a worker
// would wait for itself).
thread_local const detail::PoolCore* t_worker_of = nullptr;

// A job of a simulated world's loop (detail::runs_in_world): its work and
// then its `done` run on that loop, in one callback, never on a worker, so
// the world stays on one thread and its run depends on its seed alone. It
// holds the reference a worker would. Cancelled before it runs (discarded),
// its work is destroyed unrun, as a queued job's would be.
struct RunHere {
    detail::JobBase* job;

    explicit RunHere(detail::JobBase* j) noexcept : job(j) {}
    RunHere(RunHere&& other) noexcept : job(std::exchange(other.job, nullptr)) {}
    RunHere& operator=(RunHere&&) = delete;
    ~RunHere() {
        if (job) job->release();
    }
    void operator()() {
        if (job->discarded.load(std::memory_order_acquire)) {
            job->drop_work();
            return;
        }
        job->run();
        if (job->done_pending) job->port->complete(job);
    }
};
}  // namespace

std::size_t ThreadPool::default_thread_count() noexcept {
    return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(std::size_t threads, std::size_t queue_capacity)
    : core_(std::make_shared<detail::PoolCore>()),
      thread_count_(threads ? threads : default_thread_count()),
      capacity_(queue_capacity) {
    if (queue_capacity == 0) throw std::invalid_argument("reactor: ThreadPool needs a queue capacity > 0");
    workers_.reserve(thread_count_);
    try {
        for (std::size_t i = 0; i < thread_count_; ++i) workers_.emplace_back([this] { work_loop(); });
    } catch (const std::system_error& e) {
        const std::size_t started = workers_.size();
        shutdown();  // the threads already started
        // std::thread says only "Resource temporarily unavailable": say what could not start.
        throw std::system_error(e.code(), fmt::format("reactor: ThreadPool: cannot start worker thread {} of {}",
                                                      started + 1, thread_count_));
    } catch (...) {
        shutdown();
        throw;
    }
}

ThreadPool::~ThreadPool() { shutdown(); }

Job ThreadPool::enqueue(Scheduler& sched, detail::JobBase* job, std::source_location where) {
    Job handle(job);  // the first reference: on a throw below, the job dies with it, unrun
    detail::LoopPort& port = sched.service<detail::LoopPort>();
    job->core = core_;
    job->mailbox = port.mailbox();
    job->where = where;
    port.track(job);
    // A world's loop keeps its jobs (the capacity is a worker queue's: nothing waits here).
    const bool run_here = detail::runs_in_world(sched);
    enum class Refused { no, closed, full } refused = Refused::no;
    std::size_t waiting = 0;
    {
        std::lock_guard lock(core_->mutex);
        if (core_->closed) {
            refused = Refused::closed;
        } else if (!run_here && core_->queued >= capacity_) {
            refused = Refused::full;
            waiting = core_->queued;
        } else {
            job->add_ref();  // the queue's, or RunHere's
            // Never in the queue: Job::cancel finds it not queued and
            // RunHere sees it discarded.
            if (run_here) job->stage = detail::JobBase::Stage::running;
            else core_->push(job);
        }
    }
    if (refused != Refused::no) {
        port.untrack(job);
        job->release();  // the port's
        if (refused == Refused::closed) throw ThreadPoolClosed("reactor: ThreadPool::submit after shutdown()");
        throw ThreadPoolFull(fmt::format("reactor: ThreadPool queue is full ({} jobs waiting for {} threads)",
                                         waiting, thread_count_));
    }
    if (run_here) {
        try {
            (void)sched.call_soon(RunHere(job), where);
        } catch (...) {
            // Out of memory: RunHere let go of the job; its `done` is dropped unrun.
            port.untrack(job);
            job->release();  // the port's
            throw;
        }
        return handle;
    }
    core_->wake.notify_one();
    return handle;
}

void ThreadPool::work_loop() noexcept {
    detail::PoolCore& core = *core_;
    t_worker_of = &core;
    for (;;) {
        detail::JobBase* job;
        {
            std::unique_lock lock(core.mutex);
            core.wake.wait(lock, [&] { return core.closed || core.head != nullptr; });
            job = core.pop();
            if (!job) return;  // closed, and shutdown() took what was queued
            job->stage = detail::JobBase::Stage::running;
            if (job->stop.stop_possible()) core.stoppable.push_back(job);
        }
        job->run();
        if (job->stop.stop_possible()) {
            std::lock_guard lock(core.mutex);
            std::erase(core.stoppable, job);
        }
        detail::deliver(job);  // hands over the queue's reference
    }
}

void ThreadPool::shutdown() {
    if (t_worker_of == core_.get()) throw std::logic_error("reactor: ThreadPool::shutdown from one of its own workers");
    std::lock_guard join_lock(join_mutex_);
    detail::JobBase* cancelled = nullptr;
    {
        std::lock_guard lock(core_->mutex);
        core_->closed = true;
        cancelled = std::exchange(core_->head, nullptr);
        core_->tail = nullptr;
        core_->queued = 0;
        for (detail::JobBase* j = cancelled; j; j = j->queue_next) j->stage = detail::JobBase::Stage::cancelled;
        // Alive while the lock is held (see PoolCore::stoppable). Their
        // std::stop_callbacks run here, under the pool's lock: they must not
        // submit to this pool.
        for (detail::JobBase* j : core_->stoppable) j->stop.request_stop();
    }
    core_->wake.notify_all();
    while (detail::JobBase* job = cancelled) {
        cancelled = job->queue_next;
        job->queue_prev = job->queue_next = nullptr;
        job->drop_work();
        detail::deliver(job);  // `done` runs on its loop with JobStatus::cancelled
    }
    for (auto& worker : workers_)
        if (worker.joinable()) worker.join();
    workers_.clear();
}

std::size_t ThreadPool::queued() const {
    std::lock_guard lock(core_->mutex);
    return core_->queued;
}

ThreadPool& default_thread_pool() {
    // A function-local static: made on first use, destroyed at normal exit,
    // which shuts it down and joins its workers.
    static ThreadPool pool;
    return pool;
}

bool ThreadPool::is_shut_down() const {
    std::lock_guard lock(core_->mutex);
    return core_->closed;
}

}  // namespace reactor
