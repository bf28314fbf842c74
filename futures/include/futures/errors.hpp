// SPDX-License-Identifier: MIT
// The errors a Future reports. Each is a std::logic_error or std::runtime_error
// so generic handlers still see a what() message.
#pragma once

#include <stdexcept>
#include <string>

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

}  // namespace futures
