// The non-template part of then/catch_error/finally.
#include "futures/then.hpp"

namespace futures::detail {

void report_orphan_exception(StateBase& out, std::exception_ptr error) noexcept {
    report_error(out.scheduler(), "exception in a continuation whose future was already complete", std::move(error),
                 out.origin());
}

}  // namespace futures::detail
