// SPDX-License-Identifier: MIT
// The loop's side of ThreadPool jobs: LoopPort (a service of the loop), the
// delivery of outcomes through call_soon_threadsafe, and Job::cancel. See
// job_port.hpp.
#include "job_port.hpp"

#include <mutex>
#include <utility>

namespace reactor {
namespace detail {
namespace {

// The posted outcome: owns the reference the worker had; runs `done` if it is
// still wanted. Destroyed unrun (the Scheduler is being destroyed), it just
// lets go, on the loop thread.
struct Delivery {
    using relocatable = void;  // a counted pointer: moves as bytes
    JobBase* job;

    explicit Delivery(JobBase* j) noexcept : job(j) {}
    Delivery(Delivery&& other) noexcept : job(std::exchange(other.job, nullptr)) {}
    Delivery& operator=(Delivery&&) = delete;
    ~Delivery() {
        if (job) job->release();
    }
    void operator()() {
        if (job->done_pending) job->port->complete(job);
    }
};

// The port's reference, released however `done` ends.
struct ReleaseOnExit {
    JobBase* job;
    ~ReleaseOnExit() { job->release(); }
};

}  // namespace

void deliver(JobBase* job) noexcept {
    if (!job->discarded.load(std::memory_order_acquire)) {
        std::lock_guard lock(job->mailbox->mutex);
        if (Scheduler* sched = job->mailbox->sched) {
            try {
                sched->call_soon_threadsafe(Delivery(job));
            } catch (...) {
                // Out of memory: the Delivery let go of the job; its result is
                // lost and its `done` is dropped with the Scheduler (or cancel()).
            }
            return;
        }
    }
    job->release();
}

bool unqueue(JobBase* job) noexcept {
    {
        std::lock_guard lock(job->core->mutex);
        if (job->stage != JobBase::Stage::queued) return false;
        job->core->unlink(job);
        job->stage = JobBase::Stage::cancelled;
    }
    job->drop_work();
    job->release();  // the queue's reference
    return true;
}

LoopPort::LoopPort(Scheduler& sched) : LoopService(sched), mailbox_(std::make_shared<Mailbox>(sched)) {}

LoopPort::~LoopPort() {
    drop_all();
    std::lock_guard lock(mailbox_->mutex);
    mailbox_->sched = nullptr;
}

void LoopPort::track(JobBase* job) {
    job->hold = scheduler().hold_work(LiveItem::Kind::job, "its result has not come back yet", job->where);
    job->add_ref();
    job->port = this;
    job->done_pending = true;
    pending_.push_back(*job);
}

void LoopPort::untrack(JobBase* job) noexcept {
    job->done_pending = false;
    job->unlink();
    job->hold.release();
}

void LoopPort::complete(JobBase* job) {
    untrack(job);
    ReleaseOnExit release{job};
    job->finish();
}

// A job ends here as by Job::cancel: one still queued never runs, one running
// finishes on its worker and its result is not posted, and `done` is
// destroyed unrun (a future it would complete is cancelled). Destroying a
// `done` may cancel or submit other jobs: the loop takes the head each time.
void LoopPort::drop_all() noexcept {
    while (JobBase* job = pending_.front()) {
        untrack(job);
        job->discarded.store(true, std::memory_order_release);
        job->stop.request_stop();
        unqueue(job);
        job->drop_done();
        job->release();
    }
}

}  // namespace detail

bool Job::cancel() noexcept {
    if (!job_ || !job_->done_pending) return false;
    // Locals only from here: destroying `done` may destroy this handle's owner.
    detail::JobBase* job = job_;
    job->discarded.store(true, std::memory_order_release);
    job->stop.request_stop();  // a running job that takes a token may end early
    detail::unqueue(job);
    job->port->untrack(job);
    job->drop_done();
    job->release();  // the port's reference
    return true;
}

}  // namespace reactor
