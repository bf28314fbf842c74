// SPDX-License-Identifier: MIT
#include "reactor/net/resolve_error.hpp"

#include <string>

#include <fmt/format.h>

namespace reactor {
namespace {

class ResolveCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "resolve"; }
    std::string message(int eai) const override { return ::gai_strerror(eai); }
    // Lets generic code ask e.g. code == std::errc::not_enough_memory.
    std::error_condition default_error_condition(int eai) const noexcept override {
        if (eai == EAI_MEMORY) return std::errc::not_enough_memory;
        if (eai == EAI_FAMILY || eai == EAI_ADDRFAMILY) return std::errc::address_family_not_supported;
        return {eai, *this};
    }
};

}  // namespace

const std::error_category& resolve_category() noexcept {
    static const ResolveCategory category;
    return category;
}

std::system_error resolve_error(int eai, std::string_view host, std::string_view service, int errno_value) {
    std::string what = service.empty() ? fmt::format("resolve host '{}'", host)
                                       : fmt::format("resolve host '{}' service '{}'", host, service);
    if (eai == EAI_SYSTEM) return std::system_error(errno_value, std::system_category(), what);
    return std::system_error(eai, resolve_category(), what);
}

}  // namespace reactor
