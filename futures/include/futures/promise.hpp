// SPDX-License-Identifier: MIT
// futures::Promise<T>: the producer end of a future (Seastar's promise,
// std::promise on a loop). Whoever will complete a future later (a
// connection's reads, a child's exit watch, your own socket type) keeps the
// Promise, hands the Future to its consumer, and completes it through the
// Promise:
//
//   futures::Promise<int> p(sched);      // names this line
//   futures::Future<int> f = p.get_future();
//   ...
//   p.set_value(42);                     // later, from a callback
//
// The line. A Promise is made with a std::source_location (by default the
// line that makes it) and its future carries it as its origin(): that line
// is what futures::all_tasks() ("waiting on the Future created at ..."), a
// "Future exception was never retrieved" report and error messages name.
// The library's own futures (Stream::read, drain, Process::wait ...) take
// the caller's line as a trailing default argument and make their Promise
// with it, so a report names the user's line, never one inside the library.
//
// A broken promise is a cancellation. A Promise destroyed (or assigned over)
// while its future is still pending completes that future as CANCELLED with
// a futures::BrokenPromise (a CancelledError) whose what() names the line:
// "broken promise: the stream read created at app.cpp:42 will never
// complete". Cancelled rather than failed, because a dropped producer is
// the end of a conversation (a stream closed, a loop shut down), not an
// error of the consumer's: the consumer sees it as any cancellation (a
// task's result() throws it, then-chains skip their function), and nothing
// is reported as an exception nobody retrieved. A consumer that wants to
// tell it apart catches BrokenPromise before CancelledError.
//
// Not registered with the loop. Unlike Future(sched), a Promise's future is
// not listed by Scheduler::live() and not cancelled by Scheduler::close():
// what keeps it alive is its producer (a connection, a child watch, a pool
// job), which the loop knows and ends, dropping the Promise; and a task
// waiting on it names its line. So a Promise must be held by something that
// ends with the loop, or be completed or dropped before the Scheduler is
// destroyed (as any future, it must not outlive its Scheduler).
//
// Completing. set_value / set_exception / cancel complete the future once:
// a second call throws InvalidStateError. If the consumer cancelled the
// future first, they do nothing and return false (is_pending() says
// whether anybody can still get the value). As for every future, the
// future's callbacks are scheduled on the loop, never run inside set_value.
//
// Movable, not copyable; an empty Promise (default-constructed or moved
// from) throws InvalidStateError from every member but valid(), is_pending()
// and assignment. Loop thread only (debug mode refuses and reports a call
// from another thread: docs/cores.md).
#pragma once

#include <exception>
#include <source_location>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/errors.hpp"
#include "futures/future.hpp"

namespace futures {

namespace detail {
// Completes `state` (pending) as cancelled with a BrokenPromise naming
// `what` and the state's origin. Never throws.
REACTOR_API void break_promise(StateBase& state, const char* what) noexcept;
// Throws the InvalidStateError of a misused Promise.
[[noreturn]] REACTOR_API void throw_promise_error(const char* operation, const char* problem, const StateBase* state,
                                      const char* what);
}  // namespace detail

template <class T>
class Promise {
    static_assert(std::is_void_v<T> || (std::is_object_v<T> && !std::is_const_v<T> && !std::is_array_v<T>),
                  "Promise<T>: T must be void or a non-const object type");

public:
    using value_type = T;

    // An empty promise (see the top of this file).
    Promise() noexcept = default;

    // A promise of a new pending future on `sched`, whose origin is `where`.
    // `what` names the future in the broken-promise message (a string
    // literal: it is not copied), e.g. "stream read".
    explicit Promise(reactor::Scheduler& sched, std::source_location where = std::source_location::current(),
                     const char* what = "future")
        : state_(StateRef::adopt(new detail::State<T>(sched, where, false))), what_(what ? what : "future") {}

