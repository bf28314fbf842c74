// SPDX-License-Identifier: MIT
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
// fail in the same conditions: no fd, no loop registration, and no
// process-wide signal (which may belong to another Scheduler). The timer is work (run() waits for the child as it
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
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <reactor/fd_owner.hpp>
#include <reactor/handle.hpp>
#include <reactor/intrusive_list.hpp>
#include <reactor/loop_service.hpp>
#include <reactor/work_hold.hpp>

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

class PidfdWatch;

// The pidfd watches of one loop. They own themselves (a watch is freed once
// it reaped its child); the service only ends those still watching when the
// loop ends: Scheduler::close() and the loop's abandonment alike hand each
// child, not killed, to a reaper thread, its status to nobody (close()
// cancels the pending wait() futures), and close the pidfd now.
class PidfdWatches final : public reactor::LoopService {
public:
    explicit PidfdWatches(reactor::Scheduler& sched) noexcept : LoopService(sched) {}
    void add(PidfdWatch& watch) noexcept { watching_.push_back(watch); }
    void close() override { end_all(); }
    void abandon() noexcept override { end_all(); }

private:
    void end_all() noexcept;
    reactor::IntrusiveList<PidfdWatch> watching_;
};

// One child: its pidfd becomes readable when it exits. Owns itself (self_)
// from start() until it has reaped the child or the loop ends it. If the
// loop cannot watch the pidfd, polls the child (see the top of this file).
// Listed by Scheduler::live() as its fd's owner, by the line that spawned it.
class PidfdWatch final : public std::enable_shared_from_this<PidfdWatch>,
                         private reactor::ListMember<PidfdWatch>,
                         private reactor::FdOwner {
public:
    PidfdWatch(reactor::Scheduler& sched, pid_t pid, int pidfd, ExitCallback on_exit, std::source_location where)
        : sched_(sched), pid_(pid), pidfd_(pidfd), on_exit_(std::move(on_exit)), where_(where) {}
    PidfdWatch(const PidfdWatch&) = delete;
    PidfdWatch& operator=(const PidfdWatch&) = delete;
    ~PidfdWatch() {
        if (pidfd_ >= 0) ::close(pidfd_);
    }

    // Throws if the pidfd cannot be watched (select: fd >= FD_SETSIZE); the
    // caller's shared_ptr then frees the watch, closing the pidfd.
    void start() {
        sched_.add_reader(pidfd_, [this] { on_pidfd_readable(); }, where_);  // self_ keeps `this` alive while registered
        try {
            sched_.set_fd_owner(pidfd_, *this);  // release_pidfd forgets it before closing
        } catch (...) {
            sched_.forget_fd(pidfd_);
            throw;
        }
        sched_.service<PidfdWatches>().add(*this);
        self_ = shared_from_this();
    }

    // The loop ends (PidfdWatches): the child, not killed, goes to a reaper
    // thread, and its status nowhere.
    void end_with_loop() noexcept {
        unlink();
        release_pidfd();
        poll_timer_.cancel();
        reap_in_background(pid_);
        on_exit_ = nullptr;
        auto self = std::move(self_);  // freed as this returns
    }

private:
    friend class reactor::IntrusiveList<PidfdWatch>;
    static constexpr std::chrono::milliseconds kFirstPoll{1};
    static constexpr std::chrono::milliseconds kLongestPoll{50};

    void on_pidfd_readable() {
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

    void describe(int /*fd*/, std::vector<reactor::LiveItem>& out) const override {
        out.push_back(reactor::LiveItem{reactor::LiveItem::Kind::process, fmt::format("pid {}, watched by a pidfd", pid_),
                                        where_, true});
    }

    void schedule_poll() {
        poll_timer_ = sched_.call_later(poll_every_, [this] { poll(); }, where_);
        poll_every_ = std::min(poll_every_ * 2, kLongestPoll);
    }

    void poll() {
        int status = 0;
        pid_t r = try_reap(pid_, status);
        if (r == 0) return schedule_poll();
        finish(status, r < 0 ? reap_failed(pid_, errno) : 0);
    }

    void finish(int status, int error) {
        unlink();
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

    reactor::Scheduler& sched_;
    pid_t pid_;
    int pidfd_;
    ExitCallback on_exit_;
    std::source_location where_;
    reactor::Handle poll_timer_;  // while polling
    std::chrono::milliseconds poll_every_ = kFirstPoll;
    std::shared_ptr<PidfdWatch> self_;
};

void PidfdWatches::end_all() noexcept {
    while (PidfdWatch* w = watching_.front()) w->end_with_loop();  // unlinks it
}

// ---------------------------------------------------------------- SIGCHLD

// The children of one loop watched through SIGCHLD: a service, made on first
// use. The handler is installed only while children are watched (or one is
// about to be spawned), so SIGCHLD is held no longer than needed. Each child
// holds work (run() waits for it as for a pidfd), listed by live() with the
// line that spawned it.
class SigchldWatch final : public reactor::LoopService {
public:
    explicit SigchldWatch(reactor::Scheduler& sched) noexcept : LoopService(sched) {}

    void reserve() {
        if (installed_) return;
        scheduler().add_signal_handler(SIGCHLD, [this] { poll(); });  // may throw: another Scheduler holds it
        installed_ = true;
    }

    void release_if_idle() noexcept {
        if (!children_.empty() || !installed_) return;
        scheduler().remove_signal_handler(SIGCHLD);
        installed_ = false;
    }

    // Throws (and adds nothing) if SIGCHLD is held by another Scheduler
    // (std::logic_error).
    void add(pid_t pid, ExitCallback on_exit, std::source_location where) {
        reserve();
        Child& child = children_[pid];
        try {
            child.on_exit = std::move(on_exit);
            child.hold = scheduler().hold_work(reactor::LiveItem::Kind::process, "watched through SIGCHLD", where);
            // The child may have exited before the handler was there to hear it.
            scheduler().call_soon([this] { poll(); });
        } catch (...) {
            children_.erase(pid);
            throw;
        }
    }

    // Scheduler::close() and the loop's abandonment: the children still
    // running go to reaper threads (close() cancels their wait() futures);
    // SIGCHLD is given back. The watch stays, empty, for the next spawn.
    void close() override { end_all(); }
    void abandon() noexcept override { end_all(); }

private:
    struct Child {
        ExitCallback on_exit;
        reactor::WorkHold hold;
    };

    void end_all() noexcept {
        for (auto& child : children_) reap_in_background(child.first);
        children_.clear();
        release_if_idle();
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
            exited.emplace_back(std::move(it->second.on_exit), std::pair{status, error});
            it = children_.erase(it);
        }
        if (!exited.empty()) release_if_idle();
        for (auto& [on_exit, outcome] : exited) on_exit(outcome.first, outcome.second);  // may spawn again
    }

    std::map<pid_t, Child> children_;
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

void reserve_sigchld(reactor::Scheduler& sched) { sched.service<SigchldWatch>().reserve(); }

void release_sigchld_if_idle(reactor::Scheduler& sched) noexcept {
    if (auto* watch = sched.find_service<SigchldWatch>()) watch->release_if_idle();
}

void watch_child(reactor::Scheduler& sched, pid_t pid, WatchKind kind, bool may_fall_back, ExitCallback on_exit,
                 std::source_location where) {
    if (kind == WatchKind::sigchld) return sched.service<SigchldWatch>().add(pid, std::move(on_exit), where);
    const int pidfd = open_pidfd(pid);
    if (pidfd < 0) {
        const int error = errno;
        if (!pidfd_refused(error)) throw std::system_error(error, std::generic_category(), "spawn_process: pidfd_open");
        note_pidfd_refused(error);  // later spawns go straight to SIGCHLD
        if (!may_fall_back)
            throw std::system_error(error, std::generic_category(), "spawn_process: pidfd_open is not available");
        // The child may have exited already: add() polls once on the loop.
        return sched.service<SigchldWatch>().add(pid, std::move(on_exit), where);
    }
    std::shared_ptr<PidfdWatch> watch;
    try {
        watch = std::make_shared<PidfdWatch>(sched, pid, pidfd, std::move(on_exit), where);
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
