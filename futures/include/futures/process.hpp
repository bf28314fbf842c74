// SPDX-License-Identifier: MIT
// futures/process.hpp: child processes (asyncio's create_subprocess_exec,
// libuv's uv_spawn): a program started with posix_spawn, its standard streams
// inherited, sent to /dev/null or exposed as futures::Stream pipes, and its
// exit status as a Future<int>. Loop thread only.
//
// Exit status encoding (asyncio's returncode): 0..255 for a normal exit
// (exit(3)'s code), -N for a child ended by signal N (-15 after terminate(),
// -9 after kill()). exit_status_of() decodes a raw waitpid status the same way.
//
// Reaping. The library reaps every child it starts, and only those
// (waitpid(pid), never waitpid(-1): other children of the program are left to
// their owners). The exit is watched through a pidfd (pidfd_open, Linux 5.3
// and later), registered with the loop; without pidfd support, through
// SIGCHLD (Scheduler::add_signal_handler) and waitpid(pid, WNOHANG) for each
// child of this Scheduler. If the loop cannot watch a child's pidfd
// (epoll_ctl failing with ENOMEM or ENOSPC after spawn_process returned), the
// watch closes it and polls the child with waitpid(pid, WNOHANG) on a timer
// instead (1 ms, then doubling up to 50 ms): nothing is lost, the status only
// comes up to 50 ms later. The watch owns itself: dropping every Process
// handle early changes nothing, the child is still reaped when it exits (its
// status then goes nowhere). A child being watched counts as work, so run()
// returns only once every child it started has been reaped. If the Scheduler
// is closed (Scheduler::close()) or destroyed while a child still runs, the
// child is left running and a detached thread waits for it (blocking
// waitpid, as asyncio's ThreadedChildWatcher does), so it never lingers as a
// zombie either; its status is discarded (close() cancels the pending wait()
// futures), and the watch's pidfd is closed at once.
//
// Errors at spawn: a program that cannot be run (not found, not executable)
// throws std::system_error at spawn_process(), naming the program, with
// posix_spawn's errno (ENOENT, EACCES...): nothing was started. Bad arguments
// throw std::invalid_argument (see spawn_process). A system call that fails
// while setting the child up throws std::system_error naming the call
// ("spawn_process: pipe2", "spawn_process: pidfd_open"...); nothing is left
// behind: the fds opened so far are closed, and a child already started is
// killed and reaped before the exception leaves spawn_process.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/future.hpp"
#include "futures/stream.hpp"

namespace futures {

// What one standard stream of the child is connected to.
enum class Stdio : std::uint8_t {
    inherit,  // this process's own fd (the default)
    null,     // /dev/null: reads see EOF at once, writes vanish (asyncio's DEVNULL)
    pipe,     // a pipe to this process, as a Stream (Process::stdin_pipe()...)
};

// How the exit is noticed. automatic: a pidfd where pidfd_open works, else
// SIGCHLD (pidfd_open failing with ENOSYS, a kernel before 5.3, or with EPERM
// or EACCES, a sandbox's seccomp filter, switches to SIGCHLD for good; any
// other failure, such as EMFILE, is reported). The other two force one (tests;
// pidfd throws std::system_error with pidfd_open's errno, ENOSYS on a kernel
// without it). SIGCHLD is process-wide: one Scheduler at a time may use it
// (Scheduler::add_signal_handler throws std::logic_error for a second), and
// it is released once that Scheduler has no child left.
enum class ExitWatch : std::uint8_t { automatic, pidfd, sigchld };

struct ProcessOptions {
    Stdio stdin_mode = Stdio::inherit;
    Stdio stdout_mode = Stdio::inherit;
    Stdio stderr_mode = Stdio::inherit;
    // The child's whole environment, "NAME=value" each; none: this process's.
    std::optional<std::vector<std::string>> environment;
    // For the pipes' streams (buffer limit, water marks, deadlines).
    StreamOptions stream;
    ExitWatch watch = ExitWatch::automatic;
    // Fds of this process that the child keeps open, each at the same number,
    // whether or not they are close-on-exec here (Python's pass_fds). Every
    // other fd above 2 is closed in the child, close-on-exec or not (Python's
    // close_fds=True). Each must be open and above 2 (0, 1 and 2 are set by
    // the modes above), else std::invalid_argument; repeats are harmless.
    // Closing is race-free (posix_spawn closes in the child, after the fork),
    // and costs one close(2) per unpassed number below the highest passed fd:
    // pass low numbers.
    std::vector<int> pass_fds;
};

namespace detail {
class ProcessCore;
}

// A handle to one child (copies share it). Dropping the last handle neither
// kills nor waits for the child (see "Reaping" above); the pipe streams live
// on while the user keeps a copy of them (a Stream closes when its last
// handle goes).
class REACTOR_API Process {
public:
    Process() = default;  // empty: every member but valid() throws InvalidStateError
    bool valid() const noexcept { return static_cast<bool>(core_); }

