// SPDX-License-Identifier: MIT
// The errors a Future reports. Each is a std::logic_error or std::runtime_error
// so generic handlers still see a what() message.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include <reactor/export.hpp>

namespace futures {

// Misuse of a future's state machine: set twice, result() while pending.
class REACTOR_API InvalidStateError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

// The future (or task) was cancelled.
class REACTOR_API CancelledError : public std::runtime_error {
public:
    CancelledError() : std::runtime_error("future was cancelled") {}
    using std::runtime_error::runtime_error;
};

// The producer of a future (a futures::Promise: a stream's pending read, a
// child's exit watch...) went away without completing it: the future is
// cancelled with this error, whose what() names the future's line ("broken
// promise: the stream read created at app.cpp:42 will never complete"). A
// CancelledError, so it is a cancellation (catch it first to tell it apart),
// never reported as an exception nobody retrieved. See futures/promise.hpp.
class REACTOR_API BrokenPromise : public CancelledError {
public:
    BrokenPromise() : CancelledError("broken promise") {}
    using CancelledError::CancelledError;
};

// with_timeout() gave up waiting.
class REACTOR_API TimeoutError : public std::runtime_error {
public:
    TimeoutError() : std::runtime_error("timed out") {}
    using std::runtime_error::runtime_error;
};

// An error held in a std::exception_ptr, readable without rethrowing it:
// what() is its std::exception's message, as()/exception() reach the object.
// It keeps the error alive (it holds the exception_ptr) and converts to
// `const std::exception_ptr&`, so code written for the pointer still takes
// it. What RetryPolicy::on_retry is given. Made once (the constructor
// rethrows the pointer a single time to find the object); copies are cheap.
//
//     policy.on_retry = [](unsigned attempt, const futures::ErrorView& error, reactor::Duration delay) {
//         fmt::print("attempt {} failed: {}\n", attempt, error.what());
//     };
class ErrorView {
public:
    explicit ErrorView(std::exception_ptr error) noexcept : error_(std::move(error)) {
        if (!error_) return;
        try {
            std::rethrow_exception(error_);
        } catch (const std::exception& e) {
            exception_ = &e;  // the object error_ holds: valid while error_ is
        } catch (...) {
        }
    }
    // The message: the std::exception's what(); "unknown exception" for an
    // error of another type (a thrown int); "no error" for an empty pointer.
    const char* what() const noexcept {
        if (exception_) return exception_->what();
        return error_ ? "unknown exception" : "no error";
    }
    // The error as a std::exception, or null if it is of another type.
    const std::exception* exception() const noexcept { return exception_; }
    // The error as an E (dynamic_cast), or null: error.as<TimeoutError>().
    template <class E>
    const E* as() const noexcept {
        return dynamic_cast<const E*>(exception_);
    }
    const std::exception_ptr& ptr() const noexcept { return error_; }
    operator const std::exception_ptr&() const noexcept { return error_; }
    explicit operator bool() const noexcept { return static_cast<bool>(error_); }

private:
    std::exception_ptr error_;
    const std::exception* exception_ = nullptr;
};

}  // namespace futures
