// SPDX-License-Identifier: MIT
// Internal: a Callback's target taken out of it and kept elsewhere, for a
// queue that stores only the bytes each target uses (detail::PostedQueue)
// instead of whole Callbacks: the ops table, which knows the target's
// size, and the target's bytes, moved out as a Callback's own move would
// (copied, or by its move constructor). Not part of the API.
#pragma once

#include <cstddef>
#include <cstring>
#include <utility>

#include "reactor/callback.hpp"

namespace reactor::detail {

struct CallbackTarget {
    using Ops = Callback::Ops;

    // The most a target uses, and the alignment it needs where it is put.
    static constexpr std::size_t kMaxSize = Callback::kInlineSize;
    static constexpr std::size_t kAlign = Callback::kInlineAlign;

    // Precondition: `cb` non-empty.
    static const Ops& ops(const Callback& cb) noexcept { return *cb.ops_; }
    static std::size_t size(const Ops& ops) noexcept { return ops.size; }

    // Moves the target of `cb` (non-empty) to `to`, size(ops(cb)) bytes
    // aligned to kAlign, and leaves `cb` empty: the target now lives at `to`,
    // for invoke and destroy.
    static void relocate(Callback& cb, void* to) noexcept {
        const Ops* ops = std::exchange(cb.ops_, nullptr);
        if (ops->move_to != nullptr) {
            ops->move_to(cb.storage_, to);
        } else {
            copy_words(static_cast<std::byte*>(to), cb.storage_, ops->size);
        }
    }

    static void invoke(const Ops& ops, void* target) { ops.invoke(target); }
    static void destroy(const Ops& ops, void* target) noexcept {
        if (ops.destroy != nullptr) ops.destroy(target);
    }

private:
    // Word by word, each copy of a known size: an inline move, not a call
    // to memcpy with a length known only at run time.
    static void copy_words(std::byte* to, const std::byte* from, std::size_t bytes) noexcept {
        static_assert(kMaxSize == 6 * kAlign, "one case per word of the inline buffer");
        switch (bytes / kAlign) {
        case 6: std::memcpy(to + 5 * kAlign, from + 5 * kAlign, kAlign); [[fallthrough]];
        case 5: std::memcpy(to + 4 * kAlign, from + 4 * kAlign, kAlign); [[fallthrough]];
        case 4: std::memcpy(to + 3 * kAlign, from + 3 * kAlign, kAlign); [[fallthrough]];
        case 3: std::memcpy(to + 2 * kAlign, from + 2 * kAlign, kAlign); [[fallthrough]];
        case 2: std::memcpy(to + kAlign, from + kAlign, kAlign); [[fallthrough]];
        case 1: std::memcpy(to, from, kAlign); break;
        default: break;
        }
    }
};

}  // namespace reactor::detail
