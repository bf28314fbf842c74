// SPDX-License-Identifier: MIT
// futures/then.hpp: the continuation states behind then(), catch_error() and finally().
//
// Each continuation is exactly one allocation: the derived future's state, which
// also holds the user's function and the Link by which it waits on its source
// (woken from the ready queue on a fresh stack; cancellation travels up it).
// The same link then follows the future the function returned, if any.
// Loop thread only. Included by futures/future.hpp.
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include <reactor/export.hpp>

#include "futures/future.hpp"

namespace futures::detail {

// A function's result R -> the value type U of the derived Future<U>
// (a returned Future<U> is flattened).
template <class R>
struct Unwrap {
    using type = R;
    static constexpr bool is_future = false;
};
template <class U>
struct Unwrap<Future<U>> {
    using type = U;
    static constexpr bool is_future = true;
};

// then() passes the value as an rvalue when f accepts one, else as T&.
template <class F, class T>
constexpr bool then_invocable() {
    if constexpr (std::is_void_v<T>) {
        return std::is_invocable_v<F&>;
    } else {
        return std::is_invocable_v<F&, T&&> || std::is_invocable_v<F&, T&>;
    }
}

template <class F, class T>
decltype(auto) call_with_value(F& f, State<T>& src) {
    if constexpr (std::is_void_v<T>) {
        return std::invoke(f);
    } else if constexpr (std::is_invocable_v<F&, T&&>) {
        return std::invoke(f, src.take_value());
    } else {
        return std::invoke(f, src.value());
    }
}

template <class F, class T>
using ThenResult = decltype(call_with_value(std::declval<F&>(), std::declval<State<T>&>()));
template <class F, class T>
using ThenValue = typename Unwrap<std::remove_cvref_t<ThenResult<F, T>>>::type;

// The error type a catch_error handler declares: its (only) parameter's.
template <class F>
struct HandlerArg : HandlerArg<decltype(&F::operator())> {};
template <class R, class A>
struct HandlerArg<R (*)(A)> {
    using type = A;
};
template <class C, class R, class A>
struct HandlerArg<R (C::*)(A)> {
    using type = A;
};
template <class C, class R, class A>
struct HandlerArg<R (C::*)(A) const> {
    using type = A;
};
template <class C, class R, class A>
struct HandlerArg<R (C::*)(A) noexcept> {
    using type = A;
};
template <class C, class R, class A>
struct HandlerArg<R (C::*)(A) const noexcept> {
    using type = A;
};

// What a catch_error handler returns (it takes std::exception_ptr, or the error it declares).
template <class F, bool kCatchAll = std::is_invocable_v<F&, std::exception_ptr>>
struct CatchResult {
    using type = std::invoke_result_t<F&, std::exception_ptr>;
};
template <class F>
struct CatchResult<F, false> {
    using type = std::invoke_result_t<F&, typename HandlerArg<F>::type>;
};

// An exception a continuation threw after its future was completed some other
// way (it was cancelled from inside the continuation): nobody else can see it.
REACTOR_API void report_orphan_exception(StateBase& out, std::exception_ptr error) noexcept;

// Calls `call()` and completes `out` with what it returns: nothing, a value,
// or a future to follow through `link` (out's own). An exception it throws fails `out`.
template <class U, class Call>
void complete_with(State<U>& out, Link& link, Call&& call) {
    using R = decltype(call());
    try {
        if constexpr (Unwrap<std::remove_cvref_t<R>>::is_future) {
            auto&& inner = call();
            if (!out.pending()) return;
            State<U>& in = Access::state(inner);  // an empty future: InvalidStateError
            if (&in == &out) throw InvalidStateError("futures: a continuation returned its own future");
            link.connect<&State<U>::adopt>(in);
        } else if constexpr (std::is_void_v<R>) {
            call();
            if (out.pending()) out.finish_value();
        } else {
            auto&& value = call();
            if (out.pending()) out.finish_value(std::forward<decltype(value)>(value));
        }
    } catch (...) {
        if (out.pending()) {
            out.finish_exception(std::current_exception());
        } else {
            report_orphan_exception(out, std::current_exception());
        }
    }
}

// then(f): f(value) once the source is done; an error or cancellation skips f.
template <class T, class F>
class ThenState final : public WaitingState<ThenValue<F, T>> {
    using U = ThenValue<F, T>;

public:
    template <class G>
    ThenState(reactor::Scheduler& sched, std::source_location where, G&& f)
        : WaitingState<U>(sched, where, false), f_(std::in_place, std::forward<G>(f)) {}

    void start(State<T>& src) { this->link_.template connect<&ThenState::fire>(src); }

private:
    void fire(State<T>& src) {
        if (this->pending()) {  // else cancelled before src completed: f never runs
            if (src.status() == Status::done) {
                complete_with(*this, this->link_, [&]() -> decltype(auto) { return call_with_value(*f_, src); });
            } else {
                this->finish_like(src);  // skip f: the error or cancellation flows on
            }
        }
        f_.reset();  // its captures go now, not when the last handle does
    }

    void destroy_payload() noexcept override { f_.reset(); }