    Promise(const Promise&) = delete;
    Promise& operator=(const Promise&) = delete;
    Promise(Promise&& other) noexcept
        : state_(std::move(other.state_)),
          what_(other.what_),
          future_taken_(std::exchange(other.future_taken_, false)),
          satisfied_(std::exchange(other.satisfied_, false)) {}
    // Breaks this promise first if its future is still pending.
    Promise& operator=(Promise&& other) noexcept {
        if (this != &other) {
            break_if_pending();
            state_ = std::move(other.state_);
            what_ = other.what_;
            future_taken_ = std::exchange(other.future_taken_, false);
            satisfied_ = std::exchange(other.satisfied_, false);
        }
        return *this;
    }
    // Breaks the promise if its future is still pending (see the top of this file).
    ~Promise() { break_if_pending(); }

    bool valid() const noexcept { return static_cast<bool>(state_); }
    // The future is still pending: neither completed through this promise
    // nor cancelled by its consumer. False for an empty promise.
    bool is_pending() const noexcept { return state_ && state_->pending(); }
    // The line the future names (its origin()).
    std::source_location where() const { return state("where").origin(); }
    reactor::Scheduler& scheduler() const { return state("scheduler").scheduler(); }

    // The future, once (InvalidStateError the second time); before or after
    // the promise is completed.
    [[nodiscard]] Future<T> get_future() {
        // Not checked for the thread (debug mode): taking the future acts on
        // nothing the loop runs, and it is what a handle that outlived its
        // loop does to hand out a future that says so (Process::wait after
        // the Scheduler is gone: docs/scheduler.md, "What outlives what"), when
        // reading the loop's debug flag would read freed memory.
        detail::State<T>& s = state("get_future");
        if (future_taken_) detail::throw_promise_error("get_future", "the future was already taken", &s, what_);
        future_taken_ = true;
        return detail::Access::share(&s);
    }

    // Completes the future with a value (nothing, for Promise<void>). False
    // if its consumer had cancelled it (the value is dropped).
    template <class... A>
        requires(std::is_void_v<T> ? sizeof...(A) == 0 : std::is_constructible_v<T, A && ...>)
    bool set_value(A&&... args) {
        detail::State<T>& s = settle("set_value", "Promise::set_value");
        if (!s.pending()) return false;
        s.finish_value(std::forward<A>(args)...);
        return true;
    }

    // Fails the future with `error` (cancels it, for a CancelledError).
    // False if its consumer had cancelled it. A null error throws
    // std::invalid_argument.
    bool set_exception(std::exception_ptr error) {
        if (!error) throw std::invalid_argument("Promise::set_exception: null exception_ptr");
        detail::State<T>& s = settle("set_exception", "Promise::set_exception");
        if (!s.pending()) return false;
        s.finish_exception(std::move(error));
        return true;
    }
    template <class E>
        requires std::is_base_of_v<std::exception, std::remove_cvref_t<E>>
    bool set_exception(E&& error) {
        return set_exception(std::make_exception_ptr(std::forward<E>(error)));
    }

    // Cancels the future (a plain CancelledError naming its line), as its
    // consumer could: the producer gives up on purpose. False if it was no
    // longer pending.
    bool cancel() { return settle("cancel", "Promise::cancel").cancel(); }

private:
    using StateRef = detail::Ref<detail::State<T>>;

    detail::State<T>& state(const char* operation) const {
        if (!state_) detail::throw_promise_error(operation, "empty Promise (default-constructed or moved-from)",
                                                 nullptr, what_);
        return *state_;
    }
    // The state, for the one completion this promise may make.
    detail::State<T>& settle(const char* operation, const char* member) {
        detail::State<T>& s = state(operation);
        check_thread(s, member);
        if (satisfied_) detail::throw_promise_error(operation, "the promise was already completed", &s, what_);
        satisfied_ = true;
        return s;
    }
    // Debug mode: refused from a thread other than the loop's, naming the
    // promise's line. Only while the future is pending: a complete one's
    // loop may be gone.
    static void check_thread(detail::State<T>& s, const char* member) {
        if (s.pending()) s.check_thread(member, nullptr, "promise");
    }
    void break_if_pending() noexcept {
        if (state_ && state_->pending()) detail::break_promise(*state_, what_);
    }

    StateRef state_;
    const char* what_ = "future";
    bool future_taken_ = false;
    bool satisfied_ = false;  // set_value, set_exception or cancel was called
};

}  // namespace futures
