// SPDX-License-Identifier: MIT
// The non-template part of retry: checking a policy, the backoff delays, the
// default random source.
#include "futures/retry.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>

namespace futures {

std::function<double()> random_from_seed(std::uint32_t seed) {
    auto engine = std::make_shared<std::minstd_rand>(seed);
    return [engine] { return std::generate_canonical<double, 32>(*engine); };
}

namespace detail {

void prepare_retry_policy(RetryPolicy& policy) {
    if (policy.max_attempts == 0) throw std::invalid_argument("retry: max_attempts must be at least 1");
    if (policy.initial_delay < reactor::Duration::zero()) {
        throw std::invalid_argument("retry: initial_delay must not be negative");
    }
    if (policy.max_delay < policy.initial_delay) {
        throw std::invalid_argument("retry: max_delay must not be less than initial_delay");
    }
    if (!(policy.multiplier >= 1.0) || !std::isfinite(policy.multiplier)) {
        throw std::invalid_argument("retry: multiplier must be a finite number of at least 1");
    }
    if (!(policy.jitter >= 0.0 && policy.jitter <= 1.0)) {
        throw std::invalid_argument("retry: jitter must be between 0 and 1");
    }
    if (!policy.random) policy.random = random_from_seed(std::random_device{}());
}

reactor::Duration retry_delay(const RetryPolicy& policy, unsigned failed_attempt) {
    // In floating point: the exponential overflows any integer long before
    // max_delay caps it.
    const double cap = static_cast<double>(policy.max_delay.count());
    const double grown = static_cast<double>(policy.initial_delay.count()) *
                         std::pow(policy.multiplier, static_cast<double>(failed_attempt - 1));
    const double base = std::min(cap, grown);
    double u = policy.random();
    if (!(u >= 0.0)) u = 0.0;  // a source outside [0, 1) is clamped, never trusted to bound the delay
    if (u > 1.0) u = 1.0;
    const double scaled = base * (1.0 - policy.jitter * u);
    return reactor::Duration(static_cast<reactor::Duration::rep>(std::clamp(scaled, 0.0, cap)));
}

bool should_retry(const RetryPolicy& policy, unsigned failed_attempt, const std::exception_ptr& error) {
    if (failed_attempt >= policy.max_attempts) return false;
    return !policy.retry_on || policy.retry_on(error);
}

}  // namespace detail
}  // namespace futures
