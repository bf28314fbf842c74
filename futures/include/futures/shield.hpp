// SPDX-License-Identifier: MIT
// futures::shield: a future whose cancellation does not reach the work it
// waits on (asyncio.shield).
//
// shield(fut) completes like `fut`. Cancelling the shield cancels the shield
// alone: `fut` goes on, and whoever else holds it still gets its outcome
// (an error nobody then reads is reported as never retrieved, as usual).
// If `fut` itself is cancelled, the shield is cancelled too. Loop thread only.
#pragma once

#include <source_location>

#include "futures/future.hpp"

namespace futures {

namespace detail {

template <class T>
class ShieldState final : public WaitingState<T> {
public:
    ShieldState(reactor::Scheduler& sched, std::source_location where) : WaitingState<T>(sched, where, false) {}

    void start(State<T>& inner) { this->link_.template connect<&ShieldState::on_inner>(inner); }

private:
    void on_inner(State<T>& inner) {
        if (this->pending()) this->finish_from(inner);
    }

    // Cancellation stops here: the link is cut (its wake-up, if still due,
    // finds this state complete) and nothing upstream is asked to stop.
    Ref<StateBase> cancel_step(bool& accepted) override {
        accepted = this->pending();
        if (accepted) {
            this->link_.cut();
            this->finish_cancelled();
        }
        return {};
    }
};

}  // namespace detail

// Completes like `fut`; cancelling the result leaves `fut` running.
template <class T>
[[nodiscard]] Future<T> shield(const Future<T>& fut, std::source_location where = std::source_location::current()) {
    auto& inner = detail::Access::state(fut);
    return detail::launch<detail::ShieldState<T>>(inner.scheduler(), where).start(inner);
}

}  // namespace futures
