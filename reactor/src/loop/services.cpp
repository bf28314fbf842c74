// SPDX-License-Identifier: MIT
// What lives with the loop besides its callbacks: the services (LoopService,
// found by type, kept in creation order, told of the loop's end newest first)
// and the work holds (WorkHold). The phases that tell them are in shutdown.cpp.
#include <algorithm>
#include <cstring>

#include "reactor/scheduler.hpp"

namespace reactor {

// ---------------------------------------------------------------- services

// Few services per loop (a handful): a scan. Types are compared by address
// first, then by name, because a type_info may be duplicated across shared
// libraries while its name is not.
LoopService* Scheduler::find_service(const std::type_info& type) const noexcept {
    for (const ServiceEntry& e : services_)
        if (e.type == &type) return e.service.get();
    for (const ServiceEntry& e : services_)
        if (*e.type == type) return e.service.get();
    return nullptr;
}

LoopService& Scheduler::add_service(const std::type_info& type, std::unique_ptr<LoopService> service) {
    require_loop_thread("service");
    // S's constructor may itself have made a service S needs: still one of each.
    if (LoopService* found = find_service(type)) return *found;
    services_.push_back(ServiceEntry{&type, std::move(service)});
    return *services_.back().service;
}

// Tells every service once, newest first. Telling one may make another
// (a close callback spawning a task makes the task registry): a new one is
// told too, in a later pass, since it is newer than all those already told.
template <class Tell>
void Scheduler::tell_services(Tell tell) {
    for (ServiceEntry& e : services_) e.told = false;
    for (bool told = true; told;) {
        told = false;
        for (std::size_t i = services_.size(); i-- > 0;) {
            if (services_[i].told) continue;
            services_[i].told = true;
            told = true;
            tell(*services_[i].service);  // may grow services_: index again, never a reference
        }
    }
}

void Scheduler::close_services() {
    tell_services([](LoopService& s) { s.close(); });
}

void Scheduler::abandon_services() noexcept {
    tell_services([](LoopService& s) noexcept { s.abandon(); });
}

// Newest first, each after the services made after it. A destructor may
// still make one (it cannot be told anything any more): it goes next.
void Scheduler::destroy_services() noexcept {
    while (!services_.empty()) {
        std::unique_ptr<LoopService> last = std::move(services_.back().service);
        services_.pop_back();
        last.reset();
    }
}

// ---------------------------------------------------------------- work holds

WorkHold Scheduler::hold_work(LiveItem::Kind kind, const char* what, std::source_location where) {
    require_loop_thread("hold_work", &where);
    WorkHold hold(*this, kind, what ? what : "", where);
    holds_.push_back(hold);
    return hold;  // the move keeps its place in holds_
}

void WorkHold::release() noexcept {
    unlink();
    sched_ = nullptr;
}

void WorkHold::take(WorkHold& other) noexcept {
    sched_ = std::exchange(other.sched_, nullptr);
    where_ = other.where_;
    what_ = other.what_;
    kind_ = other.kind_;
    if (other.is_linked()) sched_->holds_.replace(other, *this);
}

LiveItem WorkHold::describe() const { return LiveItem{kind_, what_, where_, true}; }

}  // namespace reactor
