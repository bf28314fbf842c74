// SPDX-License-Identifier: MIT
// reactor::detail::FdTable: what a Scheduler keeps by fd number. `waiting`
// holds each fd's owner and what it watches (FdWaiters), up to the largest
// fd owned or given a callback waiter; `callbacks` the add_reader/
// add_writer/read_wait/write_wait callbacks, only up to the largest fd given
// one (never longer than `waiting`, so an fd with a callback has an entry in
// both): a program whose fds all have owners never grows it. Part of
// scheduler.hpp; not API.
#pragma once

#include <cstddef>
#include <vector>

#include "reactor/detail/scheduler_slots.hpp"

namespace reactor::detail {

struct FdTable {
    std::vector<FdWaiters> waiting;
    std::vector<FdCallbacks> callbacks;
    std::size_t waiters = 0;  // callback waiters and watched directions registered: work

    FdOwner* owner(int fd) const noexcept {
        return fd >= 0 && static_cast<std::size_t>(fd) < waiting.size() ? waiting[static_cast<std::size_t>(fd)].owner
                                                                         : nullptr;
    }
    bool owner_timer_pending(int fd) const noexcept {
        return fd >= 0 && static_cast<std::size_t>(fd) < waiting.size() &&
               waiting[static_cast<std::size_t>(fd)].owner_timer;
    }
    // An fd beyond `callbacks`'s end has no callback waiter.
    FdCallbacks callbacks_of(int fd) const noexcept {
        const auto index = static_cast<std::size_t>(fd);
        return index < callbacks.size() ? callbacks[index] : FdCallbacks{};
    }
};

}  // namespace reactor::detail
