// SPDX-License-Identifier: MIT
// reactor::CallbackSlot: the one idiom for a callback that may replace, clear
// or destroy itself while it runs.
//
// A long-lived object that calls a user callback over and over (a
// connection's data callback, a listener's accept callback) must survive that
// callback doing anything: setting a new callback, clearing it, closing the
// object. The library handles this in one way everywhere, the way the
// Scheduler runs a persistent fd waiter (see run_ready in
// src/loop/iteration.cpp):
//
//   move the callback out of its slot, run it from the local copy, and move
//   it back afterwards, even if it throws, unless the slot was set meanwhile.
//
// The slot knows "set meanwhile" by a generation that every set() bumps (the
// Scheduler uses its slot generations). So, from inside its own call, a
// callback may
//   - replace itself: the new one stays, the running one is destroyed when it returns;
//   - clear itself (set(nullptr), or reset() when its owner closes): the slot
//     stays empty, and the captures it runs with live until it returns;
//   - invoke the same slot again: that does nothing (the slot is empty while
//     its callback runs), so a callback never recurses into itself.
//
// The owner of the slot must outlive the call: objects that a callback could
// release hold a reference to themselves across invoke() (a shared_from_this
// copy, or a self-reference kept while open). Callbacks that run once (a
// connect result, a call_soon) need none of this: they are moved out and run.
// Not thread-safe, like everything on the loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

namespace reactor {

template <class Signature>
class CallbackSlot;

template <class... Args>
class CallbackSlot<void(Args...)> {
public:
    using Function = std::function<void(Args...)>;

    CallbackSlot() = default;
    CallbackSlot(Function f) : f_(std::move(f)) {}  // NOLINT(google-explicit-constructor)

    // Replaces the callback (an empty Function clears it). Safe from inside invoke().
    void set(Function f) {
        f_ = std::move(f);
        ++generation_;
    }
    void reset() { set(nullptr); }
    // Empties the slot and returns its callback, for one that runs once (a
    // close callback): the caller runs it from its own local.
    Function take() {
        ++generation_;
        return std::exchange(f_, nullptr);
    }
    explicit operator bool() const noexcept { return static_cast<bool>(f_); }

    // Runs the callback, if any; returns whether one ran. See the header comment.
    template <class... A>
    bool invoke(A&&... args) {
        if (!f_) return false;
        Running running{*this, std::exchange(f_, nullptr), generation_};
        running.f(std::forward<A>(args)...);
        return true;
    }

private:
    struct Running {
        CallbackSlot& slot;
        Function f;
        std::uint32_t generation;
        Running(CallbackSlot& s, Function fn, std::uint32_t g) : slot(s), f(std::move(fn)), generation(g) {}
        Running(const Running&) = delete;
        Running& operator=(const Running&) = delete;
        ~Running() {
            if (slot.generation_ == generation) slot.f_ = std::move(f);
        }
    };

    Function f_;
    std::uint32_t generation_ = 0;
};

}  // namespace reactor
