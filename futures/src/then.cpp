// The non-template part of then/catch_error/finally.
#include "futures/then.hpp"

#include <fmt/format.h>

namespace futures::detail {

void report_orphan_exception(StateBase& out, std::exception_ptr error) noexcept {
    reactor::ErrorContext ctx;
    ctx.message = "exception in a continuation whose future was already complete";
    ctx.exception = std::move(error);
    ctx.origin = out.origin();
    ctx.origin_known = true;
    out.scheduler().call_exception_handler(ctx);
}

}  // namespace futures::detail
