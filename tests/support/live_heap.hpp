// SPDX-License-Identifier: MIT
// Test support: counts the program's live heap blocks (operator new less
// operator delete), for tests that show something "leaks nothing": the count
// after is the count before. Replaces the global operator new and delete, so
// include it from exactly one file of a test program (every suite is one
// file), and never with counting_new.hpp. The aligned forms are the
// library's own (they neither call these nor are called by them): what
// they allocate is not counted.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace reactor_test {
// Blocks allocated and not yet freed; any thread.
inline std::atomic<long> live_heap_blocks{0};
}  // namespace reactor_test

// operator new is malloc plus a counter, and GCC then mistakes the matching
// operator delete's free() for a mismatch.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size) {
    if (void* p = std::malloc(size == 0 ? 1 : size)) {
        reactor_test::live_heap_blocks.fetch_add(1, std::memory_order_relaxed);
        return p;
    }
    throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    void* p = std::malloc(size == 0 ? 1 : size);
    if (p != nullptr) reactor_test::live_heap_blocks.fetch_add(1, std::memory_order_relaxed);
    return p;
}
void operator delete(void* p) noexcept {
    if (p == nullptr) return;
    reactor_test::live_heap_blocks.fetch_sub(1, std::memory_order_relaxed);
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { operator delete(p); }
