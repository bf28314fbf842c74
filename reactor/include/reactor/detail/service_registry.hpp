// SPDX-License-Identifier: MIT
// reactor::detail::ServiceRegistry: a Scheduler's loop services (LoopService),
// one of each type, kept in creation order and told of the loop's end newest
// first (docs/scheduler.md, "Extending the loop"). Part of scheduler.hpp: the
// Scheduler checks its thread and hands calls on (services.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <typeinfo>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/live_item.hpp"
#include "reactor/loop_service.hpp"

namespace reactor::detail {

class REACTOR_API ServiceRegistry {
public:
    // The service of `type`, or null. Types are compared by address, then by
    // name (a type_info may be duplicated across shared libraries).
    LoopService* find(const std::type_info& type) const noexcept;
    // Keeps `service` as the one of `type`, unless S's constructor already
    // made one (it may ask for a service of its own type): then that one.
    LoopService& add(const std::type_info& type, std::unique_ptr<LoopService> service);
    // Each service told once, newest first; one made meanwhile is told too.
    void close_all();
    void abandon_all() noexcept;
    // Newest first; one a destructor makes is destroyed next.
    void destroy_all() noexcept;
    void describe(std::vector<LiveItem>& out) const;  // oldest first
    bool empty() const noexcept { return entries_.empty(); }

private:
    struct Entry {
        const std::type_info* type;
        std::unique_ptr<LoopService> service;
        bool told = false;  // in the current round of tell_all
    };
    template <class Tell>
    void tell_all(Tell tell);

    std::vector<Entry> entries_;
};

}  // namespace reactor::detail
