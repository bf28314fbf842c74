// futures/combinators.hpp: futures made of other futures — when_all, when_any,
// with_timeout.
//
// Policy, the same for all of them: the combined future completes as soon as its
// outcome is known, and then cancels every input still pending, so nothing is
// left running that nobody waits for. The first error (or cancellation) wins;
// an input that fails later, after the combined future is complete, keeps its
// error (reported as never retrieved unless someone reads it). Cancelling the
// combined future cancels all its pending inputs. Inputs are watched, not owned:
// the combined future holds no reference that would keep them alive.
// Loop thread only; all inputs must belong to one Scheduler.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <reactor/scheduler.hpp>

#include "futures/future.hpp"

namespace futures {

namespace detail {

// What when_all/when_any of Future<T>s produce.
template <class T>
using AllValue = std::conditional_t<std::is_void_v<T>, void, std::vector<T>>;
template <class T>
using AnyValue = std::conditional_t<std::is_void_v<T>, std::size_t, std::pair<std::size_t, T>>;

// The shared part of when_all/when_any: one link per input, a countdown, and
// "first error wins, then cancel the rest". Cancelling it cancels every input
// still linked (StateBase::cancel_step, along the links).
template <class V>
class GatherState : public State<V> {
protected:
    GatherState(reactor::Scheduler& sched, std::source_location where, std::size_t inputs)
        : State<V>(sched, where, false), remaining_(inputs) {
        links_.reserve(inputs);  // never reallocated: each input's waiter list points at its link
    }

    // Links the next input: owner.*Method(input) or (link, input) once it completes.
    template <auto Method, class S>
    void watch(S& input) {
        links_.emplace_back(*this).template connect<Method>(input);
    }
    std::size_t index_of(const Link& link) const noexcept { return static_cast<std::size_t>(&link - links_.data()); }

    // Bookkeeping for a complete input: true if its value should be used. If it
    // failed or was cancelled, this completes the same way and cancels the rest.
    bool input_done(StateBase& input) {
        if (!this->pending()) return false;  // decided already: leave its outcome (and error) to it
        if (input.status() != Status::done) {
            this->finish_like(input);
            this->cancel_upstream();
            return false;
        }
        return true;
    }
    bool last_input() noexcept { return --remaining_ == 0; }

private:
    std::span<Link> links() noexcept final { return links_; }

    std::vector<Link> links_;
    std::size_t remaining_;
};

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

std::exception_ptr make_timeout_error(reactor::Duration delay);

// with_timeout(fut, delay): completes like fut, or fails with TimeoutError
// when the timer fires first, and then cancels fut.
template <class T>
class TimeoutState final : public WaitingState<T> {
public:
    TimeoutState(reactor::Scheduler& sched, std::source_location where, reactor::Duration delay)
        : WaitingState<T>(sched, where, false), delay_(delay) {}

    void start(State<T>& inner) {
        this->link_.template connect<&TimeoutState::on_inner>(inner);
        timer_ = this->scheduler().call_later(
            delay_, [self = Ref<TimeoutState>(this)] { self->on_timeout(); }, this->origin());
    }

private:
    void on_inner(State<T>& inner) {
        timer_.cancel();
        if (this->pending()) this->finish_from(inner);
    }
    void on_timeout() {
        if (!this->pending()) return;
        this->finish_failed(make_timeout_error(delay_));
        this->cancel_upstream();
    }
    Ref<StateBase> cancel_step(bool& accepted) override {
        if (this->pending()) timer_.cancel();
        return WaitingState<T>::cancel_step(accepted);
    }

    reactor::Handle timer_;
    reactor::Duration delay_;
};

template <class T>
void require_valid(const std::vector<Future<T>>& inputs, const char* who) {
    for (const auto& f : inputs) {
        if (!f.valid()) throw InvalidStateError(std::string(who) + ": an input is an empty Future");
    }
}

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
    return detail::launch<detail::WhenAllTupleState<T0, Ts...>>(first.scheduler(), first.origin()).start(first, rest...);
}

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

// Completes like `fut` if it completes within `delay`; otherwise fails with
// TimeoutError and cancels `fut`. Cancelling the result cancels `fut` and the timer.
template <class T, class Rep, class Period>
[[nodiscard]] Future<T> with_timeout(const Future<T>& fut, std::chrono::duration<Rep, Period> delay,
                                     std::source_location where = std::source_location::current()) {
    auto& inner = detail::Access::state(fut);
    return detail::launch<detail::TimeoutState<T>>(inner.scheduler(), where, std::chrono::ceil<reactor::Duration>(delay))
        .start(inner);
}

}  // namespace futures
