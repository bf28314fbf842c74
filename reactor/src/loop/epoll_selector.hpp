// SPDX-License-Identifier: MIT
// Internal: the epoll backend, exposed as a concrete class so tests can read
// its statistics and shorten its closed-fd check. Users get it through
// make_selector(Backend::epoll) / make_epoll_selector(). Owns its epoll fd,
// never the fds it watches. Loop thread only.
//
// The rule: the owner of an fd needs no rule. It may close a watched fd at any
// time (inside a callback, between run() calls, with or without removing its
// waiters first) and reuse the number for a new file; forget() is only a hint.
// How each case is kept right:
//
// * Registrations are persistent and level-triggered. set_interest() only
//   records what the loop wants; wait() first applies the changes with
//   epoll_ctl, so a persistent waiter (add_reader, add_writer) costs no system
//   call per event.
// * Every set_interest() with an interest other than none names the file the
//   fd refers to now, and is checked with the kernel at the next wait even if
//   the interest looks unchanged: EPOLL_CTL_MOD, and on ENOENT (the kernel
//   dropped the old file's registration when its last reference was closed,
//   or the number now refers to another file) EPOLL_CTL_ADD. A reused number
//   is therefore always watched; the price is one epoll_ctl per new
//   registration, i.e. per event for a one-shot waiter that re-arms itself
//   (libev's ev_io_set and libuv's uv__io_start make the same trade, but leave
//   the "this may be a new fd" call to the user). A registration removed and
//   never renewed is deleted (EPOLL_CTL_DEL) at the next wait.
// * A watched fd closed behind our back is found (and reported as
//   FdEvent{fd, error = EBADF}, then forgotten) by its next epoll_ctl, or by a
//   check of the registered fds with fcntl(F_GETFD), at most
//   closed_fd_checks_per_interval of them, in turn, about once per
//   closed_fd_check_interval, busy or idle: a blocking wait is cut to end when
//   the check is due, and a loop that never blocks reads the clock every few
//   waits to see whether it is. This finds a registration the kernel dropped
//   silently (the file's last reference went away), and one that lives on
//   because the file is still open elsewhere (a dup, a child process), whose
//   events would otherwise call the owner's waiter for an fd it closed.
// * Each registration carries (generation << 32 | fd) as its event data, and
//   the generation changes with every epoll_ctl (libev's "egen"). An event
//   whose generation is not the fd's current one comes from a registration we
//   no longer know (a closed fd whose file lives on, which epoll_ctl cannot
//   name any more): it is never reported, and the epoll set is rebuilt from
//   what we know, so the loop cannot spin on it.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "open_fd_check.hpp"
#include "reactor/selector.hpp"

namespace reactor {

class EpollSelector final : public Selector {
public:
    struct Options {
        // How often registered fds are checked for having been closed (one
        // fcntl each). Short enough that a closed fd is reported promptly,
        // long enough that the check stays a small fraction of a busy loop.
        std::chrono::nanoseconds closed_fd_check_interval = std::chrono::seconds(1);
        // How many registered fds one check looks at, at most (one fcntl
        // each); the next check goes on where this one stopped. The check
        // then costs a bounded number of system calls per interval however
        // many fds the loop watches (a server holding a million idle
        // connections would otherwise spend most of its CPU on it), and an
        // fd closed behind our back is found within
        // ceil(watched fds / this) intervals.
        std::size_t closed_fd_checks_per_interval = 1024;
    };

    EpollSelector();
    explicit EpollSelector(Options options);
    ~EpollSelector() override;
    EpollSelector(const EpollSelector&) = delete;
    EpollSelector& operator=(const EpollSelector&) = delete;

    std::string_view name() const noexcept override { return "epoll"; }
    void set_interest(int fd, Interest interest) override;
    void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<FdEvent>& out) override;
    bool has_pending_changes() const noexcept override { return !changes_.empty(); }
    bool may_report_closed_fds() const noexcept override { return true; }
    void forget(int fd) noexcept override;  // an immediate EPOLL_CTL_DEL
    bool watch_wakeup(int fd) override;      // edge-triggered: never read back

