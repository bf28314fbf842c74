// The two child watches (process_watch.hpp). Each reaps only its own pids,
// with waitpid(pid, WNOHANG): a waitpid(-1) would steal the statuses of
// children that other parts of the program wait for.
#include "process_watch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434  // the same on every architecture (new syscalls share one table)
#endif

namespace futures::detail {
namespace {

// waitpid(pid, WNOHANG): pid once reaped, 0 while it runs, -1 and errno on error.
pid_t try_reap(pid_t pid, int& status) noexcept {
    pid_t r;
    do {
        r = ::waitpid(pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    return r;
}

int pidfd_open(pid_t pid) noexcept { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

bool pidfd_supported() noexcept {
    static const bool supported = [] {
        int fd = pidfd_open(::getpid());
        if (fd >= 0) ::close(fd);
        return fd >= 0 || errno != ENOSYS;  // EMFILE and the like say nothing about the kernel
    }();
    return supported;
}

// ---------------------------------------------------------------- pidfd

// One child: its pidfd becomes readable when it exits. Owns itself (self_)
// from start() until it has reaped the child or its Scheduler is destroyed.
class PidfdWatch final : public std::enable_shared_from_this<PidfdWatch>, private reactor::SchedulerObserver {
public:
    PidfdWatch(reactor::Scheduler& sched, pid_t pid, int pidfd, ExitCallback on_exit)
        : sched_(sched), pid_(pid), pidfd_(pidfd), on_exit_(std::move(on_exit)) {}
    PidfdWatch(const PidfdWatch&) = delete;
    PidfdWatch& operator=(const PidfdWatch&) = delete;
    ~PidfdWatch() {
        if (pidfd_ >= 0) ::close(pidfd_);
    }

    void start() {
        sched_.add_reader(pidfd_, [this] { on_ready(); });  // self_ keeps `this` alive while registered
        self_ = shared_from_this();
        sched_.add_observer(*this);
    }

private:
    void on_ready() {
        int status = 0;
        pid_t r = try_reap(pid_, status);
        if (r == 0) return;  // readable before the exit was complete: wait again
        const int error = r < 0 ? errno : 0;
        sched_.remove_observer(*this);
        release_pidfd();
        auto self = std::move(self_);  // `this` lives until this function returns
        auto on_exit = std::move(on_exit_);
        on_exit(status, error);
    }

    void release_pidfd() noexcept {
        sched_.forget_fd(pidfd_);
        ::close(pidfd_);
        pidfd_ = -1;
    }

    void on_scheduler_destroyed() noexcept override {
        release_pidfd();
        reap_in_background(pid_);
        on_exit_ = nullptr;
        auto self = std::move(self_);  // freed as this returns
    }

    reactor::Scheduler& sched_;
    pid_t pid_;
    int pidfd_;
    ExitCallback on_exit_;
    std::shared_ptr<PidfdWatch> self_;
};

// ---------------------------------------------------------------- SIGCHLD

// The children of one Scheduler watched through SIGCHLD. Made on first use,
// freed with the Scheduler. The handler is installed only while children are
// watched (or one is about to be spawned), so SIGCHLD is held no longer than needed.
class SigchldWatch final : private reactor::SchedulerObserver {
public:
    static SigchldWatch& of(reactor::Scheduler& sched) {
        std::lock_guard lock(table_mutex());
        auto& slot = table()[&sched];
        if (!slot) slot.reset(new SigchldWatch(sched));
        return *slot;
    }
    static SigchldWatch* find(reactor::Scheduler& sched) noexcept {
        std::lock_guard lock(table_mutex());
        auto it = table().find(&sched);
        return it == table().end() ? nullptr : it->second.get();
    }

    void reserve() {
        if (installed_) return;
        sched_.add_signal_handler(SIGCHLD, [this] { poll(); });  // may throw: another Scheduler holds it
        installed_ = true;
    }

    void release_if_idle() noexcept {
        if (!children_.empty() || !installed_) return;
        sched_.remove_signal_handler(SIGCHLD);
        installed_ = false;
    }

    void add(pid_t pid, ExitCallback on_exit) {
        reserve();
        if (keepalive_[0] < 0) {
            if (::pipe2(keepalive_, O_CLOEXEC) != 0)
                throw std::system_error(errno, std::generic_category(), "spawn_process: pipe2");
        }
        children_.emplace(pid, std::move(on_exit));
        // A reader on a pipe nobody writes to: never ready, but it is work,
        // so run() waits for the children as it does for a pidfd.
        if (children_.size() == 1) sched_.add_reader(keepalive_[0], [] {});
        // The child may have exited before the handler was there to hear it.
        sched_.call_soon([this] { poll(); });
    }

    ~SigchldWatch() {
        for (int fd : keepalive_)
            if (fd >= 0) ::close(fd);
    }

private:
    explicit SigchldWatch(reactor::Scheduler& sched) : sched_(sched) { sched_.add_observer(*this); }

    static std::mutex& table_mutex() {
        static std::mutex m;
        return m;
    }
    static std::unordered_map<reactor::Scheduler*, std::unique_ptr<SigchldWatch>>& table() {
        static std::unordered_map<reactor::Scheduler*, std::unique_ptr<SigchldWatch>> t;
        return t;
    }

    // SIGCHLD coalesces: one delivery may stand for several exits, so every
    // child is tried.
    void poll() {
        std::vector<std::pair<ExitCallback, std::pair<int, int>>> exited;
        for (auto it = children_.begin(); it != children_.end();) {
            int status = 0;
            pid_t r = try_reap(it->first, status);
            if (r == 0) {
                ++it;
                continue;
            }
            exited.emplace_back(std::move(it->second), std::pair{status, r < 0 ? errno : 0});
            it = children_.erase(it);
        }
        if (children_.empty() && !exited.empty()) {
            sched_.remove_reader(keepalive_[0]);
            release_if_idle();
        }
        for (auto& [on_exit, outcome] : exited) on_exit(outcome.first, outcome.second);  // may spawn again
    }

    void on_scheduler_destroyed() noexcept override {
        for (auto& child : children_) reap_in_background(child.first);
        children_.clear();
        // The Scheduler gives SIGCHLD back itself as it goes.
        std::unique_ptr<SigchldWatch> self;
        {
            std::lock_guard lock(table_mutex());
            auto it = table().find(&sched_);
            self = std::move(it->second);
            table().erase(it);
        }
    }  // `self` frees this last

    reactor::Scheduler& sched_;
    std::map<pid_t, ExitCallback> children_;
    int keepalive_[2] = {-1, -1};
    bool installed_ = false;
};

}  // namespace

WatchKind choose_watch(ExitWatch requested) {
    switch (requested) {
    case ExitWatch::sigchld: return WatchKind::sigchld;
    case ExitWatch::pidfd:
        if (!pidfd_supported())
            throw std::system_error(ENOSYS, std::generic_category(), "spawn_process: pidfd_open is not available");
        return WatchKind::pidfd;
    case ExitWatch::automatic: break;
    }
    return pidfd_supported() ? WatchKind::pidfd : WatchKind::sigchld;
}

void reserve_sigchld(reactor::Scheduler& sched) { SigchldWatch::of(sched).reserve(); }

void release_sigchld_if_idle(reactor::Scheduler& sched) noexcept {
    if (auto* watch = SigchldWatch::find(sched)) watch->release_if_idle();
}

void watch_child(reactor::Scheduler& sched, pid_t pid, WatchKind kind, ExitCallback on_exit) {
    if (kind == WatchKind::sigchld) return SigchldWatch::of(sched).add(pid, std::move(on_exit));
    int pidfd = pidfd_open(pid);
    if (pidfd < 0) throw std::system_error(errno, std::generic_category(), "spawn_process: pidfd_open");
    auto watch = std::make_shared<PidfdWatch>(sched, pid, pidfd, std::move(on_exit));
    watch->start();  // on failure (select: fd >= FD_SETSIZE) `watch` closes the pidfd
}

void reap_in_background(pid_t pid) noexcept {
    try {
        std::thread([pid] {
            int status = 0;
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
        }).detach();
    } catch (...) {
        // No thread: the child becomes a zombie until this process exits (init reaps it then).
    }
}

}  // namespace futures::detail
