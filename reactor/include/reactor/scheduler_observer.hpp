// reactor::SchedulerObserver: told first when its Scheduler is destroyed.
#pragma once

#include <cstddef>

namespace reactor {

class Scheduler;

// An object that lives on a loop and must end with it. A Connection owns
// itself while open (nobody else would free it), so when its Scheduler is
// destroyed first it would leak: observers registered with add_observer hear
// of the destruction first of all, while the Scheduler is still whole, and
// end themselves there (a Connection aborts and releases itself, destroying
// its callbacks unrun). The observer must not schedule anything from then on: the
// loop never runs again. Registering and removing are O(1). Loop thread only.
class SchedulerObserver {
public:
    virtual void on_scheduler_destroyed() noexcept = 0;

protected:
    SchedulerObserver() = default;
    SchedulerObserver(const SchedulerObserver&) = delete;
    SchedulerObserver& operator=(const SchedulerObserver&) = delete;
    ~SchedulerObserver() = default;

private:
    friend class Scheduler;
    static constexpr std::size_t kNotObserving = static_cast<std::size_t>(-1);
    std::size_t observer_index_ = kNotObserving;
};

}  // namespace reactor
