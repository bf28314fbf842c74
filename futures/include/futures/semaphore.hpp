// SPDX-License-Identifier: MIT
// futures::Semaphore and futures::Permit: a counter of permits that
// state-machine tasks acquire and release (asyncio.Semaphore), with the
// permit as an object that gives itself back.
//
// acquire() returns a Future<Permit>: done at once if a permit is free and
// nobody waits, else when one comes back, FIFO among waiters. A Permit is
// released when it is destroyed (or by release()), and goes straight to the
// first waiter still waiting, completing its future. So a wait cancelled (or
// dropped) before it was served never takes a permit; and a permit handed to
// a waiter that then lets it go unread (the task was cancelled, a when_any
// or with_timeout chose another input, every handle to the future was
// dropped) is destroyed with the future and goes on to the next waiter: a
// permit is never lost. Permits never exceed the initial count: only a
// Permit can give one back. A Permit may outlive its Semaphore (it then
// gives back to nobody). The futures belong to the Scheduler, which should
// outlive the Semaphore (if not, waiters still parked are cancelled when it
// goes; destroying the Semaphore cancels them too). Loop thread only; never
// calls back synchronously.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <source_location>

#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/future.hpp"

namespace futures {

namespace detail {
struct SemaphoreCore;
}

// One permit of a Semaphore (or the hold of a Lock), released when
// destroyed. Move-only; a moved-from or released Permit holds nothing.
class [[nodiscard]] REACTOR_API Permit {
public:
    Permit() noexcept = default;
    Permit(Permit&& other) noexcept = default;
    Permit& operator=(Permit&& other) noexcept {
        if (this != &other) {
            release();
            core_ = std::move(other.core_);
        }
        return *this;
    }
    ~Permit() { release(); }

    // Gives the permit back now (to the first waiter, if any). Idempotent.
    void release() noexcept;
    bool held() const noexcept { return static_cast<bool>(core_); }
    explicit operator bool() const noexcept { return held(); }

private:
    friend struct detail::SemaphoreCore;
    explicit Permit(std::shared_ptr<detail::SemaphoreCore> core) noexcept : core_(std::move(core)) {}
    std::shared_ptr<detail::SemaphoreCore> core_;
};

class REACTOR_API Semaphore {
public:
    // `permits` >= 1 (std::invalid_argument otherwise: with none, every
    // acquire() would wait forever, since only Permits give permits back).
    Semaphore(reactor::Scheduler& sched, std::size_t permits,
              std::source_location where = std::source_location::current());
    Semaphore(const Semaphore&) = delete;
    Semaphore& operator=(const Semaphore&) = delete;
    // Waiters still parked are cancelled ("... was destroyed").
    ~Semaphore();

    // A permit: at once if one is free and nobody waits, else when one is
    // given back, FIFO. Cancelling the future while it waits means it takes none.
    [[nodiscard]] Future<Permit> acquire(std::source_location where = std::source_location::current());
    // A permit if one is free and nobody waits; nothing otherwise.
    std::optional<Permit> try_acquire();

    std::size_t available() const noexcept;
    std::size_t permits() const noexcept;  // the initial count
    std::size_t waiting() const noexcept;
    bool locked() const noexcept { return available() == 0; }  // acquire() would wait

private:
    friend class Lock;
    // `kind` names it in messages ("the Lock created at ...").
    Semaphore(reactor::Scheduler& sched, std::size_t permits, std::source_location where, const char* kind);

    std::shared_ptr<detail::SemaphoreCore> core_;
};

}  // namespace futures
