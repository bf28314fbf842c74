// SPDX-License-Identifier: MIT
// reactor::End as text.
#include "reactor/net/end.hpp"

#include <fmt/format.h>

namespace reactor {

std::string_view to_string(EndKind kind) noexcept {
    switch (kind) {
    case EndKind::local: return "local";
    case EndKind::eof: return "eof";
    case EndKind::reset: return "reset";
    case EndKind::error: return "error";
    case EndKind::read_timeout: return "read timeout";
    case EndKind::write_timeout: return "write timeout";
    case EndKind::idle_timeout: return "idle timeout";
    case EndKind::scheduler_closed: return "scheduler closed";
    case EndKind::line_too_long: return "line too long";
    case EndKind::frame_too_large: return "frame too large";
    case EndKind::truncated: return "truncated";
    case EndKind::handshake_failed: return "handshake failed";
    case EndKind::tls_error: return "tls error";
    case EndKind::handshake_timeout: return "handshake timeout";
    case EndKind::shutdown_timeout: return "shutdown timeout";
    }
    return "unknown";
}

std::string End::to_string() const {
    if (!detail.empty()) return fmt::format("{}: {}", reactor::to_string(kind), detail);
    if (error) return fmt::format("{}: {}", reactor::to_string(kind), error.message());
    return std::string(reactor::to_string(kind));
}

}  // namespace reactor
