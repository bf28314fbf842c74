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

// The shared part of when_all/when_any: weak links to the inputs, a countdown,
// and "first error wins, then cancel the rest".
template <class V>
class GatherState : public State<V> {
protected:
    GatherState(reactor::Scheduler& sched, std::source_location where, std::size_t inputs)
        : State<V>(sched, where, false), remaining_(inputs) {
        links_.reserve(inputs);
    }

    // Registers the next input: on_ready(input, i) once it completes, i = its
    // position (links_.size() now).
    void watch(StateBase& input) {
        auto i = static_cast<std::uint32_t>(links_.size());
        links_.emplace_back(&input);
        input.add_waiter(this, i);
    }

    // Bookkeeping for input i, complete: true if its value should be used. If it
    // failed or was cancelled, this completes the same way and cancels the rest.
    bool input_done(std::size_t i, StateBase& input) {
        links_[i].reset();
        if (!this->pending()) return false;  // decided already: leave its outcome (and error) to it
        if (input.status() != Status::done) {
            this->finish_like(input);
            cancel_inputs();
            return false;
        }
        return true;
    }
    bool last_input() noexcept { return --remaining_ == 0; }

    void cancel_inputs() {
        for (WeakRef& link : links_) {
            if (StateBase* s = link.get()) {
                Ref<StateBase> keep(s);
                link.reset();
                s->cancel();
            }
        }
    }

    StateBase* cancel_step(bool& accepted) override {
        accepted = this->pending();
        if (accepted) {
            this->finish_cancelled();
            cancel_inputs();
        }
        return nullptr;
    }

    void destroy_payload() noexcept override {
        links_.clear();
        State<V>::destroy_payload();
    }

private:
    std::vector<WeakRef> links_;
    std::size_t remaining_;
};

template <class T>
class WhenAllState final : public GatherState<AllValue<T>> {
public:
    WhenAllState(reactor::Scheduler& sched, std::source_location where, std::size_t n)
        : GatherState<AllValue<T>>(sched, where, n) {
        if constexpr (!std::is_void_v<T>) values_.resize(n);
    }
    void watch_all(const std::vector<Future<T>>& inputs) {
        for (const auto& f : inputs) this->watch(Access::state(f));
    }
    void on_ready(StateBase& src, std::uint32_t i) override {
        auto& input = static_cast<State<T>&>(src);
        if (!this->input_done(i, input)) return;
        if constexpr (!std::is_void_v<T>) values_[i].emplace(input.take_value());
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

private:
    std::vector<std::optional<Stored<T>>> values_;
};

template <class... Ts>
class WhenAllTupleState final : public GatherState<std::tuple<Stored<Ts>...>> {
public:
    WhenAllTupleState(reactor::Scheduler& sched, std::source_location where)
        : GatherState<std::tuple<Stored<Ts>...>>(sched, where, sizeof...(Ts)) {}

    void watch_all(const Future<Ts>&... inputs) { (this->watch(Access::state(inputs)), ...); }

    void on_ready(StateBase& src, std::uint32_t i) override { dispatch(src, i, std::index_sequence_for<Ts...>{}); }

private:
    // The run-time input number -> the compile-time one, with its value type.
    template <std::size_t... I>
    void dispatch(StateBase& src, std::uint32_t i, std::index_sequence<I...>) {
        ((i == I ? on_input<I>(static_cast<State<std::tuple_element_t<I, std::tuple<Ts...>>>&>(src)) : void()), ...);
    }

    template <std::size_t I, class T>
    void on_input(State<T>& input) {
        if (!this->input_done(I, input)) return;
        std::get<I>(values_).emplace(input.take_value());
        if (!this->last_input()) return;
        this->finish_value(std::apply(
            [](auto&... v) { return std::tuple<Stored<Ts>...>(std::move(*v)...); }, values_));
    }

