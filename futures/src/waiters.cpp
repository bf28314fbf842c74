// SPDX-License-Identifier: MIT
// The waiter list of a future's state: registration order, the first entry
// inline, the rest in a vector recycled through the state pool.
#include "futures/detail/waiters.hpp"

#include <stdexcept>

#include "futures/future.hpp"  // Link

namespace futures::detail {

std::uint32_t WaiterList::push(Waiter w) {
    if (size_ == UINT32_MAX - 1) throw std::length_error("futures: too many done-callbacks on one future");
    if (size_ == 0) {
        first_ = w;
    } else {
        if (!rest_) rest_ = take_waiter_vector();
        rest_->push_back(w);
    }
    return size_++;
}

void WaiterList::drop(Waiter w) noexcept {
    if (Link* link = w.as_link()) {
        link->owner().release();  // the reference the entry held; the wake-up will not come
    } else {
        delete w.as_user();
    }
}

void WaiterList::clear() noexcept {
    // Emptied before anything is released: releasing may run destructors that
    // reach other states, never this list, but keep it consistent anyway.
    Waiter first = std::exchange(first_, Waiter{});
    std::unique_ptr<WaiterVector> rest = std::move(rest_);
    size_ = 0;
    drop(first);
    if (rest) {
        for (Waiter w : *rest) drop(w);
        recycle_waiter_vector(std::move(rest));
    }
}

}  // namespace futures::detail
