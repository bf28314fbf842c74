// SPDX-License-Identifier: MIT
// Internal: how many conversations of a StreamServer still run, and the
// server's scope they are counted in. Kept by the
// server's core and by each conversation's stream, which may outlive the
// core (a server handle dropped while clients talk on). Counted by hand, so
// that what a stream keeps of its server is one pointer, not a weak_ptr's
// two. Loop thread only.
#pragma once

#include <cstddef>
#include <source_location>

#include "futures/detail/ref.hpp"
#include "scope_state.hpp"

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
    // The server's scope: each conversation is a counted child of it
    // (ScopeState::adopt_counted), told of its end by its stream's waiter.
    Ref<ScopeState> scope;

private:
    std::size_t holders_ = 1;
};

}  // namespace futures::detail
