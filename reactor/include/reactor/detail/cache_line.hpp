// SPDX-License-Identifier: MIT
// Internal: the cache line size the loop's layouts are built around.
#pragma once

#include <cstddef>

namespace reactor::detail {

// What two threads writing two members must keep between them not to share a
// cache line (x86-64 and most ARM64; std::hardware_destructive_interference_size
// would tie the layout to -mtune, which GCC warns about in a header).
inline constexpr std::size_t kCacheLine = 64;

}  // namespace reactor::detail
