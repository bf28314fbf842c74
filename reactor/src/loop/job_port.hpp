// SPDX-License-Identifier: MIT
// The ThreadPool's internals shared by thread_pool.cpp and job_port.cpp.
//
// PoolCore: the queue (an intrusive list, so a cancelled job leaves it in
// O(1)), under one mutex. Mailbox: how a worker reaches a loop, a Scheduler
// pointer that the loop clears, under the mailbox's mutex, when its Scheduler
// is being destroyed; a worker posts while holding that mutex, so it never
// touches a Scheduler that is gone. LoopPort: the loop service (one per
// Scheduler that ever received a job, from any pool), on its loop thread:
// the jobs whose `done` is pending, each with a WorkHold naming its submit()
// line (run() waits for it, live() lists it), ended with the loop.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "reactor/intrusive_list.hpp"
#include "reactor/loop_service.hpp"
#include "reactor/scheduler.hpp"
#include "reactor/thread_pool.hpp"

namespace reactor::detail {

struct PoolCore {
    std::mutex mutex;
    std::condition_variable wake;  // a job was queued, or the pool closed
    JobBase* head = nullptr;
    JobBase* tail = nullptr;
    std::size_t queued = 0;
    bool closed = false;
    // The running jobs whose work takes a std::stop_token: shutdown() asks
    // them to stop. A worker takes its job off before delivering it, so each
    // one here is alive while the mutex is held.
    std::vector<JobBase*> stoppable;

    // Under mutex.
    void push(JobBase* job) noexcept;
    JobBase* pop() noexcept;
    void unlink(JobBase* job) noexcept;
};

struct Mailbox {
    std::mutex mutex;
    Scheduler* sched;  // null once the Scheduler is being destroyed
    explicit Mailbox(Scheduler& s) : sched(&s) {}
};

// Posts a finished (or cancelled) job's outcome to its loop, taking over the
// caller's reference; drops it if nobody wants it. Any thread.
void deliver(JobBase* job) noexcept;

class LoopPort final : public LoopService {
public:
    explicit LoopPort(Scheduler& sched);
    // No worker posts to the Scheduler any more once this returns.
    ~LoopPort() override;

    // Loop thread. track: `job` has a pending `done` (the port takes a
    // reference). untrack: it no longer has (the reference is the caller's).
    void track(JobBase* job);
    void untrack(JobBase* job) noexcept;
    // The posted outcome arrived: runs `done`.
    void complete(JobBase* job);
    const std::shared_ptr<Mailbox>& mailbox() const noexcept { return mailbox_; }

    // Every pending `done` destroyed unrun, each job cancelled as by Job::cancel.
    void close() override { drop_all(); }
    void abandon() noexcept override { drop_all(); }

private:
    void drop_all() noexcept;

    std::shared_ptr<Mailbox> mailbox_;
    IntrusiveList<JobBase> pending_;  // oldest first
};

// Takes a queued job out of its pool's queue, if it still is queued: its work
// will never run (destroyed here) and the queue's reference is released.
// Returns whether it was. Any thread.
bool unqueue(JobBase* job) noexcept;

}  // namespace reactor::detail
