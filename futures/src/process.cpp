// SPDX-License-Identifier: MIT
// Process handles: the exit status and its futures (each through a Promise
// with the caller's line), and signals, which are sent only while the child
// is known not to be reaped (so never to a reused pid).
#include "futures/process.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "futures/errors.hpp"
#include "futures/leaves.hpp"
#include "futures/promise.hpp"
#include "process_core.hpp"

namespace futures {

int exit_status_of(int wait_status) noexcept {
    if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) return -WTERMSIG(wait_status);
    return wait_status;  // stopped or continued: waitpid without WUNTRACED never reports these
}

namespace detail {
namespace {

// How a failed waitpid reaches the wait() futures.
std::system_error wait_error(int err) {
    return std::system_error(err, std::generic_category(),
                             err == ECHILD ? "process: waitpid: the child was reaped elsewhere" : "process: waitpid");
}

}  // namespace

void ExitState::complete(int wait_status, int err) {
    reaped = true;
    error = err;
    status = err == 0 ? exit_status_of(wait_status) : 0;
    auto ready = std::move(waiters);
    for (auto& p : ready) {
        if (!p.is_pending()) continue;  // cancelled by its holder
        if (err != 0)
            p.set_exception(wait_error(err));
        else
            p.set_value(status);
    }
}

void ExitState::watch_lost() noexcept {
    lost = true;
    auto broken = std::move(waiters);  // they break as `broken` goes, naming their wait() lines
}

}  // namespace detail

detail::ProcessCore& Process::core() const {
    if (!core_) throw InvalidStateError("Process: empty handle");
    return *core_;
}

int Process::pid() const { return core().pid(); }
Stream Process::stdin_pipe() const { return core().in; }
Stream Process::stdout_pipe() const { return core().out; }
Stream Process::stderr_pipe() const { return core().err; }

Future<int> Process::wait(std::source_location where) const {
    detail::ExitState& exit = core().exit();
    if (exit.reaped && exit.error != 0)
        return make_exception_future<int>(exit.sched, detail::wait_error(exit.error), where);
    if (exit.reaped) return make_ready_future(exit.sched, exit.status, where);
    Promise<int> promise(exit.sched, where, "process wait");
    Future<int> f = promise.get_future();
    if (exit.lost) return f;  // nobody will ever know the status: `promise` breaks as it goes
    std::erase_if(exit.waiters, [](const Promise<int>& p) { return !p.is_pending(); });  // cancelled ones
    exit.waiters.push_back(std::move(promise));
    return f;
}

std::optional<int> Process::exit_status() const {
    const detail::ExitState& exit = core().exit();
    if (!exit.reaped || exit.error != 0) return std::nullopt;
    return exit.status;
}

bool Process::send_signal(int signo) const {
    detail::ProcessCore& c = core();
    if (c.exit().reaped) return false;
    // Until we reap it the pid stays ours, even once the child is a zombie
    // (kill then succeeds and does nothing).
    if (::kill(c.pid(), signo) != 0) {
        if (errno == EINVAL) throw std::invalid_argument(fmt::format("Process::send_signal: invalid signal {}", signo));
        throw std::system_error(errno, std::generic_category(), fmt::format("Process::send_signal({})", signo));
    }
    return true;
}

}  // namespace futures
