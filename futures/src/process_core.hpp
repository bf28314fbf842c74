// Internal: the state behind a Process handle. The exit status and its
// waiters live apart (ExitState), shared with the child's watch, so that a
// wait() future still completes after every Process handle is gone. Loop
// thread only.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <vector>

#include <reactor/scheduler.hpp>

#include "futures/future.hpp"
#include "futures/process.hpp"
#include "futures/stream.hpp"

namespace futures::detail {

struct ExitState {
    explicit ExitState(reactor::Scheduler& s) : sched(s) {}
    // From the watch, once: a waitpid status, or an errno (ECHILD).
    void complete(int wait_status, int error);

    reactor::Scheduler& sched;
    bool reaped = false;
    int status = 0;  // encoded (exit_status_of) once reaped without error
    int error = 0;
    std::vector<Future<int>> waiters;
};

class ProcessCore {
public:
    ProcessCore(pid_t pid, std::shared_ptr<ExitState> exit) : pid_(pid), exit_(std::move(exit)) {}

    pid_t pid() const noexcept { return pid_; }
    ExitState& exit() const noexcept { return *exit_; }
    Stream in, out, err;

private:
    pid_t pid_;
    std::shared_ptr<ExitState> exit_;
};

}  // namespace futures::detail
