// SPDX-License-Identifier: MIT
// futures::next_signal: the next of some signals the process receives, as a
// future (asyncio's loop.add_signal_handler with a future set by the handler).
//
//   futures::Future<int> stop = futures::next_signal(sched, {SIGINT, SIGTERM});
//   ...
//   int signo = futures::run_until_complete(sched, stop);   // SIGINT or SIGTERM
//
// Done with the number of the first of `signals` delivered after the call
// (also one that arrives before the loop runs again: a signal is never lost).
// Built on Scheduler::add_signal_handler: the handler runs on the loop
// thread, never in signal context, and every wait of this Scheduler that
// includes that signal completes with it (waits share the Scheduler's one
// handler per signal). While no wait needs a signal any more (it was
// delivered, or every wait for it was cancelled) its handler is removed and
// the disposition it replaced is back: a second Ctrl-C after the first one
// was handled kills the program, as it would without the loop, unless
// somebody waits for it again.
//
// A pending wait is work: it keeps run() going (a WorkHold, listed by
// Scheduler::live() as this line's future), so that
// run_until_complete(sched, next_signal(...)) waits for the signal; cancel
// it when nothing waits for it any more. Cancelling it removes the handlers
// nobody else needs; Scheduler::close() cancels it too. Dropping every
// handle does not: a chain built on it (next_signal(...).then(f)) still
// runs when the signal comes.
//
// Bad input throws here and registers nothing: an empty list, a number
// add_signal_handler refuses (std::invalid_argument: not a signal, SIGKILL,
// SIGSTOP, a fault signal), a signal another live Scheduler handles
// (std::logic_error). A signal that this Scheduler already handles through
// add_signal_handler must not be waited for: the wait takes the Scheduler's
// one slot for it, replacing that handler, and removes it when done.
// Loop thread only.
#pragma once

#include <initializer_list>
#include <source_location>
#include <span>

#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/future.hpp"

namespace futures {

[[nodiscard]] REACTOR_API Future<int> next_signal(reactor::Scheduler& sched, std::span<const int> signals,
                                                  std::source_location where = std::source_location::current());

[[nodiscard]] inline Future<int> next_signal(reactor::Scheduler& sched, std::initializer_list<int> signals,
                                             std::source_location where = std::source_location::current()) {
    return next_signal(sched, std::span<const int>(signals.begin(), signals.size()), where);
}

}  // namespace futures
