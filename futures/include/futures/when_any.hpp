// SPDX-License-Identifier: MIT
// futures::when_any: the first of its inputs to complete, and its index.
//
// Completes as the first input completes, however it completes, and then
// cancels the others (the policy in futures/combinators.hpp). Inputs are
// watched, not owned. Loop thread only; all inputs must belong to one Scheduler.
#pragma once

#include <cstddef>
#include <source_location>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include <reactor/scheduler.hpp>

#include "futures/detail/gather.hpp"
#include "futures/future.hpp"

namespace futures {

namespace detail {

// What when_any of Future<T>s produces.
template <class T>
using AnyValue = std::conditional_t<std::is_void_v<T>, std::size_t, std::pair<std::size_t, T>>;

template <class T>
class WhenAnyState final : public GatherState<AnyValue<T>> {
public:
    WhenAnyState(reactor::Scheduler& sched, std::source_location where, std::size_t n)
        : GatherState<AnyValue<T>>(sched, where, n) {}

    void start(const std::vector<Future<T>>& inputs) {
        for (const auto& f : inputs) this->template watch<&WhenAnyState::on_input>(Access::state(f));
    }

private:
    void on_input(Link& link, State<T>& input) {
        if (!this->input_done(input)) return;
        const std::size_t i = this->index_of(link);
        if constexpr (std::is_void_v<T>) {
            this->finish_value(i);
        } else {
            this->finish_value(i, input.take_value());
        }
        this->cancel_upstream();
    }
};

}  // namespace detail

// Done as soon as the first input completes, however it completes: with
// (index, value) (just the index for Future<void>) if it succeeded; failed or
// cancelled like it otherwise. The other inputs are then cancelled. The vector
// must not be empty (std::invalid_argument).
template <class T>
[[nodiscard]] Future<detail::AnyValue<T>> when_any(const std::vector<Future<T>>& inputs,
                                                   std::source_location where = std::source_location::current()) {
    if (inputs.empty()) throw std::invalid_argument("when_any: no inputs: it would never complete");
    detail::require_valid(inputs, "when_any");
    return detail::launch<detail::WhenAnyState<T>>(inputs.front().scheduler(), where, inputs.size()).start(inputs);
}

}  // namespace futures
