// SPDX-License-Identifier: MIT
// reactor::resolve_category(): getaddrinfo's EAI_* errors as std::error_code.
//
// A failed lookup, blocking (Address::resolve) or not (futures::resolve),
// throws or fails with one type: std::system_error whose code is in this
// category (or in the system category for EAI_SYSTEM, carrying errno) and
// whose what() names the host and service that failed, e.g.
//   resolve host '127.0.0.1' service 'no-such-service': Servname not supported for ai_socktype
// Compare codes with the enum: e.code() == reactor::resolve_errc::service.
#pragma once

#include <netdb.h>

#include <string_view>
#include <system_error>
#include <type_traits>

#include <reactor/export.hpp>

namespace reactor {

// The getaddrinfo failures (values are the C library's EAI_* constants).
enum class resolve_errc : int {
    again = EAI_AGAIN,              // temporary failure in name resolution
    bad_flags = EAI_BADFLAGS,       // invalid hints
    fail = EAI_FAIL,                // non-recoverable failure
    family = EAI_FAMILY,            // address family not supported
    memory = EAI_MEMORY,            // out of memory
    no_name = EAI_NONAME,           // unknown host or service, or a non-numeric host with numeric_host
    service = EAI_SERVICE,          // the service is not known for the socket type
    socktype = EAI_SOCKTYPE,        // socket type not supported
    no_data = EAI_NODATA,           // the host has no address (of a family we can use)
    addr_family = EAI_ADDRFAMILY,   // the host has no address in the requested family
};

REACTOR_API const std::error_category& resolve_category() noexcept;

inline std::error_code make_error_code(resolve_errc e) noexcept {
    return {static_cast<int>(e), resolve_category()};
}

// The exception for getaddrinfo's return code `eai` when looking up
// host/service (an empty service is left out of the message). EAI_SYSTEM
// becomes a system_category code from `errno_value`.
REACTOR_API std::system_error resolve_error(int eai, std::string_view host, std::string_view service = {},
                                int errno_value = 0);

}  // namespace reactor

template <>
struct std::is_error_code_enum<reactor::resolve_errc> : std::true_type {};
