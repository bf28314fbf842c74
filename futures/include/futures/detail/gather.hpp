// SPDX-License-Identifier: MIT
// futures::detail::GatherState: what when_all and when_any share.
//
// One link per input (watched, not owned), a countdown, and the combinators'
// policy: the first error or cancellation decides, then every input still
// linked is cancelled. Loop thread only. Part of futures/combinators.hpp.
#pragma once

#include <cstddef>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include <reactor/scheduler.hpp>

#include "futures/future.hpp"

namespace futures::detail {

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
void require_valid(const std::vector<Future<T>>& inputs, const char* who) {
    for (const auto& f : inputs) {
        if (!f.valid()) throw InvalidStateError(std::string(who) + ": an input is an empty Future");
    }
}

}  // namespace futures::detail
