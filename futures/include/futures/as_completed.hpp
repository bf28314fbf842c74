// SPDX-License-Identifier: MIT
// futures::as_completed: the outcomes of some futures in the order they
// complete (asyncio.as_completed).
//
// as_completed(inputs) returns as many new futures as there are inputs; the
// first completes like the first input to complete, the second like the
// second, and so on (inputs completing in the same loop iteration keep the
// order in which they completed). Wait on them in order (a task returns
// out[0], then out[1]...) to handle results as they come. Cancelling an
// output only gives up that slot: the outcome it would have had goes to the
// next output still pending (none left: to nobody), and no input is
// cancelled (cancel the inputs themselves to stop the work). Inputs are
// watched, not owned. Loop thread only; all inputs must belong to one Scheduler.
#pragma once

#include <cstddef>
#include <source_location>
#include <stdexcept>
#include <vector>

#include <reactor/scheduler.hpp>

#include "futures/detail/gather.hpp"
#include "futures/future.hpp"

namespace futures {

namespace detail {

// Links every input, and hands each outcome, as it comes, to the first output
// still pending. Nobody holds its future: the inputs' waiter lists keep it
// until the last of them completes. It holds the outputs until it has filled them.
template <class T>
class CompletionOrderState final : public GatherState<void> {
public:
    CompletionOrderState(reactor::Scheduler& sched, std::source_location where, std::size_t n)
        : GatherState<void>(sched, where, n) {
        outputs_.reserve(n);
        for (std::size_t i = 0; i < n; ++i) outputs_.push_back(Access::adopt(new State<T>(sched, where, false)));
    }

    // `out` receives the outputs (start()'s result is the hub's own future).
    void start(const std::vector<Future<T>>& inputs, std::vector<Future<T>>& out) {
        out = outputs_;
        for (const auto& f : inputs) this->template watch<&CompletionOrderState::on_input>(Access::state(f));
    }

private:
    void on_input(State<T>& input) {
        while (next_ < outputs_.size()) {
            State<T>& slot = Access::state(outputs_[next_]);
            outputs_[next_++] = {};  // filled (or cancelled): ours no more
            if (slot.pending()) {
                slot.finish_from(input);
                break;
            }
        }
        if (this->last_input()) this->finish_value();
    }

    void destroy_payload() noexcept override { outputs_.clear(); }

    std::vector<Future<T>> outputs_;
    std::size_t next_ = 0;
};

}  // namespace detail

// One future per input, completed in the order the inputs complete (each
// like the input it stands for). The vector must not be empty (std::invalid_argument).
template <class T>
[[nodiscard]] std::vector<Future<T>> as_completed(const std::vector<Future<T>>& inputs,
                                                  std::source_location where = std::source_location::current()) {
    if (inputs.empty()) throw std::invalid_argument("as_completed: no inputs, so no Scheduler and nothing to wait for");
    detail::require_valid(inputs, "as_completed");
    reactor::Scheduler& sched = inputs.front().scheduler();
    for (const auto& f : inputs) {
        if (&f.scheduler() != &sched) throw std::invalid_argument("as_completed: inputs of different Schedulers");
    }
    std::vector<Future<T>> outputs;
    // The hub's own future is dropped at once: its inputs' waiter lists keep it.
    (void)detail::launch<detail::CompletionOrderState<T>>(sched, where, inputs.size()).start(inputs, outputs);
    return outputs;
}

}  // namespace futures
