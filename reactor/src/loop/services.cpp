// SPDX-License-Identifier: MIT
// What lives with the loop besides its callbacks: the services (LoopService,
// found by type, kept in creation order, told of the loop's end newest first)
// and the work holds (WorkHold). The phases that tell them are in shutdown.cpp.
#include <algorithm>
#include <cstring>

#include "reactor/scheduler.hpp"

namespace reactor {

// ---------------------------------------------------------------- services

// Few services per loop (a handful): a scan, by address first.
LoopService* detail::ServiceRegistry::find(const std::type_info& type) const noexcept {
    for (const Entry& e : entries_)
        if (e.type == &type) return e.service.get();
    for (const Entry& e : entries_)
        if (*e.type == type) return e.service.get();
    return nullptr;
}

LoopService& detail::ServiceRegistry::add(const std::type_info& type, std::unique_ptr<LoopService> service) {
    if (LoopService* found = find(type)) return *found;
    entries_.push_back(Entry{&type, std::move(service)});
    return *entries_.back().service;
}

// Telling one may make another (a close callback spawning a task makes the
// task registry): a new one is told too, in a later pass, since it is newer
// than all those already told.
template <class Tell>
void detail::ServiceRegistry::tell_all(Tell tell) {
    for (Entry& e : entries_) e.told = false;
    for (bool told = true; told;) {
        told = false;
        for (std::size_t i = entries_.size(); i-- > 0;) {
            if (entries_[i].told) continue;
            entries_[i].told = true;
            told = true;
            tell(*entries_[i].service);  // may grow entries_: index again, never a reference
        }
    }
}

void detail::ServiceRegistry::close_all() {
    tell_all([](LoopService& s) { s.close(); });
}

void detail::ServiceRegistry::abandon_all() noexcept {
    tell_all([](LoopService& s) noexcept { s.abandon(); });
}

void detail::ServiceRegistry::destroy_all() noexcept {
    while (!entries_.empty()) {
        std::unique_ptr<LoopService> last = std::move(entries_.back().service);
        entries_.pop_back();
        last.reset();
    }
}

void detail::ServiceRegistry::describe(std::vector<LiveItem>& out) const {
    for (const Entry& e : entries_) e.service->describe(out);
}

LoopService& Scheduler::add_service(const std::type_info& type, std::unique_ptr<LoopService> service) {
    require_loop_thread("service");
    return services_.add(type, std::move(service));
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
