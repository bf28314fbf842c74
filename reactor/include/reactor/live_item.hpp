// SPDX-License-Identifier: MIT
// reactor::LiveItem: one thing still alive on a Scheduler (a timer, an fd
// waiter, a connection, a task, a pending future...), named by the line that
// created it: the user's line, never one inside the library where the user's
// is known. What
// Scheduler::live() lists and Scheduler::close() reports: libuv's tests end
// every case with such a check, and so can a user's program.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>

#include <reactor/export.hpp>

namespace reactor {

struct REACTOR_API LiveItem {
    enum class Kind : std::uint8_t {
        ready,           // a callback in the ready queue (call_soon, or due)
        timer,           // call_later / call_at, not yet due
        periodic,        // call_every
        reader,          // an fd waiter, read direction
        writer,          // an fd waiter, write direction
        posted,          // call_soon_threadsafe, not yet run
        signal_handler,  // add_signal_handler (not work, but alive)
        hold,            // a WorkHold (Scheduler::hold_work)
        listener,        // a Listener accepting connections
        connecting,      // a connect in progress (reactor::connect)
        connection,      // an open Connection (it owns itself)
        udp_socket,      // a UdpSocket receiving
        process,         // a child process watched until it is reaped
        task,            // a futures task not yet complete
        future,          // a future nothing else names: Future(sched) not yet completed by hand, a parked Queue::get
        job,             // a ThreadPool job whose result has not come back yet
        scope,           // a futures::Scope not yet settled, and each live child of one (a tree, parents first)
        other,           // anything else a service describes
    };

    Kind kind = Kind::other;
    std::string detail;  // "fd 7", "due in 1.500 s", "state reading, waiting on the Future created at x.cpp:3"
    std::source_location where;  // the line that created or scheduled it, if where_known
    bool where_known = false;

    // One line: "timer (due in 1.500 s) scheduled at app.cpp:12".
    std::string to_string() const;
};

REACTOR_API std::string_view to_string(LiveItem::Kind kind) noexcept;

}  // namespace reactor
