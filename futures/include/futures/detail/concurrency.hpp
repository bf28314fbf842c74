// SPDX-License-Identifier: MIT
// How many steps parallel_for_each and map_reduce keep in flight: the
// caller's limit, no more than there are elements, at least one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <ranges>
#include <stdexcept>
#include <string>

namespace futures {

// No limit on the steps in flight (the default of parallel_for_each and map_reduce).
inline constexpr std::size_t kUnlimitedConcurrency = std::numeric_limits<std::size_t>::max();

namespace detail {

// One link is made up front per step allowed in flight, so an unsized range
// needs a finite limit. Bad limits throw std::invalid_argument.
template <class V>
std::size_t links_for(V& view, std::size_t max_concurrency, const char* who) {
    if (max_concurrency == 0) throw std::invalid_argument(std::string(who) + ": max_concurrency must be at least 1");
    if constexpr (std::ranges::sized_range<V>) {
        const auto n = static_cast<std::size_t>(std::ranges::size(view));
        return std::max<std::size_t>(1, std::min(n, max_concurrency));
    } else {
        if (max_concurrency == kUnlimitedConcurrency) {
            throw std::invalid_argument(std::string(who) +
                                        ": a range whose size is not known needs a finite max_concurrency");
        }
        return max_concurrency;
    }
}

}  // namespace detail
}  // namespace futures