    int pid() const;
    // The pipe to the child's stdin (write; write_eof() or close() gives it
    // EOF), from its stdout and stderr (read). An empty Stream (valid() false)
    // for a stream that is not Stdio::pipe.
    Stream stdin_pipe() const;
    Stream stdout_pipe() const;
    Stream stderr_pipe() const;

    // The exit status (see the encoding above), once the child has exited and
    // been reaped. Every call gets its own future; all complete together.
    // Never fails, except with std::system_error if waitpid fails: ECHILD if
    // something else in the program reaped the child first (a waitpid(-1)
    // elsewhere); any other errno (the kernel refusing) also fails it, and
    // the child is then reaped by a background thread (see "Reaping"). EINTR
    // is not a failure: the call is made again. The future carries `where`
    // (your line) as its origin, for futures::all_tasks() and reports. If
    // the exit can no longer be known (Scheduler::close() or the Scheduler's
    // destruction handed the child to a reaper thread), it is cancelled with
    // a futures::BrokenPromise naming that line; so is a wait() made after.
    [[nodiscard]] Future<int> wait(std::source_location where = std::source_location::current()) const;
    // The status if the child has been reaped, else none (asyncio's returncode).
    std::optional<int> exit_status() const;

    // Sends a signal; false (nothing sent) once the child has been reaped, so
    // a pid reused by another process is never signalled. A number kill(2)
    // refuses throws std::invalid_argument.
    bool send_signal(int signo) const;
    bool terminate() const { return send_signal(15); }  // SIGTERM
    bool kill() const { return send_signal(9); }        // SIGKILL

private:
    friend Process spawn_process(reactor::Scheduler&, std::vector<std::string>, ProcessOptions, std::source_location);
    explicit Process(std::shared_ptr<detail::ProcessCore> core) : core_(std::move(core)) {}
    detail::ProcessCore& core() const;
    std::shared_ptr<detail::ProcessCore> core_;
};

// Starts argv[0] with arguments argv (argv[0] included, as the program sees
// it). A name without '/' is looked up in PATH (posix_spawnp), as a shell
// would. The child starts with every signal at its default action and none
// blocked (so a SIGPIPE or SIGINT ignored or handled here does not leak into
// it), and only fds 0, 1 and 2 open, plus options.pass_fds: every other fd
// of this process is closed in the child, including those without
// close-on-exec (posix_spawn_file_actions_addclosefrom_np, glibc 2.34).
// Throws std::invalid_argument for an empty argv, an argument or environment
// entry containing '\0', an environment entry without '=', bad stream
// options or a bad pass_fds entry (all checked before anything starts);
// std::system_error naming the program if it cannot be run (ENOENT, EACCES...)
// or naming the call if a pipe, /dev/null or the exit watch cannot be set up
// (EMFILE...); std::logic_error if SIGCHLD is needed and another Scheduler
// holds it. `where` (your line) is kept as the child's spawn site.
[[nodiscard]] REACTOR_API Process spawn_process(reactor::Scheduler& sched, std::vector<std::string> argv,
                                    ProcessOptions options = {},
                                    std::source_location where = std::source_location::current());

// A waitpid(2) status as exit_status encodes it: the exit code, or -signal.
REACTOR_API int exit_status_of(int wait_status) noexcept;

}  // namespace futures
