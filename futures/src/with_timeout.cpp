// SPDX-License-Identifier: MIT
// The non-template part of with_timeout: the TimeoutError message.
#include "futures/with_timeout.hpp"

#include <fmt/format.h>

namespace futures::detail {
namespace {

// "250 ms", "1.5 s", "20 us": the unit a human would pick.
std::string describe(reactor::Duration d) {
    using namespace std::chrono;
    double ns = static_cast<double>(duration_cast<nanoseconds>(d).count());
    if (ns >= 1e9) return fmt::format("{:g} s", ns / 1e9);
    if (ns >= 1e6) return fmt::format("{:g} ms", ns / 1e6);
    if (ns >= 1e3) return fmt::format("{:g} us", ns / 1e3);
    return fmt::format("{:g} ns", ns);
}

}  // namespace

std::exception_ptr make_timeout_error(reactor::Duration delay) {
    return std::make_exception_ptr(TimeoutError(fmt::format("with_timeout: gave up after {}", describe(delay))));
}

}  // namespace futures::detail
