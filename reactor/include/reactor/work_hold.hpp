// SPDX-License-Identifier: MIT
// reactor::WorkHold: keeps Scheduler::run() going while it lives (libuv's
// uv_ref, Asio's executor_work_guard), for work the loop cannot see: a
// result another thread will post, a child process watched by signal, a
// conversation paused while nothing is scheduled.
//
//   reactor::WorkHold hold = sched.hold_work();   // run() will not return...
//   ...
//   hold.release();                               // ...until here
//
// Made by Scheduler::hold_work(), which records the line that asked for it:
// Scheduler::live() lists every hold with that line, and close() reports it
// like any other work still alive and then releases it (the hold then
// holds nothing: its owner may still call release() or destroy it). Movable
// (the hold moves, its place in live() stays), not copyable. An empty hold
// (default-made, moved from, released) holds nothing. Loop thread only: from
// another thread, post the release (call_soon_threadsafe).
#pragma once

#include <source_location>
#include <utility>

#include "reactor/export.hpp"
#include "reactor/intrusive_list.hpp"
#include "reactor/live_item.hpp"

namespace reactor {

class Scheduler;

class REACTOR_API WorkHold : public ListMember<WorkHold> {
public:
    WorkHold() = default;
    WorkHold(WorkHold&& other) noexcept { take(other); }
    WorkHold& operator=(WorkHold&& other) noexcept {
        if (this != &other) {
            release();
            take(other);
        }
        return *this;
    }
    WorkHold(const WorkHold&) = delete;
    WorkHold& operator=(const WorkHold&) = delete;
    ~WorkHold() { release(); }

    // Lets run() end (if nothing else keeps it going). Harmless on an empty hold.
    void release() noexcept;
    bool holds() const noexcept { return sched_ != nullptr; }
    explicit operator bool() const noexcept { return holds(); }

    // What live() says of it.
    LiveItem describe() const;

private:
    friend class Scheduler;
    WorkHold(Scheduler& sched, LiveItem::Kind kind, const char* what, std::source_location where) noexcept
        : sched_(&sched), where_(where), what_(what), kind_(kind) {}
    void take(WorkHold& other) noexcept;

    Scheduler* sched_ = nullptr;
    std::source_location where_;
    const char* what_ = "";  // a string that outlives the hold (a literal)
    LiveItem::Kind kind_ = LiveItem::Kind::hold;
};

}  // namespace reactor
