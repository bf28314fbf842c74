// The two child watches (process_watch.hpp). Each reaps only its own pids,
// with waitpid(pid, WNOHANG): a waitpid(-1) would steal the statuses of
// children that other parts of the program wait for.
//
// A pidfd the loop cannot watch. PidfdWatch is the pidfd's reactor::FdOwner:
// when the loop gives up on it (epoll_ctl failing with ENOMEM or ENOSPC, or
// the number found closed behind our back: EBADF), the watch closes the
// pidfd (not after EBADF: the number may be another file's by then) and
// polls the child instead, waitpid(pid, WNOHANG) on a timer, 1 ms after it
// hears and then at doubling intervals up to 50 ms. Nothing is lost: the
// child is reaped and wait() gets its real status, only up to 50 ms later.
// Polling is chosen over the SIGCHLD watch because it needs nothing that may
// fail in the same conditions: no fd, no loop registration (the SIGCHLD
// watch's keep-alive pipe would need another epoll_ctl, which fails as the
// first did under ENOSPC), and no process-wide signal (which may belong to
// another Scheduler). The timer is work (run() waits for the child as it
// did for the pidfd), and close() or the Scheduler's destruction cancel it
// and hand the child to a reaper thread, as for a pidfd.
#include "process_watch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#if __has_include(<sys/pidfd.h>)  // glibc 2.36 and later
// glibc 2.36's header declares pidfd_open without extern "C" (2.37 adds it):
// say it here, harmless where the header says it too.
extern "C" {
#include <sys/pidfd.h>
}
#else
#include <sys/syscall.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <reactor/fd_owner.hpp>
#include <reactor/handle.hpp>

#if !__has_include(<sys/pidfd.h>) && !defined(SYS_pidfd_open)
#define SYS_pidfd_open 434  // the same on every architecture (new syscalls share one table)
#endif

