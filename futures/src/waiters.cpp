// SPDX-License-Identifier: MIT
// The waiter list of a future's state: registration order, a lone entry in
// the list's own word, two or more in a vector recycled through the state pool.
#include "futures/detail/waiters.hpp"

#include <stdexcept>

#include "futures/future.hpp"  // Link

namespace futures::detail {

std::uint32_t WaiterList::push_more(Waiter w) {
    if (WaiterVector* v = many()) {
        if (v->size() >= UINT32_MAX - 1) throw std::length_error("futures: too many done-callbacks on one future");
        v->push_back(w);
        return static_cast<std::uint32_t>(v->size() - 1);
    }
    // The second entry: both go to a vector, the first keeping index 0.
    std::unique_ptr<WaiterVector> v = take_waiter_vector();
    v->reserve(2);
    v->push_back((*this)[0]);
    v->push_back(w);
    word_ = reinterpret_cast<std::uintptr_t>(v.release()) | kMany;
    return 1;
}

void WaiterList::drop(Waiter w) noexcept {
    if (Link* link = w.as_link()) {
        link->owner().release();  // the reference the entry held; the wake-up will not come
    } else if (UserCallback* user = w.as_user()) {
        user->dispose();
    }  // else empty
}

void WaiterList::clear() noexcept {
    // Emptied before anything is released: releasing may run destructors that
    // reach other states, never this list, but keep it consistent anyway.
    WaiterVector* v = many();
    std::uintptr_t word = std::exchange(word_, 0);
    if (!v) {
        if (word != kOneTaken) drop(Waiter(word));
        return;
    }
    std::unique_ptr<WaiterVector> all(v);
    for (Waiter w : *all) drop(w);
    recycle_waiter_vector(std::move(all));
}

}  // namespace futures::detail
