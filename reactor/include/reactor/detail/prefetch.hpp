// SPDX-License-Identifier: MIT
// Internal: asking for a cache line one is about to write.
#pragma once

namespace reactor::detail {

// Starts fetching the line at `p` for writing, so that a store to it later
// finds it owned instead of waiting for it. On x86-64, prefetchw itself:
// GCC's __builtin_prefetch emits it only under -mprfchw (Broadwell and
// later, every AMD) and a read prefetch instead, which fetches the line
// shared and leaves the store its wait for ownership; processors without
// PREFETCHW execute it as a no-op (which is why 64-bit Windows 8.1 could
// require it). Elsewhere the compiler's prefetch for a store.
inline void prefetch_for_write(const void* p) noexcept {
#if defined(__x86_64__)
    asm("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace reactor::detail