namespace futures::detail {
namespace {

// waitpid(pid, WNOHANG): pid once reaped, 0 while it runs, -1 and errno
// (never EINTR) on error.
pid_t try_reap(pid_t pid, int& status) noexcept {
    pid_t r;
    do {
        r = ::waitpid(pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    return r;
}

// The error a failed try_reap hands on. Unless the child is gone for us
// (ECHILD), it still needs reaping: a thread does it, so that a waitpid
// refused once leaves no zombie.
int reap_failed(pid_t pid, int error) noexcept {
    if (error != ECHILD) reap_in_background(pid);
    return error;
}

// A close-on-exec pidfd for `pid`, or -1 and errno.
int open_pidfd(pid_t pid) noexcept {
#if __has_include(<sys/pidfd.h>)
    return ::pidfd_open(pid, 0);
#else
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // glibc before 2.36
#endif
}

// pidfd_open refused for good: a kernel without it (ENOSYS, before 5.3), or a
// sandbox's seccomp filter (EPERM, EACCES). Other errors (EMFILE, ENOMEM...)
// say nothing about the kernel.
bool pidfd_refused(int error) noexcept { return error == ENOSYS || error == EPERM || error == EACCES; }

// What is known of pidfd_open in this process: 0 not yet, -1 it works, or
// the errno it was refused with (pidfd_refused). Shared by every Scheduler.
std::atomic<int> pidfd_state{0};

void note_pidfd_refused(int error) noexcept { pidfd_state.store(error, std::memory_order_relaxed); }

// 0 if pidfd_open can be used (or nothing says otherwise yet), else the errno
// it is refused with. Probes once, on this process's own pid; a probe that
// fails for another reason (EMFILE) is not remembered.
int pidfd_refusal() noexcept {
    int state = pidfd_state.load(std::memory_order_relaxed);
    if (state == 0) {
        const int fd = open_pidfd(::getpid());
        if (fd >= 0) {
            ::close(fd);
            state = -1;
        } else if (pidfd_refused(errno)) {
            state = errno;
        }
        if (state != 0) pidfd_state.store(state, std::memory_order_relaxed);
    }
    return state > 0 ? state : 0;
}

// ---------------------------------------------------------------- pidfd

// One child: its pidfd becomes readable when it exits. Owns itself (self_)
// from start() until it has reaped the child or its Scheduler is destroyed.
// If the loop cannot watch the pidfd, polls the child (see the top of this file).
class PidfdWatch final : public std::enable_shared_from_this<PidfdWatch>,
                         private reactor::SchedulerObserver,
                         private reactor::FdOwner {
public:
    PidfdWatch(reactor::Scheduler& sched, pid_t pid, int pidfd, ExitCallback on_exit)
        : sched_(sched), pid_(pid), pidfd_(pidfd), on_exit_(std::move(on_exit)) {}
    PidfdWatch(const PidfdWatch&) = delete;
    PidfdWatch& operator=(const PidfdWatch&) = delete;
    ~PidfdWatch() {
        if (pidfd_ >= 0) ::close(pidfd_);
    }

    // Throws if the pidfd cannot be watched (select: fd >= FD_SETSIZE); the
    // caller's shared_ptr then frees the watch, closing the pidfd.
    void start() {
        sched_.add_reader(pidfd_, [this] { on_ready(); });  // self_ keeps `this` alive while registered
        try {
            sched_.set_fd_owner(pidfd_, *this);  // release_pidfd forgets it before closing
            sched_.add_observer(*this);
        } catch (...) {
            sched_.forget_fd(pidfd_);
            throw;
        }
        self_ = shared_from_this();
    }

private:
    static constexpr std::chrono::milliseconds kFirstPoll{1};
    static constexpr std::chrono::milliseconds kLongestPoll{50};

    void on_ready() {
        int status = 0;
        pid_t r = try_reap(pid_, status);
        if (r == 0) return;  // readable before the exit was complete: wait again
        finish(status, r < 0 ? reap_failed(pid_, errno) : 0);
    }

    // The loop stopped watching the pidfd and ended our ownership (FdOwner):
    // from now on the child is polled.
    void on_unwatchable(int /*fd*/, std::error_code error) override {
        if (error.value() == EBADF) {
            pidfd_ = -1;  // closed behind our back: the number is not ours to close any more
        } else {
            release_pidfd();
        }
        // The first look is a timer too, not a call from here: the exit
        // callback must not run (and perhaps spawn a child whose pidfd gets
        // this number) while the loop is still tidying up after this report.
        poll_every_ = kFirstPoll;
        schedule_poll();
    }

    void schedule_poll() {
        poll_timer_ = sched_.call_later(poll_every_, [this] { poll(); });
        poll_every_ = std::min(poll_every_ * 2, kLongestPoll);
    }

    void poll() {
        int status = 0;
        pid_t r = try_reap(pid_, status);
        if (r == 0) return schedule_poll();
        finish(status, r < 0 ? reap_failed(pid_, errno) : 0);
    }

    void finish(int status, int error) {
        sched_.remove_observer(*this);
        release_pidfd();
        poll_timer_.cancel();
        auto self = std::move(self_);  // `this` lives until this function returns
        auto on_exit = std::move(on_exit_);
        on_exit(status, error);
    }

    void release_pidfd() noexcept {
        if (pidfd_ < 0) return;
        sched_.forget_fd(pidfd_);
        ::close(pidfd_);
        pidfd_ = -1;
    }

    // Scheduler::close() ends the watch as destruction does: the child, not
    // killed, goes to a reaper thread, and its status nowhere (close()
    // cancels the pending wait() futures). The pidfd is closed now, not with
    // the Scheduler.
    void on_scheduler_closing() override {
        sched_.remove_observer(*this);
        end_with_loop();
    }
    void on_scheduler_destroyed() noexcept override { end_with_loop(); }

    void end_with_loop() noexcept {
        release_pidfd();
        poll_timer_.cancel();
        reap_in_background(pid_);
        on_exit_ = nullptr;
        auto self = std::move(self_);  // freed as this returns
    }

    reactor::Scheduler& sched_;
    pid_t pid_;
    int pidfd_;
    ExitCallback on_exit_;
    reactor::Handle poll_timer_;  // while polling
    std::chrono::milliseconds poll_every_ = kFirstPoll;
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

    // Throws (and adds nothing) if SIGCHLD is held by another Scheduler
    // (std::logic_error), or if the keep-alive pipe cannot be made or watched.
    void add(pid_t pid, ExitCallback on_exit) {
        reserve();
        if (keepalive_[0] < 0) {
            if (::pipe2(keepalive_, O_CLOEXEC) != 0)
                throw std::system_error(errno, std::generic_category(), "spawn_process: pipe2");
        }
        // A reader on a pipe nobody writes to: never ready, but it is work,
        // so run() waits for the children as it does for a pidfd.
        if (children_.empty()) sched_.add_reader(keepalive_[0], [] {});
        try {
            children_.emplace(pid, std::move(on_exit));
            // The child may have exited before the handler was there to hear it.
            sched_.call_soon([this] { poll(); });
        } catch (...) {
            children_.erase(pid);
            if (children_.empty()) sched_.remove_reader(keepalive_[0]);
            throw;
        }
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
            const int error = r < 0 ? reap_failed(it->first, errno) : 0;
            exited.emplace_back(std::move(it->second), std::pair{status, error});
            it = children_.erase(it);
        }
        if (children_.empty() && !exited.empty()) {
            sched_.remove_reader(keepalive_[0]);
            release_if_idle();
        }
        for (auto& [on_exit, outcome] : exited) on_exit(outcome.first, outcome.second);  // may spawn again
    }

    // Scheduler::close(): as at destruction, the children still running go
    // to reaper threads (close() cancels their wait() futures); SIGCHLD is
    // given back. The watch stays, empty, for the next spawn.
    void on_scheduler_closing() override {
        for (auto& child : children_) reap_in_background(child.first);
        if (!children_.empty()) sched_.remove_reader(keepalive_[0]);
        children_.clear();
        release_if_idle();
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
        if (const int refused = pidfd_refusal())
            throw std::system_error(refused, std::generic_category(), "spawn_process: pidfd_open is not available");
        return WatchKind::pidfd;
    case ExitWatch::automatic: break;
    }
    return pidfd_refusal() != 0 ? WatchKind::sigchld : WatchKind::pidfd;
}

void reserve_sigchld(reactor::Scheduler& sched) { SigchldWatch::of(sched).reserve(); }

void release_sigchld_if_idle(reactor::Scheduler& sched) noexcept {
    if (auto* watch = SigchldWatch::find(sched)) watch->release_if_idle();
}

void watch_child(reactor::Scheduler& sched, pid_t pid, WatchKind kind, bool may_fall_back, ExitCallback on_exit) {
    if (kind == WatchKind::sigchld) return SigchldWatch::of(sched).add(pid, std::move(on_exit));
    const int pidfd = open_pidfd(pid);
    if (pidfd < 0) {
        const int error = errno;
        if (!pidfd_refused(error)) throw std::system_error(error, std::generic_category(), "spawn_process: pidfd_open");
        note_pidfd_refused(error);  // later spawns go straight to SIGCHLD
        if (!may_fall_back)
            throw std::system_error(error, std::generic_category(), "spawn_process: pidfd_open is not available");
        // The child may have exited already: add() polls once on the loop.
        return SigchldWatch::of(sched).add(pid, std::move(on_exit));
    }
    std::shared_ptr<PidfdWatch> watch;
    try {
        watch = std::make_shared<PidfdWatch>(sched, pid, pidfd, std::move(on_exit));
    } catch (...) {
        ::close(pidfd);
        throw;
    }
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