    std::tuple<std::optional<Stored<Ts>>...> values_;
};

template <class T>
class WhenAnyState final : public GatherState<AnyValue<T>> {
public:
    WhenAnyState(reactor::Scheduler& sched, std::source_location where, std::size_t n)
        : GatherState<AnyValue<T>>(sched, where, n) {}
    void watch_all(const std::vector<Future<T>>& inputs) {
        for (const auto& f : inputs) this->watch(Access::state(f));
    }
    void on_ready(StateBase& src, std::uint32_t i) override {
        auto& input = static_cast<State<T>&>(src);
        if (!this->input_done(i, input)) return;
        if constexpr (std::is_void_v<T>) {
            this->finish_value(std::size_t{i});
        } else {
            this->finish_value(std::size_t{i}, input.take_value());
        }
        this->cancel_inputs();
    }
};

std::exception_ptr make_timeout_error(reactor::Duration delay);

template <class T>
class TimeoutState final : public State<T> {
public:
    TimeoutState(reactor::Scheduler& sched, std::source_location where, reactor::Duration delay)
        : State<T>(sched, where, false), delay_(delay) {}

    void start(State<T>& inner) {
        this->wait_on(&inner);
        inner.add_waiter(this, 0);
        timer_ = this->scheduler().call_later(
            delay_, [self = Ref<TimeoutState>(this)] { self->on_timeout(); }, this->origin());
    }

    void on_ready(StateBase& src, std::uint32_t) override {
        auto& inner = static_cast<State<T>&>(src);
        timer_.cancel();
        if (!this->pending()) return;
        this->clear_wait();
        this->finish_from(inner);
    }

private:
    void on_timeout() {
        if (!this->pending()) return;
        Ref<StateBase> inner(this->waiting_on());
        this->clear_wait();
        this->finish_failed(make_timeout_error(delay_));
        if (inner) inner->cancel();
    }
    StateBase* cancel_step(bool& accepted) override {
        if (this->pending()) timer_.cancel();
        return State<T>::cancel_step(accepted);
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
    using V = detail::AllValue<T>;
    detail::require_valid(inputs, "when_all");
    auto* s = new detail::WhenAllState<T>(sched, where, inputs.size());
    Future<V> out = detail::Access::adopt<V>(s);
    if (inputs.empty()) {
        if constexpr (std::is_void_v<T>) {
            s->finish_value();
        } else {
            s->finish_value(std::vector<T>{});
        }
        return out;
    }
    s->watch_all(inputs);
    return out;
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
    using V = std::tuple<detail::Stored<T0>, detail::Stored<Ts>...>;
    if (!first.valid() || !(rest.valid() && ...)) throw InvalidStateError("when_all: an input is an empty Future");
    auto* s = new detail::WhenAllTupleState<T0, Ts...>(first.scheduler(), first.origin());
    Future<V> out = detail::Access::adopt<V>(s);
    s->watch_all(first, rest...);
    return out;
}

// Done as soon as the first input completes, however it completes: with
// (index, value) (just the index for Future<void>) if it succeeded; failed or
// cancelled like it otherwise. The other inputs are then cancelled. The vector
// must not be empty (std::invalid_argument).
template <class T>
[[nodiscard]] Future<detail::AnyValue<T>> when_any(const std::vector<Future<T>>& inputs,
                                                   std::source_location where = std::source_location::current()) {
    using V = detail::AnyValue<T>;
    if (inputs.empty()) throw std::invalid_argument("when_any: no inputs: it would never complete");
    detail::require_valid(inputs, "when_any");
    auto* s = new detail::WhenAnyState<T>(inputs.front().scheduler(), where, inputs.size());
    Future<V> out = detail::Access::adopt<V>(s);
    s->watch_all(inputs);
    return out;
}

// Completes like `fut` if it completes within `delay`; otherwise fails with
// TimeoutError and cancels `fut`. Cancelling the result cancels `fut` and the timer.
template <class T, class Rep, class Period>
[[nodiscard]] Future<T> with_timeout(const Future<T>& fut, std::chrono::duration<Rep, Period> delay,
                                     std::source_location where = std::source_location::current()) {
    auto& inner = detail::Access::state(fut);
    auto* s = new detail::TimeoutState<T>(inner.scheduler(), where, std::chrono::ceil<reactor::Duration>(delay));
    Future<T> out = detail::Access::adopt<T>(s);
    s->start(inner);
    return out;
}

}  // namespace futures
