// SPDX-License-Identifier: MIT
// Internal: how many conversations of a StreamServer still run. Kept by the
// server's core and by each conversation's stream, which may outlive the
// core (a server handle dropped while clients talk on). Counted by hand, so
// that what a stream keeps of its server is one pointer, not a weak_ptr's
// two. Loop thread only.
#pragma once

#include <cstddef>
#include <source_location>

namespace futures::detail {

class ActiveCount {
public:
    explicit ActiveCount(std::source_location w) noexcept : where(w) {}
    ActiveCount(const ActiveCount&) = delete;
    ActiveCount& operator=(const ActiveCount&) = delete;

    void add_ref() noexcept { ++holders_; }
    void release() noexcept {
        if (--holders_ == 0) delete this;
    }

    std::size_t active = 0;
    std::source_location where;  // the server's start_server call: named if a conversation's end throws

private:
    std::size_t holders_ = 1;
};

}  // namespace futures::detail
