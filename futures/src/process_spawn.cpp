// spawn_process: posix_spawn with the child's standard streams wired as asked,
// then the exit watch, then the pipe streams. Nothing is left behind on
// failure: before the spawn, every fd opened so far is closed; after it, the
// child is killed and reaped.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "futures/process.hpp"
#include "process_core.hpp"
#include "process_watch.hpp"

extern char** environ;

namespace futures {
namespace {

class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd& operator=(Fd&& o) noexcept {
        std::swap(fd_, o.fd_);
        return *this;
    }
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }

private:
    int fd_ = -1;
};

// posix_spawn's C structures, freed on every path.
struct SpawnSetup {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    SpawnSetup() {
        posix_spawn_file_actions_init(&actions);
        posix_spawnattr_init(&attr);
    }
    ~SpawnSetup() {
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
    }
    SpawnSetup(const SpawnSetup&) = delete;
    SpawnSetup& operator=(const SpawnSetup&) = delete;
};

void check_no_nul(const std::string& s, const char* what) {
    if (s.find('\0') != std::string::npos)
        throw std::invalid_argument(fmt::format("spawn_process: {} contains a NUL byte", what));
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

void check_args(const std::vector<std::string>& argv, const ProcessOptions& options) {
    if (argv.empty() || argv.front().empty()) throw std::invalid_argument("spawn_process: no program given");
    for (std::size_t i = 0; i < argv.size(); ++i) check_no_nul(argv[i], i == 0 ? "the program name" : "an argument");
    if (options.environment) {
        for (const auto& entry : *options.environment) {
            check_no_nul(entry, "an environment entry");
            if (entry.find('=') == std::string::npos || entry.front() == '=')
                throw std::invalid_argument(
                    fmt::format("spawn_process: environment entry '{}' is not NAME=value", entry));
        }
    }
    if (options.stream.limit == 0) throw std::invalid_argument("spawn_process: stream limit must be positive");
    for (Stdio mode : {options.stdin_mode, options.stdout_mode, options.stderr_mode})
        if (mode != Stdio::inherit && mode != Stdio::null && mode != Stdio::pipe)
            throw std::invalid_argument("spawn_process: unknown Stdio value");
}

// Kills and reaps a child we cannot watch: SIGKILL cannot be ignored, so the wait is short.
void kill_and_reap(pid_t pid) noexcept {
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

}  // namespace

Process spawn_process(reactor::Scheduler& sched, std::vector<std::string> argv, ProcessOptions options) {
    check_args(argv, options);
    const detail::WatchKind kind = detail::choose_watch(options.watch);
    if (kind == detail::WatchKind::sigchld) detail::reserve_sigchld(sched);  // before the child can exit

    SpawnSetup setup;
    const std::array<Stdio, 3> modes{options.stdin_mode, options.stdout_mode, options.stderr_mode};
    std::array<Fd, 3> ours;  // the parent's end of each pipe
    std::vector<Fd> theirs;  // the child's ends, closed here once it has them
    for (int fd = 0; fd < 3; ++fd) {
        if (modes[fd] == Stdio::null) {
            posix_spawn_file_actions_addopen(&setup.actions, fd, "/dev/null", O_RDWR, 0);
        } else if (modes[fd] == Stdio::pipe) {
            int ends[2];
            if (::pipe2(ends, O_CLOEXEC) != 0) {
                const int err = errno;
                detail::release_sigchld_if_idle(sched);
                throw std::system_error(err, std::generic_category(), "spawn_process: pipe2");
            }
            // stdin: the child reads ends[0]; stdout, stderr: it writes ends[1].
            const int child_end = fd == 0 ? ends[0] : ends[1];
            ours[fd] = Fd(fd == 0 ? ends[1] : ends[0]);
            theirs.emplace_back(child_end);
            posix_spawn_file_actions_adddup2(&setup.actions, child_end, fd);  // dup2 clears close-on-exec
        }
    }
    // The child starts clean: nothing blocked, every signal at its default
    // (an ignored SIGPIPE would otherwise survive the exec).
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&setup.attr, &none);
    posix_spawnattr_setsigdefault(&setup.attr, &all);
    posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<std::string> env_storage = options.environment.value_or(std::vector<std::string>{});
    std::vector<char*> env = c_strings(env_storage);
    std::vector<char*> args = c_strings(argv);
    char** envp = options.environment ? env.data() : environ;
    pid_t pid = -1;
    const bool search_path = argv.front().find('/') == std::string::npos;
    const int err = search_path ? ::posix_spawnp(&pid, args[0], &setup.actions, &setup.attr, args.data(), envp)
                                : ::posix_spawn(&pid, args[0], &setup.actions, &setup.attr, args.data(), envp);
    theirs.clear();  // the child has its copies (or never will)
    if (err != 0) {
        detail::release_sigchld_if_idle(sched);
        throw std::system_error(err, std::generic_category(), fmt::format("spawn_process: cannot run '{}'", argv.front()));
    }

    auto exit = std::make_shared<detail::ExitState>(sched);
    try {
        detail::watch_child(sched, pid, kind, [exit](int status, int error) { exit->complete(status, error); });
    } catch (...) {
        kill_and_reap(pid);
        detail::release_sigchld_if_idle(sched);
        throw;
    }
    auto core = std::make_shared<detail::ProcessCore>(pid, exit);
    try {
        if (ours[0].get() >= 0) core->in = Stream::adopt(sched, ours[0].release(), options.stream);
        if (ours[1].get() >= 0) core->out = Stream::adopt(sched, ours[1].release(), options.stream);
        if (ours[2].get() >= 0) core->err = Stream::adopt(sched, ours[2].release(), options.stream);
    } catch (...) {
        ::kill(pid, SIGKILL);  // the watch reaps it
        throw;
    }
    return Process(std::move(core));
}

}  // namespace futures
