// The errors a Future reports. Each is a std::logic_error or std::runtime_error
// so generic handlers still see a what() message.
#pragma once

#include <stdexcept>
#include <string>

namespace futures {

// Misuse of a future's state machine: set twice, result() while pending.
class InvalidStateError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

// The future (or task) was cancelled.
class CancelledError : public std::runtime_error {
public:
    CancelledError() : std::runtime_error("future was cancelled") {}
    using std::runtime_error::runtime_error;
};

// with_timeout() gave up waiting.
class TimeoutError : public std::runtime_error {
public:
    TimeoutError() : std::runtime_error("timed out") {}
    using std::runtime_error::runtime_error;
};

}  // namespace futures
