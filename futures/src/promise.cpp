// SPDX-License-Identifier: MIT
// The non-template half of futures::Promise (futures/promise.hpp): the
// broken-promise cancellation and the misuse errors, with their messages.
#include "futures/promise.hpp"

#include <string>

#include <fmt/format.h>

namespace futures::detail {

void break_promise(StateBase& state, const char* what) noexcept {
    if (!state.pending()) return;
    const std::source_location where = state.origin();
    std::exception_ptr error;
    try {
        error = std::make_exception_ptr(BrokenPromise(fmt::format(
            "broken promise: the {} created at {}:{} will never complete", what, where.file_name(), where.line())));
    } catch (...) {
        error = std::make_exception_ptr(BrokenPromise());  // out of memory for the message
    }
    try {
        state.finish_cancelled(std::move(error));
    } catch (...) {
        // Scheduling the waiters failed (out of memory): the state is
        // cancelled all the same, and what waits on it is woken if its
        // Scheduler drops the rest.
    }
}

void throw_promise_error(const char* operation, const char* problem, const StateBase* state, const char* what) {
    if (!state) throw InvalidStateError(fmt::format("Promise::{}: {}", operation, problem));
    const std::source_location where = state->origin();
    throw InvalidStateError(
        fmt::format("Promise::{}: {} (the {} created at {}:{})", operation, problem, what, where.file_name(),
                    where.line()));
}

}  // namespace futures::detail
