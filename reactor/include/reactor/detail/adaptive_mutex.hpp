// SPDX-License-Identifier: MIT
// AdaptiveMutex: a mutex that spins a little before it sleeps, for the
// cross-thread post queue (Scheduler::call_soon_threadsafe), whose critical
// sections are a few stores long and are entered by a poster and by the loop
// at once all the time: a poster pushing as fast as it can holds the lock a
// good part of the time, so the loop's take nearly always finds it held.
// std::mutex (glibc's normal mutex) then goes straight to the kernel: the
// taker sleeps in futex(2), the holder's unlock pays a futex wake, each a
// system call of a few microseconds against a hold of tens of nanoseconds.
// glibc's adaptive kind spins on the lock first (a bounded number of times,
// learned from how long it took before) and only then waits in the kernel,
// so a holder that is preempted still costs no more than it did. A
// Lockable (std::lock_guard works with it); Linux/glibc only, as the
// library is.
#pragma once

#include <pthread.h>

namespace reactor::detail {

class AdaptiveMutex {
public:
    AdaptiveMutex() noexcept = default;
    AdaptiveMutex(const AdaptiveMutex&) = delete;
    AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;
    ~AdaptiveMutex() { ::pthread_mutex_destroy(&m_); }

    // An adaptive mutex fails only on misuse (EINVAL: destroyed; EDEADLK is
    // not reported by this kind), which the library does not do.
    void lock() noexcept { ::pthread_mutex_lock(&m_); }
    bool try_lock() noexcept { return ::pthread_mutex_trylock(&m_) == 0; }
    void unlock() noexcept { ::pthread_mutex_unlock(&m_); }

private:
    pthread_mutex_t m_ = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
};

}  // namespace reactor::detail
