// SPDX-License-Identifier: MIT
// futures::Future<T>: a shared handle to one result slot bound to a Scheduler.
//
// Copying a Future copies the handle (like shared_ptr), never the value; a const
// handle still completes and reads the shared state. Loop thread only (debug
// mode refuses and reports a call from another thread: docs/cores.md).
// Guarantee: a done-callback or continuation never runs synchronously, not even
// one added to an already-done future: it is scheduled with call_soon, in
// registration order, so a million-long chain never grows the stack.
// What a future may do once its Scheduler is closed or destroyed:
// docs/scheduler.md, "What outlives what".
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <source_location>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

#include <reactor/callback.hpp>
#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/detail/ref.hpp"
#include "futures/errors.hpp"

namespace futures {

// Where a future is in its life. A future leaves `pending` once and never again:
//
//                    set_result              +-----------+
//              +---------------------------> |   done    |  result() returns the value
//              |                             +-----------+
//   +---------+      set_exception           +-----------+
//   | pending | ---------------------------> |  failed   |  result() rethrows; if nobody ever
//   +---------+                              +-----------+  looks, reported when the state dies
//              |   cancel(), or completed    +-----------+
//              +---------------------------> | cancelled |  result() throws CancelledError
//                  with a CancelledError     +-----------+
//
// Every transition schedules the done-callbacks with call_soon, in registration
// order. A second transition is a contract violation (InvalidStateError).
enum class Status : std::uint8_t { pending, done, failed, cancelled };
REACTOR_API std::string_view to_string(Status status) noexcept;

// Names one callback registered with add_done_callback, for remove_done_callback
// on the same future.
struct CallbackId {
    std::uint32_t index = UINT32_MAX;
};

template <class T>
class Future;

namespace detail {
class StateBase;
template <class T>
class State;
template <class T>
class SettableState;

// The library's own back door into Future: raw state access and adoption.
struct Access {
    template <class T>
    static State<T>& state(const Future<T>& f) {
        return f.state();
    }
    // Wraps a freshly created state, taking over its initial reference.
    template <class T>
    static Future<T> adopt(State<T>* s) noexcept {
        Future<T> f;
        f.state_ = Ref<State<T>>::adopt(s);
        return f;
    }
    // A strong reference to the state behind any future (null for an empty one).
    template <class T>
    static Ref<StateBase> base(const Future<T>& f) noexcept {
        return Ref<StateBase>(f.state_.get());
    }
    // A new handle to a live state.
    template <class T>
    static Future<T> share(State<T>* s) noexcept {
        Future<T> f;
        f.state_ = Ref<State<T>>(s);
        return f;
    }
};

template <class T>
struct IsFuture : std::false_type {};
template <class T>
struct IsFuture<Future<T>> : std::true_type {};
}  // namespace detail

template <class T>
inline constexpr bool is_future_v = detail::IsFuture<std::remove_cvref_t<T>>::value;

template <class T>
class Future {
    static_assert(std::is_void_v<T> || (std::is_object_v<T> && !std::is_const_v<T> && !std::is_array_v<T>),
                  "Future<T>: T must be void or a non-const object type");

public:
    using value_type = T;

    // An empty handle: every operation but valid() and assignment throws InvalidStateError.
    Future() noexcept = default;

    // A new pending future, to be completed by hand with set_result/set_exception.
    // `where` names it in error reports ("exception was never retrieved").
    explicit Future(reactor::Scheduler& sched, std::source_location where = std::source_location::current())
        : state_(StateRef::adopt(new detail::SettableState<T>(sched, where))) {}

    bool valid() const noexcept { return static_cast<bool>(state_); }
    reactor::Scheduler& scheduler() const { return state().scheduler(); }
    std::source_location origin() const { return state().origin(); }

    Status status() const { return state().status(); }
    bool done() const { return status() != Status::pending; }  // done, failed or cancelled
    bool failed() const { return status() == Status::failed; }
    bool cancelled() const { return status() == Status::cancelled; }

    // ---- completing (only futures made with Future(sched); InvalidStateError
    //      if already complete, or if the future completes itself) ----
    void set_result() const
        requires std::is_void_v<T>
    {
        detail::State<T>& s = state();
        s.require_settable("set_result");
        s.check_thread("Future::set_result", nullptr);
        s.finish_value();
    }
    template <class U = T>
        requires(!std::is_void_v<T> && std::is_constructible_v<T, U &&>)
    void set_result(U&& value) const {
        detail::State<T>& s = state();
        s.require_settable("set_result");
        s.check_thread("Future::set_result", nullptr);
        s.finish_value(std::forward<U>(value));
    }
    // A CancelledError makes the future cancelled rather than failed.
    void set_exception(std::exception_ptr error) const {
        if (!error) throw std::invalid_argument("set_exception: null exception_ptr");
        detail::State<T>& s = state();
        s.require_settable("set_exception");
        s.check_thread("Future::set_exception", nullptr);
        s.finish_exception(std::move(error));
    }
    template <class E>
        requires std::is_base_of_v<std::exception, std::remove_cvref_t<E>>
    void set_exception(E&& error) const {
        set_exception(std::make_exception_ptr(std::forward<E>(error)));
    }

