// reactor::SchedulerObserver: told first when its Scheduler is closed or destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <reactor/live_item.hpp>

namespace reactor {

class Scheduler;

// An object that lives on a loop and must end with it. A Connection owns
// itself while open (nobody else would free it), so when its Scheduler is
// destroyed first it would leak: observers registered with add_observer hear
// of the destruction first of all, while the Scheduler is still whole, and
// end themselves there (a Connection aborts and releases itself, destroying
// its callbacks unrun). The observer must not schedule anything from then on: the
// loop never runs again. Registering and removing are O(1). Loop thread only.
//
// Scheduler::close() is the orderly end, called while the program's objects
// are still alive: observers hear on_scheduler_closing() first and may still
// schedule callbacks (a Connection aborts and queues its close callback with
// CloseKind::scheduler_closed), which close() then runs. The destructor
// cannot run anything safely (objects declared after the Scheduler are gone),
// so on_scheduler_destroyed() must end the object silently. describe() lists
// what the observer keeps alive, for Scheduler::live().
class SchedulerObserver {
public:
    virtual void on_scheduler_destroyed() noexcept = 0;
    virtual void on_scheduler_closing() {}
    virtual void describe(std::vector<LiveItem>& out) const { (void)out; }

protected:
    SchedulerObserver() = default;
    SchedulerObserver(const SchedulerObserver&) = delete;
    SchedulerObserver& operator=(const SchedulerObserver&) = delete;
    ~SchedulerObserver() = default;

private:
    friend class Scheduler;
    static constexpr std::size_t kNotObserving = static_cast<std::size_t>(-1);
    std::size_t observer_index_ = kNotObserving;
    std::uint64_t closing_epoch_ = 0;  // the close() that told it, so that each hears once per close()
};

}  // namespace reactor