    std::optional<F> f_;
};

// catch_error(f): f(error) if the source failed with an error f takes; the rest passes through.
template <class T, class F>
class CatchState final : public WaitingState<T> {
    static constexpr bool kCatchAll = std::is_invocable_v<F&, std::exception_ptr>;

public:
    template <class G>
    CatchState(reactor::Scheduler& sched, std::source_location where, G&& f)
        : WaitingState<T>(sched, where, false), f_(std::in_place, std::forward<G>(f)) {}

    void start(State<T>& src) { this->link_.template connect<&CatchState::fire>(src); }

private:
    void fire(State<T>& src) {
        if (this->pending()) {
            if (src.status() == Status::failed) {
                handle(src);
            } else {
                this->finish_from(src);  // a value or a cancellation passes through
            }
        }
        f_.reset();
    }

    void handle(State<T>& src) {
        if constexpr (kCatchAll) {
            src.mark_retrieved();
            complete_with(*this, this->link_, [&]() -> decltype(auto) { return std::invoke(*f_, src.error()); });
        } else {
            using E = std::remove_cvref_t<typename HandlerArg<F>::type>;
            bool matched = false;
            try {
                std::rethrow_exception(src.error());
            } catch (E& e) {
                matched = true;
                src.mark_retrieved();
                complete_with(*this, this->link_, [&]() -> decltype(auto) { return std::invoke(*f_, e); });
            } catch (...) {
            }
            if (!matched) this->finish_like(src);
        }
    }

    void destroy_payload() noexcept override { f_.reset(); }

    std::optional<F> f_;
};

// finally(f): f() however the source ends; then, if f returned a future, that
// future (through the same link) before completing like the source.
template <class T, class F>
class FinallyState final : public WaitingState<T> {
    using R = std::remove_cvref_t<std::invoke_result_t<F&>>;

public:
    template <class G>
    FinallyState(reactor::Scheduler& sched, std::source_location where, G&& f)
        : WaitingState<T>(sched, where, false), f_(std::in_place, std::forward<G>(f)) {}

    void start(State<T>& src) { this->link_.template connect<&FinallyState::fire>(src); }

private:
    // Runs f however src ended, even if this future was cancelled meanwhile.
    void fire(State<T>& src) {
        try {
            if constexpr (is_future_v<R>) {
                R cleanup = std::invoke(*f_);
                f_.reset();
                auto& c = Access::state(cleanup);
                source_ = Ref<State<T>>(&src);  // src is complete: no cycle
                this->link_.template connect<&FinallyState::after_cleanup>(c);
                return;
            } else {
                std::invoke(*f_);
            }
        } catch (...) {
            f_.reset();
            if (this->pending()) {
                this->finish_exception(std::current_exception());
            } else {
                report_orphan_exception(*this, std::current_exception());
            }
            return;
        }
        f_.reset();
        if (this->pending()) this->finish_from(src);
    }

    void after_cleanup(StateBase& cleanup) {
        Ref<State<T>> src = std::move(source_);
        if (!this->pending()) return;
        if (cleanup.status() != Status::done) {
            this->finish_like(cleanup);  // the cleanup's own failure wins
        } else {
            this->finish_from(*src);
        }
    }

    void destroy_payload() noexcept override {
        f_.reset();
        source_ = {};
    }

    std::optional<F> f_;
    Ref<State<T>> source_;  // while the cleanup future runs
};

}  // namespace futures::detail

namespace futures {

template <class T>
template <class F>
auto Future<T>::then(F&& f, std::source_location where) const {
    using Fn = std::decay_t<F>;
    static_assert(detail::then_invocable<Fn, T>(),
                  "then(f): f must be callable with the value (as T&&, T or T&), or with nothing for Future<void>");
    detail::State<T>& src = state();
    src.check_thread("Future::then", &where);
    return detail::launch<detail::ThenState<T, Fn>>(src.scheduler(), where, std::forward<F>(f)).start(src);
}

template <class T>
template <class F>
Future<T> Future<T>::catch_error(F&& f, std::source_location where) const {
    using Fn = std::decay_t<F>;
    using R = typename detail::CatchResult<Fn>::type;
    using V = std::remove_cvref_t<R>;
    static_assert(std::is_same_v<V, Future<T>> || (std::is_void_v<T> && std::is_void_v<V>) ||
                      (!std::is_void_v<T> && std::is_convertible_v<R, T>),
                  "catch_error(f): f must return T (something convertible to it) or Future<T>");
    detail::State<T>& src = state();
    src.check_thread("Future::catch_error", &where);
    return detail::launch<detail::CatchState<T, Fn>>(src.scheduler(), where, std::forward<F>(f)).start(src);
}

template <class T>
template <class F>
Future<T> Future<T>::finally(F&& f, std::source_location where) const {
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn&>, "finally(f): f must be callable with no arguments");
    using R = std::remove_cvref_t<std::invoke_result_t<Fn&>>;
    static_assert(std::is_void_v<R> || is_future_v<R>, "finally(f): f must return void or a Future");
    detail::State<T>& src = state();
    src.check_thread("Future::finally", &where);
    return detail::launch<detail::FinallyState<T, Fn>>(src.scheduler(), where, std::forward<F>(f)).start(src);
}

}  // namespace futures
