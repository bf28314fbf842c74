// SPDX-License-Identifier: MIT
// futures::detail::launch: how every future the library makes is born.
//
// One order, in one place: the state is constructed (its memory from the
// per-thread pool), a Future takes its first reference, and only then is the
// state started (linked to its inputs, scheduled, or completed), so a start
// that throws frees the state with that Future. Loop thread only.
#pragma once
#ifndef FUTURES_FUTURE_HPP_BODY_DONE
#error "futures/detail/*.hpp are parts of futures/future.hpp: include that instead"
#endif

#include <exception>
#include <utility>


namespace futures::detail {

// A state S made and owned by its future, not started yet: launch<S>(...).start(...).
template <class S>
class [[nodiscard]] Launch {
public:
    using value_type = typename S::value_type;

    template <class... A>
    explicit Launch(A&&... args)
        : state_(new S(std::forward<A>(args)...)), future_(Access::adopt<value_type>(state_)) {}

    // Calls state.start(args...) and hands over the future.
    template <class... A>
    Future<value_type> start(A&&... args) && {
        state_->start(std::forward<A>(args)...);
        return std::move(future_);
    }
    // A future born complete (its callbacks still run from the loop).
    template <class... A>
    Future<value_type> done(A&&... value) && {
        state_->finish_value(std::forward<A>(value)...);
        return std::move(future_);
    }
    Future<value_type> failed(std::exception_ptr error) && {
        state_->finish_exception(std::move(error));
        return std::move(future_);
    }

private:
    S* state_;
    Future<value_type> future_;
};

template <class S, class... A>
Launch<S> launch(A&&... args) {
    return Launch<S>(std::forward<A>(args)...);
}

}  // namespace futures::detail
