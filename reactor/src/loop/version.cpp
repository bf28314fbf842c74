// SPDX-License-Identifier: MIT
#include <reactor/version.hpp>

namespace reactor {

const char* version_string() noexcept { return REACTOR_VERSION_STRING; }

}  // namespace reactor
