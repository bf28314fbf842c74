// The non-template part of futures/future.hpp: Status names.
#include "futures/future.hpp"

namespace futures {

std::string_view to_string(Status status) noexcept {
    switch (status) {
    case Status::pending:
        return "pending";
    case Status::done:
        return "done";
    case Status::failed:
        return "failed";
    case Status::cancelled:
        return "cancelled";
    }
    return "?";
}

}  // namespace futures
