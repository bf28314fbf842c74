// SPDX-License-Identifier: MIT
// reactor::tls::CloseReason as text.
#include "reactor/tls/close_reason.hpp"

#include <fmt/format.h>

namespace reactor::tls {

std::string_view to_string(CloseKind kind) noexcept {
    switch (kind) {
    case CloseKind::local: return "local";
    case CloseKind::close_notify: return "close_notify";
    case CloseKind::truncated: return "truncated";
    case CloseKind::handshake_failed: return "handshake failed";
    case CloseKind::tls_error: return "tls error";
    case CloseKind::handshake_timeout: return "handshake timeout";
    case CloseKind::shutdown_timeout: return "shutdown timeout";
    case CloseKind::transport: return "transport";
    }
    return "unknown";
}

std::string CloseReason::to_string() const {
    if (kind == CloseKind::transport) return fmt::format("transport: {}", transport.to_string());
    if (!detail.empty()) return fmt::format("{}: {}", tls::to_string(kind), detail);
    return std::string(tls::to_string(kind));
}

}  // namespace reactor::tls
