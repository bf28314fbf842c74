// SPDX-License-Identifier: MIT
// Test support: counts every heap allocation of the test program, for tests
// that show a path allocates nothing ("ticking allocates nothing", "a read
// with deadlines set allocates nothing"). Replaces the global operator new
// and delete, so include it from exactly one file of a test program (every
// suite is one file).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace reactor_test {
// Allocations so far (loop thread: the suites that count do not allocate on other threads).
inline std::size_t allocation_count = 0;
}  // namespace reactor_test

// operator new is malloc plus a counter, and GCC then mistakes the matching
// operator delete's free() for a mismatch.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size) {
    ++reactor_test::allocation_count;
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// The nothrow forms too (std::stable_sort's buffer), or a sanitizer's own
// operator new would meet this free() and report a mismatch.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    ++reactor_test::allocation_count;
    return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
