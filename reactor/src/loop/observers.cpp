// The Scheduler's observers (SchedulerObserver): objects told of its
// destruction first of all. Membership by index, each observer knowing its
// own, so that adding and removing are O(1). ~Scheduler (scheduler.cpp) walks them.
#include "reactor/scheduler.hpp"

namespace reactor {

void Scheduler::add_observer(SchedulerObserver& observer) {
    if (observer.observer_index_ != SchedulerObserver::kNotObserving) return;
    observer.observer_index_ = observers_.size();
    observers_.push_back(&observer);
}

void Scheduler::remove_observer(SchedulerObserver& observer) noexcept {
    const std::size_t i = observer.observer_index_;
    if (i >= observers_.size() || observers_[i] != &observer) return;
    SchedulerObserver* last = observers_.back();
    observers_[i] = last;
    last->observer_index_ = i;
    observers_.pop_back();
    observer.observer_index_ = SchedulerObserver::kNotObserving;
}

}  // namespace reactor
