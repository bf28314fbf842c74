// SPDX-License-Identifier: MIT
// futures::detail::LoopState: the one state behind repeat, keep_doing,
// do_until and do_for_each (futures/repeat.hpp and its neighbours).
//
// A loop is driven from the ready queue, never by recursion: each turn takes
// steps in a `for`, and a step whose future is already complete is consumed on
// the spot (no loop iteration per step, Seastar's fast path); a pending one is
// waited on through the state's link, whose wake-up starts the next turn. A
// turn takes at most kLoopStepsPerTurn steps, then queues the next turn behind
// whatever else is ready, so a loop over ready futures cannot starve I/O.
// A turn allocates nothing: the step's future is the user's, the link is a
// member, and the queued turn fits a Callback's inline buffer.
// Loop thread only.
#pragma once

#include <exception>
#include <optional>
#include <source_location>
#include <type_traits>
#include <utility>
#include <variant>

#include <reactor/scheduler.hpp>

#include "futures/future.hpp"

namespace futures::detail {

// How many steps a loop takes in one turn of the Scheduler before it queues
// the rest behind the other ready callbacks: enough that the queueing is a
// small part of a step over a ready future, few enough that a busy loop
// delays I/O by no more than a handful of its own steps.
inline constexpr unsigned kLoopStepsPerTurn = 64;

// What a loop's step returned: a Future<X>, or X itself (void included),
// which counts as a step already done.
template <class R>
struct StepOf {
    using value = R;
    static constexpr bool is_future = false;
};
template <class X>
struct StepOf<Future<X>> {
    using value = X;
    static constexpr bool is_future = true;
};

// The ready-queue entry that runs a loop's next turn. If the Scheduler
// destroys it unrun (close(), ~Scheduler), the loop can never go on: its
// function is destroyed unrun and its future cancelled, as a task's would be.
template <class S>
class Resume {
public:
    using relocatable = void;  // one counted pointer: moved as bytes
    explicit Resume(S* state) noexcept : state_(state) {}
    Resume(Resume&&) noexcept = default;
    Resume& operator=(Resume&&) = delete;
    ~Resume() {
        if (state_) state_->wakeup_lost();
    }
    void operator()() {
        Ref<S> state = std::move(state_);
        state->turn();
    }

private:
    Ref<S> state_;
};

// A sequential loop. Body (a plain class the combinator defines) says what
// the loop is:
//   bool more();                  checked before each step: false ends the loop, done
//   R step();                     one call of the user's function: Future<X>, X or void
//   bool proceed(Stored<X>&&);    the step's value: false ends the loop, done
// Any of them may throw: the loop then fails (is cancelled, for a CancelledError).
template <class Body>
class LoopState final : public WaitingState<void> {
    using R = std::remove_cvref_t<decltype(std::declval<Body&>().step())>;
    using X = typename StepOf<R>::value;

public:
    LoopState(reactor::Scheduler& sched, std::source_location where, Body&& body)
        : WaitingState<void>(sched, where, false), body_(std::in_place, std::move(body)) {}

    // The first step runs from the loop, never inside the call that made the loop.
    void start() { schedule(); }

    // One turn: steps until one must be waited for, the loop ends, or the
    // turn's budget is spent (then the next turn is queued).
    void turn() {
        for (unsigned n = 0; n < kLoopStepsPerTurn; ++n) {
            if (!advance()) return;
        }
        schedule();
    }

private:
    void schedule() { scheduler().call_soon(Resume<LoopState>(this), origin()); }

    // Takes one step. True if the next may follow at once; false if the loop
    // now waits on the step's future through link_, or is over.
    bool advance() {
        if (!pending()) return drop_body();  // cancelled between two turns
        try {
            if (!body_->more()) return succeed();
            if constexpr (StepOf<R>::is_future) {
                Future<X> next = body_->step();
                State<X>& s = Access::state(next);  // an empty future: InvalidStateError
                if (!pending()) {  // the step cancelled the loop: what it returned goes too
                    s.cancel();
                    return drop_body();
                }
                if (s.pending()) {
                    link_.template connect<&LoopState::on_step>(s);
                    return false;
                }
                return take(s);
            } else if constexpr (std::is_void_v<X>) {
                body_->step();
                return proceed(std::monostate{});
            } else {
                return proceed(Stored<X>(body_->step()));
            }
        } catch (...) {
            return fail(std::current_exception());
        }
    }

    // The awaited step completed: consume it, then carry on in a fresh turn.
    void on_step(State<X>& s) {
        if (!pending()) {  // cancelled while it waited
            drop_body();
            return;
        }
        bool go_on = false;
        try {
            go_on = take(s);
        } catch (...) {
            fail(std::current_exception());
            return;
        }
        if (go_on) turn();
    }

    bool take(State<X>& s) {
        if (s.status() != Status::done) {  // its error (or cancellation) ends the loop
            body_.reset();
            finish_like(s);
            return false;
        }
        return proceed(s.take_value());
    }

    bool proceed(Stored<X>&& value) { return body_->proceed(std::move(value)) || succeed(); }

    bool succeed() {
        body_.reset();
        finish_value();
        return false;
    }
    bool fail(std::exception_ptr error) {
        body_.reset();
        if (pending()) {
            finish_exception(std::move(error));
        } else {
            report_orphan_exception(*this, std::move(error));
        }
        return false;
    }
    bool drop_body() {
        body_.reset();
        return false;
    }

    void destroy_payload() noexcept override { body_.reset(); }

    std::optional<Body> body_;  // the user's functions (and range): gone as soon as the loop ends
};

}  // namespace futures::detail
