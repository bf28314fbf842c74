// The loop's side of ThreadPool jobs: LoopPort (one per Scheduler, found
// through a process-wide registry), the delivery of outcomes through
// call_soon_threadsafe, and Job::cancel. See job_port.hpp.
#include "job_port.hpp"

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace reactor {
namespace detail {
namespace {

struct Registry {
    std::mutex mutex;
    std::unordered_map<const Scheduler*, LoopPort*> ports;
};

// Never destroyed: a Scheduler that outlives static destruction (a static
// one) still finds it when it ends.
Registry& registry() {
    static Registry* const r = new Registry;
    return *r;
}

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

LoopPort::LoopPort(Scheduler& sched) : sched_(sched), mailbox_(std::make_shared<Mailbox>(sched)) {
    sched.add_observer(*this);
}

LoopPort& LoopPort::of(Scheduler& sched) {
    Registry& r = registry();
    {
        std::lock_guard lock(r.mutex);
        if (auto it = r.ports.find(&sched); it != r.ports.end()) return *it->second;
    }
    // Only sched's loop thread makes or removes its port: no one else can
    // have added it meanwhile.
    auto* port = new LoopPort(sched);
    try {
        std::lock_guard lock(r.mutex);
        r.ports.emplace(&sched, port);
    } catch (...) {
        sched.remove_observer(*port);
        delete port;
        throw;
    }
    return *port;
}

void LoopPort::track(JobBase* job) {
    ++pending_;
    ++sched_.held_work_;
    job->add_ref();
    job->port = this;
    job->done_pending = true;
    job->port_prev = nullptr;
    job->port_next = head_;
    if (head_) head_->port_prev = job;
    head_ = job;
}

void LoopPort::untrack(JobBase* job) noexcept {
    job->done_pending = false;
    if (job->port_prev) job->port_prev->port_next = job->port_next;
    else head_ = job->port_next;
    if (job->port_next) job->port_next->port_prev = job->port_prev;
    job->port_prev = job->port_next = nullptr;
    --pending_;
    --sched_.held_work_;
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
    while (JobBase* job = head_) {
        untrack(job);
        job->discarded.store(true, std::memory_order_release);
        unqueue(job);
        job->drop_done();
        job->release();
    }
}

void LoopPort::on_scheduler_closing() { drop_all(); }

// In submission order (the list is newest first).
void LoopPort::describe(std::vector<LiveItem>& out) const {
    const std::size_t first = out.size();
    for (const JobBase* job = head_; job; job = job->port_next)
        out.push_back(LiveItem{LiveItem::Kind::job, "its result has not come back yet", job->where, true});
    std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

void LoopPort::on_scheduler_destroyed() noexcept {
    dying_ = true;
    drop_all();
    {
        // From here on no worker posts to this Scheduler.
        std::lock_guard lock(mailbox_->mutex);
        mailbox_->sched = nullptr;
    }
    {
        Registry& r = registry();
        std::lock_guard lock(r.mutex);
        r.ports.erase(&sched_);
    }
    delete this;
}

}  // namespace detail

bool Job::cancel() noexcept {
    if (!job_ || !job_->done_pending) return false;
    // Locals only from here: destroying `done` may destroy this handle's owner.
    detail::JobBase* job = job_;
    job->discarded.store(true, std::memory_order_release);
    detail::unqueue(job);
    job->port->untrack(job);
    job->drop_done();
    job->release();  // the port's reference
    return true;
}

}  // namespace reactor
