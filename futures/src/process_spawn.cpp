// SPDX-License-Identifier: MIT
// spawn_process: posix_spawn with the child's standard streams wired as asked
// and every other fd closed but those passed, then the exit watch, then the
// pipe streams. Nothing is left behind on failure: before the spawn, every fd
// opened so far is closed (and SIGCHLD given back); after it, the child is
// killed and reaped.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
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

// The posix_spawn* functions return an errno value instead of setting errno.
void check_spawn_call(int error, const char* call) {
    if (error != 0) throw std::system_error(error, std::generic_category(), fmt::format("spawn_process: {}", call));
}

// posix_spawn's C structures, freed on every path.
struct SpawnSetup {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    SpawnSetup() {
        check_spawn_call(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init");
        if (const int error = posix_spawnattr_init(&attr); error != 0) {
            posix_spawn_file_actions_destroy(&actions);
            check_spawn_call(error, "posix_spawnattr_init");
        }
    }
    ~SpawnSetup() {
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
    }
    SpawnSetup(const SpawnSetup&) = delete;
    SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// Gives SIGCHLD back if spawn_process fails before the child is watched
// (release_sigchld_if_idle does nothing while the Scheduler watches children).
struct SigchldReservation {
    reactor::Scheduler& sched;
    bool done = false;
    ~SigchldReservation() {
        if (!done) detail::release_sigchld_if_idle(sched);
    }
};

// The pass_fds, sorted, without repeats; std::invalid_argument for one that
// is a standard stream or not open.
std::vector<int> checked_pass_fds(std::vector<int> fds) {
    std::sort(fds.begin(), fds.end());
    fds.erase(std::unique(fds.begin(), fds.end()), fds.end());
    for (int fd : fds) {
        if (fd <= STDERR_FILENO)
            throw std::invalid_argument(fmt::format(
                "spawn_process: pass_fds: fd {} is a standard stream (set it with stdin_mode, stdout_mode or "
                "stderr_mode)",
                fd));
        if (::fcntl(fd, F_GETFD) < 0)
            throw std::invalid_argument(fmt::format("spawn_process: pass_fds: fd {} is not open", fd));
    }
    return fds;
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
#define FUTURES_HAVE_ADDCLOSEFROM 1
#endif

// The file actions that leave the child with fds 0, 1, 2 and `pass` (sorted,
// above 2) only. They run in the child in order, after the standard streams'
// actions (whose sources, our pipe ends, are closed here too). Each passed fd
// is dup2()ed onto itself, which clears its close-on-exec flag (glibc 2.29
// and later, as POSIX 2024 asks); each number between 3 and the highest
// passed fd that is not passed is closed one by one (a number that is not
// open costs one failed close(2), which posix_spawn ignores); everything
// above the highest passed fd is closed in one go by closefrom.
void close_other_fds(posix_spawn_file_actions_t& actions, const std::vector<int>& pass) {
    for (int fd : pass)
        check_spawn_call(posix_spawn_file_actions_adddup2(&actions, fd, fd), "posix_spawn_file_actions_adddup2");
    int next = STDERR_FILENO + 1;  // the lowest fd not yet dealt with
    for (int kept : pass) {
        for (; next < kept; ++next)
            check_spawn_call(posix_spawn_file_actions_addclose(&actions, next), "posix_spawn_file_actions_addclose");
        next = kept + 1;
    }
#ifdef FUTURES_HAVE_ADDCLOSEFROM
    check_spawn_call(posix_spawn_file_actions_addclosefrom_np(&actions, next),
                     "posix_spawn_file_actions_addclosefrom_np");
#else
    // Without closefrom: close each fd open here now. Best effort: an fd
    // another thread opens without close-on-exec from now to the spawn stays
    // open in the child.
    DIR* dir = ::opendir("/proc/self/fd");
    if (!dir) throw std::system_error(errno, std::generic_category(), "spawn_process: opendir /proc/self/fd");
    std::vector<int> open_fds;
    while (const dirent* entry = ::readdir(dir)) {
        const int fd = std::atoi(entry->d_name);  // "." and ".." give 0, below `next`
        if (fd >= next && fd != ::dirfd(dir)) open_fds.push_back(fd);
    }
    ::closedir(dir);
    for (int fd : open_fds)
        check_spawn_call(posix_spawn_file_actions_addclose(&actions, fd), "posix_spawn_file_actions_addclose");
#endif
}

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
    // The streams' options are checked now: once the child runs, a refusal
    // would cost it its life.
    if (options.stream.limit == 0) throw std::invalid_argument("spawn_process: stream limit must be positive");
    if (options.stream.connection.read_size == 0)
        throw std::invalid_argument("spawn_process: stream read_size must be positive");
    if (options.stream.connection.low_water > options.stream.connection.high_water)
        throw std::invalid_argument("spawn_process: stream low water mark is above the high water mark");
    for (Stdio mode : {options.stdin_mode, options.stdout_mode, options.stderr_mode})
        if (mode != Stdio::inherit && mode != Stdio::null && mode != Stdio::pipe)
            throw std::invalid_argument("spawn_process: unknown Stdio value");
}

// Kills and reaps a child we cannot watch: SIGKILL cannot be ignored, so the
// wait is short. If waitpid itself fails (not ECHILD: then nobody can reap
// it), a background thread tries again.
void kill_and_reap(pid_t pid) noexcept {
    ::kill(pid, SIGKILL);
    int status = 0;
    pid_t r;
    do {
        r = ::waitpid(pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0 && errno != ECHILD) detail::reap_in_background(pid);
}

}  // namespace

Process spawn_process(reactor::Scheduler& sched, std::vector<std::string> argv, ProcessOptions options,
                      std::source_location where) {
    check_args(argv, options);
    const std::vector<int> pass = checked_pass_fds(std::move(options.pass_fds));
    const detail::WatchKind kind = detail::choose_watch(options.watch);
    if (kind == detail::WatchKind::sigchld) detail::reserve_sigchld(sched);  // before the child can exit
    SigchldReservation reservation{sched};

    SpawnSetup setup;
    const std::array<Stdio, 3> modes{options.stdin_mode, options.stdout_mode, options.stderr_mode};
    std::array<Fd, 3> ours;  // the parent's end of each pipe
    std::vector<Fd> theirs;  // the child's ends, closed here once it has them
    for (int fd = 0; fd < 3; ++fd) {
        if (modes[fd] == Stdio::null) {
            check_spawn_call(posix_spawn_file_actions_addopen(&setup.actions, fd, "/dev/null", O_RDWR, 0),
                             "posix_spawn_file_actions_addopen");
        } else if (modes[fd] == Stdio::pipe) {
            int ends[2];
            if (::pipe2(ends, O_CLOEXEC) != 0)
                throw std::system_error(errno, std::generic_category(), "spawn_process: pipe2");
            // stdin: the child reads ends[0]; stdout, stderr: it writes ends[1].
            const int child_end = fd == 0 ? ends[0] : ends[1];
            ours[fd] = Fd(fd == 0 ? ends[1] : ends[0]);
            theirs.emplace_back(child_end);
            // dup2 clears close-on-exec on the copy
            check_spawn_call(posix_spawn_file_actions_adddup2(&setup.actions, child_end, fd),
                             "posix_spawn_file_actions_adddup2");
        }
    }
    close_other_fds(setup.actions, pass);  // last: after the dup2s from our pipe ends
    // The child starts clean: nothing blocked, every signal at its default
    // (an ignored SIGPIPE would otherwise survive the exec).
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    check_spawn_call(posix_spawnattr_setsigmask(&setup.attr, &none), "posix_spawnattr_setsigmask");
    check_spawn_call(posix_spawnattr_setsigdefault(&setup.attr, &all), "posix_spawnattr_setsigdefault");
    check_spawn_call(posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF),
                     "posix_spawnattr_setflags");

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
        throw std::system_error(err, std::generic_category(),
                                fmt::format("spawn_process: cannot run '{}'", argv.front()));
    }

    auto exit = std::make_shared<detail::ExitState>(sched, where);
    try {
        // automatic: falls back to SIGCHLD if pidfd_open turns out to be refused.
        // The ticket tells the exit state if the watch drops the callback unrun.
        detail::watch_child(sched, pid, kind, options.watch == ExitWatch::automatic,
                            [ticket = std::make_shared<detail::ExitTicket>(exit)](
                                int status, int error) { ticket->exit->complete(status, error); },
                            where);
    } catch (...) {
        kill_and_reap(pid);
        throw;  // `reservation` gives SIGCHLD back
    }
    reservation.done = true;
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
