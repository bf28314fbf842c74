// SPDX-License-Identifier: MIT
// The registry of tasks and hand-made futures per Scheduler, and futures::all_tasks().
//
// Every task of a Scheduler, and every future made to be completed by hand
// (Future(sched)), is known by the loop, so that futures::all_tasks() can
// show the tasks, Scheduler::live() can list both, Scheduler::close() can
// cancel both (the tasks first), and ~Scheduler can free them even when they
// wait on one another in a cycle. (Other futures need no registration: a
// timer, an fd wait or the futures they wait on name them.)
//
// A task registers when it starts (a hand-made future when made) and leaves
// when its state is destroyed; the registry is a service of the loop
// (reactor::LoopService), made on its first spawn and destroyed with it. It
// is a vector of the states, oldest first, and each state keeps its index
// (StateBase::registry_index_, beside the task's flags): a task
// carries no list links and no second vtable pointer, and an idle
// conversation's task is that much smaller. A state that leaves leaves a hole, and the
// vector is compacted (the indexes updated) once half of it is holes, never
// while it is being walked. Loop thread only.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "futures/future.hpp"
#include "futures/task_snapshot.hpp"

namespace futures::detail {

class TaskRegistry final : public reactor::LoopService {
public:
    explicit TaskRegistry(reactor::Scheduler& sched) noexcept : LoopService(sched) {}
    TaskRegistry(const TaskRegistry&) = delete;
    TaskRegistry& operator=(const TaskRegistry&) = delete;
    // The states still listed (it goes with its loop) forget it.
    ~TaskRegistry() override {
        for (StateBase* s : states_)
            if (s) s->registry_index_ = StateBase::kNotListed;
    }

    void add(StateBase& s) {
        std::uint32_t& index = s.registry_index_;
        if (index != StateBase::kNotListed) return;
        if (states_.size() >= StateBase::kNotListed) throw std::length_error("futures: too many tasks");
        states_.push_back(&s);
        index = static_cast<std::uint32_t>(states_.size() - 1);
    }
    void remove(StateBase& s) noexcept {
        std::uint32_t& index = s.registry_index_;
        states_[index] = nullptr;
        index = StateBase::kNotListed;
        ++holes_;
        while (!states_.empty() && !states_.back()) {  // the newest left: no hole kept for it
            states_.pop_back();
            --holes_;
        }
        if (holes_ > 16 && holes_ * 2 > states_.size()) compact();
    }

    enum class Which : unsigned char { tasks, hand_made, all };

    // Strong references to every pending registered state of that kind,
    // oldest first: what is done to them may complete and free others.
    std::vector<Ref<StateBase>> pending(Which which) const {
        std::vector<Ref<StateBase>> out;
        for_each([&](StateBase& s) {
            const bool wanted = which == Which::all || s.is_task() == (which == Which::tasks);
            if (s.alive() && s.pending() && wanted) out.emplace_back(&s);
        });
        return out;
    }

    std::vector<TaskInfo> snapshot() const {
        std::vector<TaskInfo> out;
        for_each([&](StateBase& s) {
            if (!s.alive() || !s.pending() || !s.is_task()) return;
            TaskInfo info;
            info.spawned_at = s.origin();
            info.started = s.task_started();
            if (s.task_names_its_state()) info.state = std::string(s.task_machine_state());
            if (StateBase* up = s.task_awaited()) {
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
        for_each([&](StateBase& s) {
            if (s.is_task() || !s.alive() || !s.pending()) return;
            out.push_back(reactor::LiveItem{reactor::LiveItem::Kind::future, "pending, to be completed by hand",
                                            s.origin(), true});
        });
        for (const TaskInfo& info : snapshot())
            out.push_back(reactor::LiveItem{reactor::LiveItem::Kind::task, info.to_string(), info.spawned_at, true});
    }

private:
    // Calls f(StateBase&) for each listed state, oldest first. What f does
    // may list more (they are walked too) or make others leave (they are
    // skipped); the vector is not compacted meanwhile, so indexes hold.
    template <class F>
    void for_each(F&& f) const {
        ++walking_;
        struct Done {
            const TaskRegistry& r;
            ~Done() { --r.walking_; }
        } done{*this};
        for (std::size_t i = 0; i < states_.size(); ++i)
            if (StateBase* s = states_[i]) f(*s);
    }

    // Closes the holes, oldest first still, and gives back the memory of a
    // burst of tasks gone.
    void compact() noexcept {
        if (walking_ != 0) return;
        std::size_t kept = 0;
        for (StateBase* s : states_) {
            if (!s) continue;
            s->registry_index_ = static_cast<std::uint32_t>(kept);
            states_[kept++] = s;
        }
        states_.resize(kept);
        holes_ = 0;
        if (states_.capacity() > 2 * kept + 64) states_.shrink_to_fit();
    }

    std::vector<StateBase*> states_;  // oldest first; null where one left
    std::size_t holes_ = 0;
    mutable unsigned walking_ = 0;    // for_each calls in progress
};

void StateBase::join_registry() { scheduler().service<TaskRegistry>().add(*this); }

void StateBase::leave_registry() noexcept {
    if (registry_index_ == kNotListed) return;
    if (auto* registry = sched_->find_service<TaskRegistry>()) registry->remove(*this);
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
    const auto* r = sched.find_service<detail::TaskRegistry>();
    return r ? r->snapshot() : std::vector<TaskInfo>{};
}

}  // namespace futures
