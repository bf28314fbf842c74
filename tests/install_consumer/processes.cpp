// SPDX-License-Identifier: MIT
// Subprocesses from the installed headers: a shell's output and exit status.
#include <cstdio>
#include <string>

#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>

int main() {
    reactor::Scheduler sched;
    futures::ProcessOptions options;
    options.stdout_mode = futures::Stdio::pipe;
    futures::Process child = futures::spawn_process(sched, {"/bin/sh", "-c", "echo from the child; exit 3"}, options);
    const std::string line = futures::run_until_complete(sched, child.stdout_pipe().read_until("\n"));
    const int status = futures::run_until_complete(sched, child.wait());
    std::printf("processes: \"%.*s\", exit status %d\n", static_cast<int>(line.size()) - 1, line.c_str(), status);
    return line == "from the child\n" && status == 3 ? 0 : 1;
}
