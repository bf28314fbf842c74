// SPDX-License-Identifier: MIT
// What the Scheduler's exception handler receives, and the default handler.
#pragma once

#include <exception>
#include <functional>
#include <source_location>
#include <string>

#include <reactor/export.hpp>

namespace reactor {

// What the exception handler receives. `exception` may be null (e.g. an fd
// reported closed); `origin` is where the failing callback was scheduled or
// registered, when known.
struct REACTOR_API ErrorContext {
    std::string message;
    std::exception_ptr exception;
    std::source_location origin;
    bool origin_known = false;
    int fd = -1;
};
using ExceptionHandler = std::function<void(const ErrorContext&)>;

// The default handler: one fmt-formatted line on stderr, e.g.
//   reactor: exception in callback scheduled at tests/x.cpp:12: boom
REACTOR_API void default_exception_handler(const ErrorContext& ctx);
REACTOR_API std::string describe(const ErrorContext& ctx);  // that line, without the newline

}  // namespace reactor
