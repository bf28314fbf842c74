// SPDX-License-Identifier: MIT
// futures::when_all_settled: one future for all of its inputs' outcomes,
// whatever they are (asyncio.gather(..., return_exceptions=True)).
//
// Done once every input is complete, however it completed, with the inputs
// themselves, in input order: each one done, failed or cancelled, to be read
// with result(), exception() or status(). It never fails and never cancels
// an input because another failed. The inputs' errors count as retrieved
// (they were handed to the caller in the vector), so one nobody reads is not
// reported. Cancelling the result cancels every input still pending (then it
// is cancelled, like when_all). Inputs are watched, not owned, until they
// complete. Loop thread only; all inputs must belong to one Scheduler.
#pragma once

#include <cstddef>
#include <source_location>
#include <stdexcept>
#include <utility>
#include <vector>

#include <reactor/scheduler.hpp>

#include "futures/detail/gather.hpp"
#include "futures/future.hpp"

namespace futures {

namespace detail {

template <class T>
class SettledState final : public GatherState<std::vector<Future<T>>> {
public:
    SettledState(reactor::Scheduler& sched, std::source_location where, std::size_t n)
        : GatherState<std::vector<Future<T>>>(sched, where, n), outcomes_(n) {}

    void start(const std::vector<Future<T>>& inputs) {
        if (inputs.empty()) return this->finish_value(std::vector<Future<T>>{});
        for (const auto& f : inputs) this->template watch<&SettledState::on_input>(Access::state(f));
    }

private:
    // No policy: every outcome is kept, and only the last one decides.
    void on_input(Link& link, State<T>& input) {
        if (!this->pending()) return;  // cancelled: the inputs were cancelled with it
        input.mark_retrieved();
        outcomes_[this->index_of(link)] = Access::share(&input);
        if (this->last_input()) this->finish_value(std::move(outcomes_));
    }

    void destroy_payload() noexcept override { outcomes_.clear(); }

    std::vector<Future<T>> outcomes_;
};

}  // namespace detail

// Done, once every input is complete, with the inputs in input order (each
// complete: read its outcome with result() or exception()). An empty vector
// gives a future that is already done.
template <class T>
[[nodiscard]] Future<std::vector<Future<T>>> when_all_settled(
    reactor::Scheduler& sched, const std::vector<Future<T>>& inputs,
    std::source_location where = std::source_location::current()) {
    detail::require_valid(inputs, "when_all_settled");
    return detail::launch<detail::SettledState<T>>(sched, where, inputs.size()).start(inputs);
}

// The same, on the inputs' Scheduler; the vector must not be empty (std::invalid_argument).
template <class T>
[[nodiscard]] Future<std::vector<Future<T>>> when_all_settled(
    const std::vector<Future<T>>& inputs, std::source_location where = std::source_location::current()) {
    if (inputs.empty())
        throw std::invalid_argument(
            "when_all_settled: no inputs, so no Scheduler; use when_all_settled(sched, inputs)");
    detail::require_valid(inputs, "when_all_settled");
    return when_all_settled(inputs.front().scheduler(), inputs, where);
}

}  // namespace futures
