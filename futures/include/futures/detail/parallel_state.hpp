// SPDX-License-Identifier: MIT
// futures::detail::ParallelState: the one state behind parallel_for_each and
// map_reduce (futures/parallel_for_each.hpp, futures/map_reduce.hpp).
//
// A fixed set of links, one per step allowed in flight, made up front and
// never moved (the awaited futures' waiter lists point at them): a link whose
// step completes takes the next element, so never more than that many steps
// are in flight. Steps are started from the ready queue in turns, as in
// LoopState (futures/detail/loop_state.hpp): a step whose future is already
// complete is consumed on the spot, and a turn takes at most
// kLoopStepsPerTurn steps. The combinators' policy (futures/combinators.hpp):
// the first step to fail or be cancelled decides, and the steps still in
// flight are then cancelled; cancelling the loop cancels them too.
// Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <source_location>
#include <span>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <reactor/scheduler.hpp>

#include "futures/detail/loop_state.hpp"
#include "futures/future.hpp"

namespace futures::detail {

// Body (a plain class the combinator defines):
//   using result_type = T;          what the loop's future holds (void or a value)
//   bool more();                    there is another element: false once the range is used up
//   R step();                       the user's function on the next element: Future<X>, X or void
//   void take(Stored<X>&&);         a step's value, in the order the steps complete
//   T result();                     the final value, once every step is done (not for void)
template <class Body>
class ParallelState final : public State<typename Body::result_type> {
    using T = typename Body::result_type;
    using R = std::remove_cvref_t<decltype(std::declval<Body&>().step())>;
    using X = typename StepOf<R>::value;

public:
    ParallelState(reactor::Scheduler& sched, std::source_location where, Body&& body, std::size_t in_flight)
        : State<T>(sched, where, false), body_(std::in_place, std::move(body)) {
        links_.reserve(in_flight);
        idle_.reserve(in_flight);
        for (std::size_t i = 0; i < in_flight; ++i) {
            links_.emplace_back(*this);
            idle_.push_back(static_cast<std::uint32_t>(in_flight - 1 - i));
        }
    }

    void start() { schedule(); }

    // A queued turn (Resume).
    void turn() {
        scheduled_ = false;
        steps();
    }

private:
    // Starts steps on idle links until none is idle, the range is used up,
    // the loop is over, or the turn's budget is spent (then a turn is queued).
    void steps() {
        for (unsigned n = 0; n < kLoopStepsPerTurn; ++n) {
            if (!this->pending()) return drop_body();
            if (idle_.empty()) return;  // a completing step starts the next turn
            if (exhausted_) return finish_if_idle();
            if (!launch_next()) return;
        }
        schedule();
    }

    void schedule() {
        if (scheduled_) return;
        scheduled_ = true;
        this->scheduler().call_soon(Resume<ParallelState>(this), this->origin());
    }

    // Starts the next element on an idle link (or finds the range used up).
    // False if the loop is over.
    bool launch_next() {
        try {
            if (!body_->more()) {
                exhausted_ = true;
                return true;
            }
            if constexpr (StepOf<R>::is_future) {
                Future<X> next = body_->step();
                State<X>& s = Access::state(next);  // an empty future: InvalidStateError
                if (!this->pending()) {  // the step cancelled the loop
                    s.cancel();
                    drop_body();
                    return false;
                }
                if (s.pending()) {
                    const std::uint32_t i = idle_.back();
                    links_[i].template connect<&ParallelState::on_step>(s);
                    idle_.pop_back();
                    return true;
                }
                return take(s);
            } else if constexpr (std::is_void_v<X>) {
                body_->step();
                body_->take(std::monostate{});
                return true;
            } else {
                body_->take(Stored<X>(body_->step()));
                return true;
            }
        } catch (...) {
            fail(std::current_exception());
            return false;
        }
    }

    void on_step(Link& link, State<X>& s) {
        idle_.push_back(static_cast<std::uint32_t>(&link - links_.data()));
        if (!this->pending()) return drop_body();  // decided or cancelled meanwhile
        try {
            if (!take(s)) return;
        } catch (...) {
            fail(std::current_exception());
            return;
        }
        steps();
    }

    // A complete step. False if it ended the loop (its error decides).
    bool take(State<X>& s) {
        if (s.status() != Status::done) {
            drop_body();
            this->finish_like(s);
            this->cancel_upstream();
            return false;
        }
        body_->take(s.take_value());
        return true;
    }

    void finish_if_idle() {
        if (idle_.size() != links_.size()) return;  // steps still in flight: the last one comes back here
        try {
            if constexpr (std::is_void_v<T>) {
                drop_body();
                this->finish_value();
            } else {
                T value = body_->result();
                drop_body();
                this->finish_value(std::move(value));
            }
        } catch (...) {
            fail(std::current_exception());
        }
    }

    void fail(std::exception_ptr error) {
        drop_body();
        if (this->pending()) {
            this->finish_exception(std::move(error));
            this->cancel_upstream();
        } else {
            report_orphan_exception(*this, std::move(error));
        }
    }
    void drop_body() noexcept { body_.reset(); }

    std::span<Link> links() noexcept final { return links_; }
    void destroy_payload() noexcept override { body_.reset(); }

    std::optional<Body> body_;
    std::vector<Link> links_;           // one per step allowed in flight; never reallocated
    std::vector<std::uint32_t> idle_;   // links waiting on nothing: a stack, lowest index on top
    bool exhausted_ = false;            // more() said no
    bool scheduled_ = false;            // a turn is queued
};

}  // namespace futures::detail
