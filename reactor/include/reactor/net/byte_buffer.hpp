// SPDX-License-Identifier: MIT
// reactor::ByteBuffer: a FIFO of bytes, appended at the back, consumed at the front.
//
// Owns its storage; contiguous, so the whole pending region can go to one
// send(2). Consuming only moves an offset; the consumed prefix is reclaimed
// when it is at least half the storage, so each byte is moved at most a
// constant number of times (amortised O(1) per byte). Not thread-safe.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>
#include <vector>

namespace reactor {

class ByteBuffer {
public:
    std::size_t size() const noexcept { return bytes_.size() - head_; }
    bool empty() const noexcept { return size() == 0; }
    const char* data() const noexcept { return bytes_.data() + head_; }
    std::string_view view() const noexcept { return {data(), size()}; }

    void append(std::string_view more) {
        if (more.empty()) return;
        if (head_ > 0 && head_ >= bytes_.size() / 2) compact();
        bytes_.insert(bytes_.end(), more.begin(), more.end());
    }

    // Drops the first n bytes (n <= size()).
    void consume(std::size_t n) noexcept {
        head_ += n;
        if (head_ >= bytes_.size()) clear();
    }

    // Empties the buffer but keeps its capacity for reuse.
    void clear() noexcept {
        bytes_.clear();
        head_ = 0;
    }

    std::size_t capacity() const noexcept { return bytes_.capacity(); }
    // Gives back the storage beyond what the buffer holds (one copy of its
    // bytes into a block of their size); on allocation failure the buffer
    // keeps its storage.
    void shrink_to_fit() noexcept {
        compact();
        try {
            std::vector<char>(bytes_.begin(), bytes_.end()).swap(bytes_);
        } catch (...) {
            // Out of memory: the larger block stays, the bytes are unchanged.
        }
    }
    // Empties the buffer and returns its memory.
    void release() noexcept {
        std::vector<char>().swap(bytes_);
        head_ = 0;
    }

private:
    void compact() noexcept {
        std::size_t n = size();
        if (n > 0) std::memmove(bytes_.data(), bytes_.data() + head_, n);
        bytes_.resize(n);
        head_ = 0;
    }

    std::vector<char> bytes_;
    std::size_t head_ = 0;
};

}  // namespace reactor
