// SPDX-License-Identifier: MIT
// Internal: watching child processes until they are reaped (see "Reaping" in
// futures/process.hpp). Two mechanisms behind one interface: a pidfd per
// child registered with the loop, or SIGCHLD and a per-Scheduler table of
// children (a pidfd the loop cannot watch is replaced by polling the child
// with waitpid on a timer: see process_watch.cpp). Both are services of the
// loop (reactor::LoopService): they keep the child until it is reaped, and
// hand a child still running to a reaper thread when the loop is closed or
// destroyed. Loop thread only (the reaper threads touch nothing shared).
#pragma once

#include <sys/types.h>

#include <functional>
#include <source_location>

#include <reactor/scheduler.hpp>

#include "futures/process.hpp"

namespace futures::detail {

// Once: the child's waitpid status, or waitpid's errno (ECHILD: someone else
// reaped it; any other: the child is being reaped by reap_in_background).
using ExitCallback = std::function<void(int wait_status, int error)>;

enum class WatchKind : unsigned char { pidfd, sigchld };

// The mechanism for `requested`: for automatic, pidfd unless pidfd_open has
// been found refused (ENOSYS, EPERM, EACCES); a forced pidfd that is refused
// throws std::system_error with that errno.
WatchKind choose_watch(ExitWatch requested);

// Before spawning with WatchKind::sigchld: installs this Scheduler's SIGCHLD
// handler if it is not yet (std::logic_error if another Scheduler holds
// SIGCHLD), so no exit can slip by between the spawn and watch_child().
void reserve_sigchld(reactor::Scheduler& sched);
// After a failed spawn: gives SIGCHLD back if no child is watched.
void release_sigchld_if_idle(reactor::Scheduler& sched) noexcept;

// Watches `pid` (a child just spawned) until it is reaped, then calls
// `on_exit` on the loop thread. With kind pidfd and `may_fall_back`, a
// pidfd_open refused (ENOSYS, EPERM, EACCES) is remembered and the child is
// watched through SIGCHLD instead. Throws std::system_error naming the call
// if pidfd_open fails (EMFILE...), and
// std::logic_error if SIGCHLD is needed and another Scheduler holds it; the
// caller then still owns the child, and nothing of the watch is left.
// `where` is the user's line that spawned the child: Scheduler::live() lists
// the watched child by it.
void watch_child(reactor::Scheduler& sched, pid_t pid, WatchKind kind, bool may_fall_back, ExitCallback on_exit,
                 std::source_location where);

// Kills nothing: waits for `pid` on a detached thread (blocking waitpid), so
// a child outliving its Scheduler never stays a zombie. Best effort: if no
// thread can be started the child is reaped only when this process exits.
void reap_in_background(pid_t pid) noexcept;

}  // namespace futures::detail
