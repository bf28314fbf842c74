// SPDX-License-Identifier: MIT
// futures::detail::SettableState: the state behind Future(sched), a future
// completed by hand. Unlike the library's own futures, nothing on the loop
// names a pending one (no timer, no fd wait), so it registers with its
// Scheduler's registry: Scheduler::live() lists it, with the line that made
// it, Scheduler::close() cancels it (close() leaves an empty loop), and
// ~Scheduler cancels it too, freeing a task that waits on it while holding
// it. Part of futures/future.hpp. Loop thread only.
#pragma once
#ifndef FUTURES_FUTURE_HPP_BODY_DONE
#error "futures/detail/*.hpp are parts of futures/future.hpp: include that instead"
#endif

#include <cstdint>
#include <source_location>

#include <reactor/scheduler.hpp>

#include "futures/detail/state.hpp"

namespace futures::detail {

template <class T>
class SettableState final : public State<T> {
public:
    SettableState(reactor::Scheduler& sched, std::source_location where) : State<T>(sched, where, true) {
        this->join_registry();
    }
    ~SettableState() override { this->leave_registry(); }
};

}  // namespace futures::detail
