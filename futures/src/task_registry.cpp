// The registry of tasks and hand-made futures per Scheduler, and futures::all_tasks().
#include "futures/detail/task_registry.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "futures/future.hpp"
#include "futures/task_snapshot.hpp"

namespace futures::detail {

class TaskRegistry final : public reactor::SchedulerObserver {
public:
    // The registry of `sched`, made on first use.
    static TaskRegistry& of(reactor::Scheduler& sched) {
        for (TaskRegistry* r : registries()) {
            if (r->sched_ == &sched) return *r;
        }
        auto* r = new TaskRegistry(sched);
        registries().push_back(r);
        sched.add_observer(*r);
        return *r;
    }
    // Null if `sched` never had a task.
    static TaskRegistry* find(reactor::Scheduler& sched) noexcept {
        for (TaskRegistry* r : registries()) {
            if (r->sched_ == &sched) return r;
        }
        return nullptr;
    }

    void add(LiveHook& t) noexcept {
        t.registry_ = this;
        t.prev_ = tail_;
        t.next_ = nullptr;
        (tail_ ? tail_->next_ : head_) = &t;
        tail_ = &t;
    }
    void remove(LiveHook& t) noexcept {
        (t.prev_ ? t.prev_->next_ : head_) = t.next_;
        (t.next_ ? t.next_->prev_ : tail_) = t.prev_;
        t.prev_ = t.next_ = nullptr;
        t.registry_ = nullptr;
    }

    enum class Which : unsigned char { tasks, hand_made, all };

    // Strong references to every pending registered state of that kind,
    // oldest first: what is done to them may complete and free others.
    std::vector<Ref<StateBase>> pending(Which which) const {
        std::vector<Ref<StateBase>> out;
        for (LiveHook* t = head_; t; t = t->next_) {
            StateBase& s = t->task_state();
            const bool wanted = which == Which::all || t->is_task() == (which == Which::tasks);
            if (s.alive() && s.pending() && wanted) out.emplace_back(&s);
        }
        return out;
    }

    std::vector<TaskInfo> snapshot() const {
        std::vector<TaskInfo> out;
        for (LiveHook* t = head_; t; t = t->next_) {
            StateBase& s = t->task_state();
            if (!s.alive() || !s.pending() || !t->is_task()) continue;
            TaskInfo info;
            info.spawned_at = s.origin();
            info.started = t->started();
            if (t->has_machine_state()) info.state = std::string(t->machine_state());
            if (StateBase* up = t->awaited()) {
                info.waiting_on_kind = std::string(up->kind());
                info.waiting_on = up->origin();
            }
            out.push_back(std::move(info));
        }
        return out;
    }

    // Scheduler::close(): every task is asked to stop (its machine is resumed
    // with CancelledError, and close() runs that resume). Then every
    // hand-made future still pending is cancelled: close() leaves an empty
    // loop, and nobody could complete it on a closed one but by hand (its
    // set_result then throws InvalidStateError, as on any done future).
    // Tasks go first so that a task waiting on such a future is cancelled
    // as a task (the future with it), not woken by the future's cancellation.
    void on_scheduler_closing() override {
        for (Ref<StateBase>& s : pending(Which::tasks)) s->cancel();
        for (Ref<StateBase>& s : pending(Which::hand_made)) s->cancel();
    }

    // ~Scheduler: nothing may run any more. Every pending task loses its
    // machine unrun and is cancelled, and so is every pending hand-made
    // future, which frees tasks that wait on one another or on a future
    // nobody will complete (the cycles a machine holding its awaited future
    // makes). Then the registry goes.
    void on_scheduler_destroyed() noexcept override {
        for (Ref<StateBase>& s : pending(Which::all)) s->wakeup_lost();
        auto& all = registries();
        all.erase(std::remove(all.begin(), all.end(), this), all.end());
        for (LiveHook* t = head_; t;) {
            LiveHook* next = t->next_;
            t->registry_ = nullptr;
            t->prev_ = t->next_ = nullptr;
            t = next;
        }
        delete this;
    }

    void describe(std::vector<reactor::LiveItem>& out) const override {
        for (LiveHook* t = head_; t; t = t->next_) {
            const StateBase& s = t->task_state();
            if (t->is_task() || !s.alive() || !s.pending()) continue;
            reactor::LiveItem item;
            item.kind = reactor::LiveItem::Kind::future;
            item.detail = "pending, to be completed by hand";
            item.where = s.origin();
            item.where_known = true;
            out.push_back(std::move(item));
        }
        for (const TaskInfo& info : snapshot()) {
            reactor::LiveItem item;
            item.kind = reactor::LiveItem::Kind::task;
            item.detail = info.to_string();
            item.where = info.spawned_at;
            item.where_known = true;
            out.push_back(std::move(item));
        }
    }

private:
    explicit TaskRegistry(reactor::Scheduler& sched) : sched_(&sched) {}

    static std::vector<TaskRegistry*>& registries() {
        thread_local std::vector<TaskRegistry*> all;  // usually one: a thread runs one loop
        return all;
    }

    reactor::Scheduler* sched_;
    LiveHook* head_ = nullptr;
    LiveHook* tail_ = nullptr;
};

void LiveHook::join(reactor::Scheduler& sched) { TaskRegistry::of(sched).add(*this); }

void LiveHook::leave() noexcept {
    if (registry_) registry_->remove(*this);
}

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
    detail::TaskRegistry* r = detail::TaskRegistry::find(sched);
    return r ? r->snapshot() : std::vector<TaskInfo>{};
}

}  // namespace futures
