// SPDX-License-Identifier: MIT
// futures::detail::LiveHook and TaskRegistry: every task of a Scheduler, and
// every future made to be completed by hand (Future(sched)), known by the
// loop, so that futures::all_tasks() can show the tasks, Scheduler::live()
// can list both, Scheduler::close() can cancel both (the tasks first), and
// ~Scheduler can free them even when they wait on one another in a cycle.
// (Other futures need no registration: a timer, an fd wait or the futures
// they wait on name them.)
//
// A task registers when spawned (a hand-made future when made) and leaves
// when its state is destroyed; the registry is a service of the loop
// (reactor::LoopService), made on its first spawn and destroyed with it. An
// intrusive list: registering allocates nothing. Loop thread only.
#pragma once

#include <string_view>

#include <reactor/export.hpp>
#include <reactor/intrusive_list.hpp>
#include <reactor/scheduler.hpp>

namespace futures::detail {

class StateBase;
class TaskRegistry;

// The part of a task (TaskState<M>) or of a hand-made future
// (SettableState<T>) the registry sees.
class REACTOR_API LiveHook : private reactor::ListMember<LiveHook> {
public:
    virtual StateBase& task_state() noexcept = 0;
    virtual bool is_task() const noexcept { return true; }
    // The machine's state_name(), or empty if its class has none.
    virtual std::string_view machine_state() const { return {}; }
    virtual bool has_machine_state() const noexcept { return false; }
    // What the task waits on now, or null.
    virtual StateBase* awaited() const noexcept { return nullptr; }
    virtual bool started() const noexcept { return false; }  // resume() has run

protected:
    LiveHook() = default;
    LiveHook(const LiveHook&) = delete;
    LiveHook& operator=(const LiveHook&) = delete;
    ~LiveHook() = default;  // leaves the registry (ListMember)
    void join(reactor::Scheduler& sched);

private:
    friend class TaskRegistry;
    friend class reactor::IntrusiveList<LiveHook>;
};

}  // namespace futures::detail
