// SPDX-License-Identifier: MIT
// The per-thread free lists behind StateBase's operator new/delete
// (see futures/detail/state_pool.hpp).
#include "futures/detail/state_pool.hpp"

#include <array>
#include <new>

#include "futures/detail/waiters.hpp"  // Waiter

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace futures::detail {
namespace {

constexpr std::size_t kGranule = 16;  // operator new's alignment: a block fits any class member
constexpr std::size_t kClasses = kMaxPooledSize / kGranule;
// Class c holds blocks of kFirst + c * kGranule bytes (24, 40, 56, ...; the
// last is just above kMaxPooledSize); kClasses: not pooled. Not multiples of
// 16: malloc (glibc's, and ptmalloc's relatives) puts an 8-byte size word
// before each block and hands out 16-byte chunks, so a request of 16k - 8
// bytes fills a chunk of 16k, and one of 16k bytes takes 16k + 16. A state of
// 120 bytes is then a 128-byte chunk, not 144.
constexpr std::size_t kFirst = kGranule + 8;
constexpr std::size_t block_of_class(std::size_t c) noexcept { return kFirst + c * kGranule; }
constexpr std::size_t class_of(std::size_t size) noexcept {
    return size <= kFirst ? 0 : (size - kFirst + kGranule - 1) / kGranule;
}
// What a block for `size` bytes really is: every block of a class has the
// class's size, so that any state of that class can reuse it.
constexpr std::size_t block_size(std::size_t size) noexcept {
    return class_of(size) < kClasses ? block_of_class(class_of(size)) : size;
}
static_assert(block_of_class(kClasses - 1) >= kMaxPooledSize, "every size up to kMaxPooledSize is pooled");
static_assert(block_size(120) == 120 && block_size(121) == 136 && block_size(1) == 24);

void poison(void* block, std::size_t size) noexcept {
#if defined(__SANITIZE_ADDRESS__)
    ASAN_POISON_MEMORY_REGION(block, size);
#else
    (void)block, (void)size;
#endif
}
void unpoison(void* block, std::size_t size) noexcept {
#if defined(__SANITIZE_ADDRESS__)
    ASAN_UNPOISON_MEMORY_REGION(block, size);
#else
    (void)block, (void)size;
#endif
}

// A free block: its first bytes link it to the next one of its class.
struct FreeBlock {
    FreeBlock* next;
};

class Pool {
public:
    constexpr Pool() noexcept = default;
    Pool(const Pool&) = delete;
    Pool& operator=(const Pool&) = delete;
    ~Pool();

    void* pop(std::size_t c) noexcept {
        FreeBlock* b = heads_[c];
        if (!b) return nullptr;
        unpoison(b, block_of_class(c));
        heads_[c] = b->next;
        --blocks_;
        bytes_ -= block_of_class(c);
        return b;
    }
    bool push(void* block, std::size_t c) noexcept {
        std::size_t size = block_of_class(c);
        if (bytes_ + size > kMaxCachedBytes) return false;
        heads_[c] = ::new (block) FreeBlock{heads_[c]};
        poison(block, size);
        ++blocks_;
        bytes_ += size;
        return true;
    }
    std::size_t blocks() const noexcept { return blocks_; }
    std::size_t bytes() const noexcept { return bytes_; }

    std::unique_ptr<WaiterVector> spare_waiters;

private:
    std::array<FreeBlock*, kClasses> heads_{};
    std::size_t blocks_ = 0;
    std::size_t bytes_ = 0;
};

// Set once this thread's pool is destroyed (thread exit): a state freed later
// (one held by another thread_local or static object) goes to operator delete.
// Trivially destructible, so it can be read at any time.
thread_local constinit bool pool_gone = false;
thread_local constinit Pool pool;

Pool::~Pool() {
    pool_gone = true;
    spare_waiters.reset();
    for (std::size_t c = 0; c < kClasses; ++c) {
        while (void* b = pop(c)) ::operator delete(b, block_of_class(c));
    }
}

}  // namespace

void* allocate_state(std::size_t size) {
    std::size_t c = class_of(size);
    if (c < kClasses && !pool_gone) {
        if (void* b = pool.pop(c)) return b;
    }
    return ::operator new(block_size(size));
}

void free_state(void* block, std::size_t size) noexcept {
    std::size_t c = class_of(size);
    if (c < kClasses && !pool_gone && pool.push(block, c)) return;
    ::operator delete(block, block_size(size));
}

std::unique_ptr<WaiterVector> take_waiter_vector() {
    if (!pool_gone && pool.spare_waiters) return std::move(pool.spare_waiters);
    return std::make_unique<WaiterVector>();
}

void recycle_waiter_vector(std::unique_ptr<WaiterVector> v) noexcept {
    if (pool_gone || v->capacity() * sizeof(Waiter) > kMaxCachedBytes) return;
    std::unique_ptr<WaiterVector>& spare = pool.spare_waiters;
    if (!spare || v->capacity() > spare->capacity()) {
        v->clear();
        spare = std::move(v);
    }
}

std::size_t pooled_state_blocks() noexcept { return pool_gone ? 0 : pool.blocks(); }
std::size_t pooled_state_bytes() noexcept { return pool_gone ? 0 : pool.bytes(); }

}  // namespace futures::detail
