// SPDX-License-Identifier: MIT
// The registry of tasks and hand-made futures per Scheduler, and futures::all_tasks().
#include "futures/detail/task_registry.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "futures/future.hpp"
#include "futures/task_snapshot.hpp"

namespace futures::detail {

class TaskRegistry final : public reactor::LoopService {
public:
    explicit TaskRegistry(reactor::Scheduler& sched) noexcept : LoopService(sched) {}

    void add(LiveHook& t) noexcept { hooks_.push_back(t); }

    enum class Which : unsigned char { tasks, hand_made, all };

    // Strong references to every pending registered state of that kind,
    // oldest first: what is done to them may complete and free others.
    std::vector<Ref<StateBase>> pending(Which which) const {
        std::vector<Ref<StateBase>> out;
        hooks_.for_each([&](LiveHook& t) {
            StateBase& s = t.task_state();
            const bool wanted = which == Which::all || t.is_task() == (which == Which::tasks);
            if (s.alive() && s.pending() && wanted) out.emplace_back(&s);
        });
        return out;
    }

    std::vector<TaskInfo> snapshot() const {
        std::vector<TaskInfo> out;
        hooks_.for_each([&](LiveHook& t) {
            StateBase& s = t.task_state();
            if (!s.alive() || !s.pending() || !t.is_task()) return;
            TaskInfo info;
            info.spawned_at = s.origin();
            info.started = t.started();
            if (t.has_machine_state()) info.state = std::string(t.machine_state());
            if (StateBase* up = t.awaited()) {
                info.waiting_on_kind = std::string(up->kind());
                info.waiting_on = up->origin();
            }
            out.push_back(std::move(info));
        });
        return out;
    }

    // Scheduler::close(): every task is asked to stop (its machine is resumed
    // with CancelledError, and close() runs that resume). Then every
    // hand-made future still pending is cancelled: close() leaves an empty
    // loop, and nobody could complete it on a closed one but by hand (its
    // set_result then throws InvalidStateError, as on any done future).
    // Tasks go first so that a task waiting on such a future is cancelled
    // as a task (the future with it), not woken by the future's cancellation.
    void close() override {
        for (Ref<StateBase>& s : pending(Which::tasks)) s->cancel();
        for (Ref<StateBase>& s : pending(Which::hand_made)) s->cancel();
    }

    // Nothing of these may run any more (close()'s last phases, ~Scheduler).
    // Every pending task loses its machine unrun and is cancelled, and so is
    // every pending hand-made future, which frees tasks that wait on one
    // another or on a future nobody will complete (the cycles a machine
    // holding its awaited future makes). The registry stays for the next
    // run of the loop.
    void abandon() noexcept override {
        for (Ref<StateBase>& s : pending(Which::all)) s->wakeup_lost();
    }

    void describe(std::vector<reactor::LiveItem>& out) const override {
        hooks_.for_each([&](LiveHook& t) {
            const StateBase& s = t.task_state();
            if (t.is_task() || !s.alive() || !s.pending()) return;
            out.push_back(reactor::LiveItem{reactor::LiveItem::Kind::future, "pending, to be completed by hand",
                                            s.origin(), true});
        });
        for (const TaskInfo& info : snapshot())
            out.push_back(reactor::LiveItem{reactor::LiveItem::Kind::task, info.to_string(), info.spawned_at, true});
    }

private:
    reactor::IntrusiveList<LiveHook> hooks_;  // oldest first; a state leaves as it is destroyed
};

void LiveHook::join(reactor::Scheduler& sched) { sched.service<TaskRegistry>().add(*this); }

}  // namespace futures::detail

namespace futures {

std::string TaskInfo::to_string() const {
    std::string line = state ? fmt::format("state {}", *state) : std::string("state unknown (no state_name())");
    if (!started) line += ", not started";
    if (!waiting_on_kind.empty()) {
        line += fmt::format(", waiting on the {} created at {}:{}", waiting_on_kind, waiting_on.file_name(),
                            waiting_on.line());
    }
    return line;
}

std::vector<TaskInfo> all_tasks(reactor::Scheduler& sched) {
    const auto* r = sched.find_service<detail::TaskRegistry>();
    return r ? r->snapshot() : std::vector<TaskInfo>{};
}

}  // namespace futures
