// SPDX-License-Identifier: MIT
// futures::when_all: one future for all of its inputs' values.
//
// Done with every value, in input order, once all are done; the first input to
// fail or be cancelled decides instead, and the others are then cancelled
// (the policy in futures/combinators.hpp). Inputs are watched, not owned.
// Loop thread only; all inputs must belong to one Scheduler.
#pragma once

#include <cstddef>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <reactor/scheduler.hpp>

#include "futures/detail/gather.hpp"
#include "futures/future.hpp"

namespace futures {

namespace detail {

// What when_all of Future<T>s produces.
template <class T>
using AllValue = std::conditional_t<std::is_void_v<T>, void, std::vector<T>>;

template <class T>
class WhenAllState final : public GatherState<AllValue<T>> {
public:
    WhenAllState(reactor::Scheduler& sched, std::source_location where, std::size_t n)
        : GatherState<AllValue<T>>(sched, where, n) {
        if constexpr (!std::is_void_v<T>) values_.resize(n);
    }

    void start(const std::vector<Future<T>>& inputs) {
        if (inputs.empty()) return finish_empty();
        for (const auto& f : inputs) this->template watch<&WhenAllState::on_input>(Access::state(f));
    }

private:
    void on_input(Link& link, State<T>& input) {
        if (!this->input_done(input)) return;
        if constexpr (!std::is_void_v<T>) values_[this->index_of(link)].emplace(input.take_value());
        if (!this->last_input()) return;
        if constexpr (std::is_void_v<T>) {
            this->finish_value();
        } else {
            std::vector<T> out;
            out.reserve(values_.size());
            for (auto& v : values_) out.push_back(std::move(*v));
            values_.clear();
            this->finish_value(std::move(out));
        }
    }

    void finish_empty() {
        if constexpr (std::is_void_v<T>) {
            this->finish_value();
        } else {
            this->finish_value(std::vector<T>{});
        }
    }

    void destroy_payload() noexcept override { values_.clear(); }

    std::vector<std::optional<Stored<T>>> values_;
};

template <class... Ts>
class WhenAllTupleState final : public GatherState<std::tuple<Stored<Ts>...>> {
public:
    WhenAllTupleState(reactor::Scheduler& sched, std::source_location where)
        : GatherState<std::tuple<Stored<Ts>...>>(sched, where, sizeof...(Ts)) {}

    void start(const Future<Ts>&... inputs) { start_each(std::index_sequence_for<Ts...>{}, inputs...); }

private:
    // Input I wakes on_input<I>: its position and value type are known at compile time.
    template <std::size_t... I>
    void start_each(std::index_sequence<I...>, const Future<Ts>&... inputs) {
        (this->template watch<&WhenAllTupleState::template on_input<I, Ts>>(Access::state(inputs)), ...);
    }

    template <std::size_t I, class T>
    void on_input(State<T>& input) {
        if (!this->input_done(input)) return;
        std::get<I>(values_).emplace(input.take_value());
        if (!this->last_input()) return;
        this->finish_value(std::apply(
            [](auto&... v) { return std::tuple<Stored<Ts>...>(std::move(*v)...); }, values_));
    }

    void destroy_payload() noexcept override {
        std::apply([](auto&... v) { (v.reset(), ...); }, values_);
    }

    std::tuple<std::optional<Stored<Ts>>...> values_;
};

}  // namespace detail

// Done with every input's value, in input order (nothing for Future<void>), once
// all are done. The first input to fail or be cancelled decides instead: the
// result fails (is cancelled) the same way and the other inputs are cancelled.
// An empty vector gives a future that is already done.
template <class T>
[[nodiscard]] Future<detail::AllValue<T>> when_all(reactor::Scheduler& sched, const std::vector<Future<T>>& inputs,
                                                   std::source_location where = std::source_location::current()) {
    detail::require_valid(inputs, "when_all");
    return detail::launch<detail::WhenAllState<T>>(sched, where, inputs.size()).start(inputs);
}

// The same, on the inputs' Scheduler; the vector must not be empty (std::invalid_argument).
template <class T>
[[nodiscard]] Future<detail::AllValue<T>> when_all(const std::vector<Future<T>>& inputs,
                                                   std::source_location where = std::source_location::current()) {
    if (inputs.empty()) throw std::invalid_argument("when_all: no inputs, so no Scheduler; use when_all(sched, inputs)");
    detail::require_valid(inputs, "when_all");
    return when_all(inputs.front().scheduler(), inputs, where);
}

// Variadic form: a tuple of the values, in argument order; a Future<void>
// contributes a std::monostate. Same error and cancellation policy.
template <class T0, class... Ts>
[[nodiscard]] Future<std::tuple<detail::Stored<T0>, detail::Stored<Ts>...>> when_all(const Future<T0>& first,
                                                                                     const Future<Ts>&... rest) {
    if (!first.valid() || !(rest.valid() && ...)) throw InvalidStateError("when_all: an input is an empty Future");
    return detail::launch<detail::WhenAllTupleState<T0, Ts...>>(first.scheduler(), first.origin())
        .start(first, rest...);
}

}  // namespace futures
