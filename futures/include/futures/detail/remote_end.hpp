// SPDX-License-Identifier: MIT
// futures::detail::RemoteEnd: the end of work that a future started outside
// its own loop (a thread pool job, a submit_to function on another loop),
// observable from the future's loop after the future itself was cancelled.
//
// Cancelling a run_in_executor or submit_to future completes it at once,
// while the work behind it may still run on a worker or on the target loop.
// A futures::Scope must not settle before that work has ended (issue 47:
// nothing a program started outlives its scope unseen), so such a state
// overrides StateBase::drain(): it returns a state that settles once the
// work has ended, and the scope waits for that too.
//
//   owner's loop:   auto end = RemoteEnd::make(sched, where);   // before handing the work over
//   any thread:     end->ended();                               // once, when the work is over
//   owner's loop:   Ref<StateBase> d = end->drain(sched);       // null if it has ended already
//
// ended() posts to the owner's loop only if a drain() was asked for, through
// a mailbox that the loop's RemoteEndPort clears when its Scheduler goes, so
// a late end never touches a Scheduler that is gone. The record holds no
// loop object: it may be destroyed on any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <source_location>
#include <unordered_map>

#include <reactor/export.hpp>
#include <reactor/loop_service.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/work_hold.hpp>

#include "futures/future.hpp"

namespace futures::detail {

struct RemoteEndMailbox {
    std::mutex mutex;
    reactor::Scheduler* sched;  // null once the Scheduler is being destroyed
    explicit RemoteEndMailbox(reactor::Scheduler& s) : sched(&s) {}
};

class REACTOR_API RemoteEnd : public std::enable_shared_from_this<RemoteEnd> {
public:
    // Loop thread of `sched`.
    static std::shared_ptr<RemoteEnd> make(reactor::Scheduler& sched, std::source_location where);
    RemoteEnd(std::shared_ptr<RemoteEndMailbox> mailbox, std::source_location where) noexcept
        : mailbox_(std::move(mailbox)), where_(where) {}

    // Any thread; the first call counts. Never throws.
    void ended() noexcept;
    bool has_ended() const noexcept { return ended_.load(); }
    // Loop thread: a state that settles (done) once ended() has been called
    // (cancelled if the loop ends first), or null if it has been already.
    Ref<StateBase> drain(reactor::Scheduler& sched);

private:
    std::shared_ptr<RemoteEndMailbox> mailbox_;
    std::source_location where_;
    std::atomic<bool> ended_{false};
    std::atomic<bool> wanted_{false};
};

// The loop's side: the drain states waiting for an end. Loop thread only.
class REACTOR_API RemoteEndPort final : public reactor::LoopService {
public:
    explicit RemoteEndPort(reactor::Scheduler& sched);
    ~RemoteEndPort() override;

    const std::shared_ptr<RemoteEndMailbox>& mailbox() const noexcept { return mailbox_; }
    Ref<StateBase> watch(RemoteEnd& end, std::source_location where);  // the drain state for `end`
    void arrived(RemoteEnd& end) noexcept;                             // its end: settles it

    void close() override { drop_all(); }
    void abandon() noexcept override { drop_all(); }

private:
    struct Watch {
        std::shared_ptr<RemoteEnd> end;
        Ref<StateBase> state;
        reactor::WorkHold hold;
    };
    void drop_all() noexcept;

    std::shared_ptr<RemoteEndMailbox> mailbox_;
    std::unordered_map<RemoteEnd*, Watch> watching_;
};

}  // namespace futures::detail
