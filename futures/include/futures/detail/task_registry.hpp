// futures::detail::TaskHook and TaskRegistry: every task of a Scheduler,
// known by the loop, so that futures::all_tasks() can show them,
// Scheduler::live() can list them, Scheduler::close() can cancel them, and
// ~Scheduler can free them even when they wait on one another in a cycle.
//
// A task registers when spawned and leaves when its state is destroyed; the
// registry of a Scheduler is made on its first spawn and dies with it (a
// SchedulerObserver). An intrusive list: registering allocates nothing.
// Loop thread only.
#pragma once

#include <string_view>

#include <reactor/scheduler.hpp>

namespace futures::detail {

class StateBase;
class TaskRegistry;

// The part of a task the registry sees (TaskState<M> implements it).
class TaskHook {
public:
    virtual StateBase& task_state() noexcept = 0;
    // The machine's state_name(), or empty if its class has none.
    virtual std::string_view machine_state() const = 0;
    virtual bool has_machine_state() const noexcept = 0;
    // What the task waits on now, or null.
    virtual StateBase* awaited() const noexcept = 0;
    virtual bool started() const noexcept = 0;  // resume() has run

protected:
    TaskHook() = default;
    TaskHook(const TaskHook&) = delete;
    TaskHook& operator=(const TaskHook&) = delete;
    ~TaskHook() { leave(); }
    void join(reactor::Scheduler& sched);
    void leave() noexcept;

private:
    friend class TaskRegistry;
    TaskRegistry* registry_ = nullptr;
    TaskHook* prev_ = nullptr;
    TaskHook* next_ = nullptr;
};

}  // namespace futures::detail