    // ---- statistics (tests, benchmarks) ----
    std::uint64_t ctl_calls() const noexcept { return ctl_calls_; }       // epoll_ctl calls made so far
    std::uint64_t closed_fd_checks() const noexcept { return closed_fd_checks_; }  // fcntl passes over registered fds
    std::uint64_t rebuilds() const noexcept { return rebuilds_; }         // epoll sets recreated
    std::size_t event_capacity() const noexcept { return events_.size(); }

private:
    // What we know about one fd number: 8 bytes, one per fd number the
    // loop has seen (the flags are bits, so an idle connection pays 8, not 12).
    struct Entry {
        std::uint32_t generation = 0;         // tagged into each registration's event data
        Interest wanted = Interest::none;     // what the loop asked for last
        Interest in_kernel = Interest::none;  // what the epoll set has (as far as we know)
        bool queued : 1 = false;              // in changes_
        bool renewed : 1 = false;             // registered anew since the last wait: check with the kernel
        bool always_ready : 1 = false;        // epoll refused it (EPERM: a regular file): emulated
        bool edge_triggered : 1 = false;      // the loop's wake-up eventfd (watch_wakeup)
    };

    using Clock = std::chrono::steady_clock;

    void apply_changes(std::vector<FdEvent>& out);
    void sync(int fd, Entry& e, std::vector<FdEvent>& out);
    int ctl(int op, int fd, Interest interest, std::uint32_t generation);
    void poll_ready(std::vector<FdEvent>& out);
    void wait_blocking(std::optional<std::chrono::nanoseconds> timeout, std::vector<FdEvent>& out);
    int wait_once(std::chrono::nanoseconds timeout, bool precise);
    void collect(int n, std::vector<FdEvent>& out);
    void check_for_closed_fds(Clock::time_point now, std::vector<FdEvent>& out);
    void report_always_ready(std::vector<FdEvent>& out) const;
    void rebuild(std::vector<FdEvent>& out);
    void unwatch(int fd, Entry& e, int error, std::vector<FdEvent>& out);
    // An fd that could be closed behind our back is now in the set: waits are
    // cut into check slices again, and the round of checks under way does
    // not conclude that there is none (the fd may sit behind its cursor).
    void note_checkable() noexcept {
        only_wakeup_ = false;
        round_saw_watched_ = true;
    }

    int epfd_ = -1;
    std::vector<Entry> entries_;          // indexed by fd
    std::vector<int> changes_;            // fds whose wanted interest was set since the last wait
    std::vector<int> always_ready_;       // fds with always_ready set
    std::vector<epoll_event> events_;     // epoll_wait's output, reused; grows when filled
    std::chrono::nanoseconds check_interval_;
    std::size_t checks_per_interval_;     // fcntl calls one check may make
    Clock::time_point next_check_;        // when the next registered fds are checked for being closed
    std::size_t check_cursor_ = 0;        // the entry the next check starts from
    bool round_saw_watched_ = false;      // this round of checks met an fd that can be closed on us
    unsigned waits_since_clock_ = 0;      // non-blocking waits since the clock was last read
    detail::OpenFdCheck open_fds_;
    bool stale_seen_ = false;             // an event from a registration we did not make
    // No fd but the loop's own eventfd is in the set (or was, when the last
    // round of checks went over every entry): none can be closed behind our
    // back, so the blocking waits are not cut into check slices. Cleared when
    // any other fd is added.
    bool only_wakeup_ = true;
    bool use_pwait2_ = true;              // ns timeouts; off if the kernel lacks epoll_pwait2
    std::uint64_t ctl_calls_ = 0;
    std::uint64_t closed_fd_checks_ = 0;
    std::uint64_t rebuilds_ = 0;
};

}  // namespace reactor
