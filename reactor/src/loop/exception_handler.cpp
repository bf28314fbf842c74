// SPDX-License-Identifier: MIT
// Errors that have no caller to return to: a user callback threw, or a layer
// above reports an error that has no owner to hear it (errors with an owner
// reach it: a close reason, an error callback, a failed future). The loop
// formats it and hands it to the installed handler, never letting a failing
// handler unwind into the loop. Loop thread only.
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "reactor/scheduler.hpp"

namespace reactor {

std::string describe(const ErrorContext& ctx) {
    std::string line = fmt::format("reactor: {}", ctx.message);
    if (ctx.origin_known) line += fmt::format(" (from {}:{})", ctx.origin.file_name(), ctx.origin.line());
    if (ctx.exception) {
        try {
            std::rethrow_exception(ctx.exception);
        } catch (const std::exception& e) {
            line += fmt::format(": {}", e.what());
        } catch (...) {
            line += ": unknown exception";
        }
    }
    return line;
}

void default_exception_handler(const ErrorContext& ctx) { fmt::print(stderr, "{}\n", describe(ctx)); }

void Scheduler::set_exception_handler(ExceptionHandler handler) {
    require_loop_thread("set_exception_handler");
    exception_handler_ = std::move(handler);
}

void Scheduler::call_exception_handler(const ErrorContext& ctx) noexcept {
    try {
        if (exception_handler_) {
            exception_handler_(ctx);
            return;
        }
    } catch (...) {
        std::fputs("reactor: the exception handler itself threw; original error follows\n", stderr);
    }
    try {
        default_exception_handler(ctx);
    } catch (...) {
        std::fputs("reactor: failed to report an error\n", stderr);
    }
}

}  // namespace reactor