    // Cancels a pending future: it becomes cancelled, its callbacks are scheduled,
    // and whatever it waits on (the future a continuation waits for, a timer, an
    // fd wait, a task's awaited future) is cancelled too. A task only receives the
    // request: it is resumed with CancelledError and decides. Returns false if the
    // future was already complete (then nothing changes).
    bool cancel() const {
        detail::State<T>& s = state();
        if (s.pending()) s.check_thread("Future::cancel", nullptr);  // a complete one does nothing: not checked
        return s.cancel();
    }

    // ---- reading ----
    // The value (a reference into the shared state, valid while any handle lives).
    // Rethrows the stored exception if failed; CancelledError if cancelled;
    // InvalidStateError while pending.
    std::add_lvalue_reference_t<T> result() const {
        state().check_result();
        if constexpr (!std::is_void_v<T>) return state().value();
    }
    // The stored exception (null if done); marks it retrieved. CancelledError if
    // cancelled, InvalidStateError while pending.
    std::exception_ptr exception() const { return state().exception(); }

    // ---- callbacks ----
    // f() or f(Future<T>&), scheduled with call_soon once the future is complete
    // (at once if it already is), in registration order; never called inline.
    // An exception it throws goes to the Scheduler's exception handler, naming `where`.
    template <class F>
    CallbackId add_done_callback(F&& f, std::source_location where = std::source_location::current()) const {
        using Fn = std::decay_t<F>;
        detail::State<T>& s = state();
        s.check_thread("Future::add_done_callback", &where);
        if constexpr (std::is_invocable_v<Fn&, Future&>) {
            // A plain pointer: the callback runs while the state is kept alive for
            // it, and a strong reference here would be a cycle while pending.
            return s.add_callback(
                [st = &s, fn = Fn(std::forward<F>(f))]() mutable {
                    Future self = detail::Access::share(st);
                    fn(self);
                },
                where);
        } else {
            static_assert(std::is_invocable_v<Fn&>, "add_done_callback: f must be callable as f() or f(Future<T>&)");
            return s.add_callback(std::forward<F>(f), where);
        }
    }
    // True if the callback had not started yet: it will not run.
    bool remove_done_callback(CallbackId id) const noexcept { return state_ && state_->remove_callback(id); }

    // ---- chaining (futures/then.hpp) ----
    // f(value) (f() for void) returning U or Future<U> -> Future<U>, completed with
    // f's result (a returned future is followed: flattened). If this future fails
    // or is cancelled, f is skipped and the result fails or is cancelled alike.
    // An exception thrown by f fails the result. Cancelling the result cancels
    // what it waits on. f receives the value as an rvalue: moved if this
    // continuation is its only reader, else a copy; or as T& if f takes T&.
    template <class F>
    [[nodiscard]] auto then(F&& f, std::source_location where = std::source_location::current()) const;

    // f(const E&) for the error type E it declares (or f(std::exception_ptr) for
    // any error), returning T or Future<T> -> Future<T>: a value passes through,
    // a matching error is replaced by f's result, other errors and cancellation
    // pass through.
    template <class F>
    [[nodiscard]] Future<T> catch_error(F&& f, std::source_location where = std::source_location::current()) const;

    // f() returning void or Future<void>, run however this future ends (also when
    // it was cancelled); the result completes like this future once f (and the
    // future it returned) is done, or fails with f's own error.
    template <class F>
    [[nodiscard]] Future<T> finally(F&& f, std::source_location where = std::source_location::current()) const;

    friend bool operator==(const Future& a, const Future& b) noexcept { return a.state_.get() == b.state_.get(); }

private:
    friend struct detail::Access;
    using StateRef = detail::Ref<detail::State<T>>;

    detail::State<T>& state() const {
        if (!state_) throw InvalidStateError("futures: empty Future (default-constructed or moved-from)");
        return *state_;
    }

    StateRef state_;
};

}  // namespace futures

// The machinery behind Future, in dependency order (each needs Status and
// Future, above): the state, the link between states, the launch helper, then().
#define FUTURES_FUTURE_HPP_BODY_DONE
#include "futures/detail/state.hpp"
#include "futures/detail/settable_state.hpp"
#include "futures/detail/link.hpp"
#include "futures/detail/launch.hpp"
#include "futures/then.hpp"
