// SPDX-License-Identifier: MIT
// The epoll backend (see epoll_selector.hpp for the rule it keeps: closing and
// reusing fds needs no care from the owner). Level-triggered, persistent
// registrations, changes batched into epoll_ctl right before epoll_wait.
#include "epoll_selector.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "wait_budget.hpp"

// epoll_pwait2 (ns timeouts) is in glibc since 2.35 and Linux since 5.11;
// without it, millisecond timeouts rounded up.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define REACTOR_HAVE_EPOLL_PWAIT2 1
#else
#define REACTOR_HAVE_EPOLL_PWAIT2 0
#endif

namespace reactor {
namespace {

// epoll_wait's output starts small (a typical iteration has a few ready fds)
// and doubles whenever a wait fills it, up to 4096 events (48 KiB). More ready
// fds than that are reported by the next wait: level-triggered epoll rotates
// its ready list, so none starves.
constexpr std::size_t kInitialEvents = 64;
constexpr std::size_t kMaxEvents = 4096;

// A loop that never blocks reads the clock (to see whether the closed-fd check
// is due) only every this many waits: often enough that a check is at most a
// few iterations late, rarely enough that the read is lost in the noise.
constexpr unsigned kNonBlockingWaitsPerClockRead = 16;

std::uint32_t epoll_bits(Interest interest) {
    std::uint32_t bits = 0;
    if (wants(interest, Interest::read)) bits |= EPOLLIN;
    if (wants(interest, Interest::write)) bits |= EPOLLOUT;
    return bits;
}

// Each registration carries (generation << 32 | fd) as its event data. An
// event whose generation is not the fd's current one comes from a
// registration we no longer know (the fd was closed while its file lived on
// elsewhere, and could not be removed): libev's "egen" trick.
std::uint64_t make_tag(int fd, std::uint32_t generation) {
    return (std::uint64_t{generation} << 32) | static_cast<std::uint32_t>(fd);
}

}  // namespace

EpollSelector::EpollSelector() : EpollSelector(Options{}) {}

EpollSelector::EpollSelector(Options options)
    : events_(kInitialEvents),
      check_interval_(std::max(options.closed_fd_check_interval, std::chrono::nanoseconds(1))),
      checks_per_interval_(std::max<std::size_t>(options.closed_fd_checks_per_interval, 1)),
      next_check_(Clock::now() + check_interval_) {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throw std::system_error(errno, std::generic_category(), "reactor: epoll backend: epoll_create1");
}

EpollSelector::~EpollSelector() { ::close(epfd_); }

void EpollSelector::set_interest(int fd, Interest interest) {
    if (fd < 0) throw std::invalid_argument(fmt::format("reactor: invalid fd {} (negative)", fd));
    auto key = static_cast<std::size_t>(fd);
    if (interest != Interest::none) open_fds_.require_open(fd);
    if (key >= entries_.size()) {
        if (interest == Interest::none) return;
        entries_.resize(key + 1);
    }
    Entry& e = entries_[key];
    e.wanted = interest;
    // The fd may name a new file since we last heard of it: check at the next wait.
    if (interest != Interest::none) e.renewed = true;
    if (!e.queued) {
        e.queued = true;
        changes_.push_back(fd);
    }
}

bool EpollSelector::watch_wakeup(int fd) {
    set_interest(fd, Interest::read);  // the entry exists from here
    entries_[static_cast<std::size_t>(fd)].edge_triggered = true;
    return true;
}

void EpollSelector::forget(int fd) noexcept {
    if (fd < 0 || static_cast<std::size_t>(fd) >= entries_.size()) return;
    Entry& e = entries_[static_cast<std::size_t>(fd)];
    e.wanted = Interest::none;  // a queued change now finds nothing to do
    e.edge_triggered = false;   // the number's next file is an ordinary one
    if (e.always_ready) {
        e.always_ready = false;
        std::erase(always_ready_, fd);
    }
    if (e.in_kernel != Interest::none) {
        ctl(EPOLL_CTL_DEL, fd, Interest::none, 0);  // EBADF/ENOENT: already gone, fine
        e.in_kernel = Interest::none;
    }
}

// ---------------------------------------------------------------- applying changes

// A system call only for fds whose wanted interest differs from the kernel's,
// or that were registered anew (they may be new files behind old numbers):
// "read, then none" between two waits costs nothing, "read, then none, then
// read again" costs one EPOLL_CTL_MOD.
void EpollSelector::apply_changes(std::vector<FdEvent>& out) {
    for (int fd : changes_) {
        Entry& e = entries_[static_cast<std::size_t>(fd)];
        const bool renewed = e.renewed;
        e.renewed = false;
        e.queued = false;
        if (e.always_ready) {
            // Still the same regular file: nothing to ask the kernel.
            if (e.wanted != Interest::none && !renewed) continue;
            e.always_ready = false;
            std::erase(always_ready_, fd);
            if (e.wanted == Interest::none) continue;
        }
        if (e.wanted != e.in_kernel || (renewed && e.wanted != Interest::none)) sync(fd, e, out);
    }
    changes_.clear();
}

void EpollSelector::sync(int fd, Entry& e, std::vector<FdEvent>& out) {
    if (e.wanted == Interest::none) {
        // EBADF or ENOENT: the fd was closed and the kernel already dropped it.
        ctl(EPOLL_CTL_DEL, fd, Interest::none, 0);
        e.in_kernel = Interest::none;
        return;
    }
    std::uint32_t generation = ++e.generation;
    int op = e.in_kernel == Interest::none ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    int rc = ctl(op, fd, e.wanted, generation);
    if (rc != 0 && op == EPOLL_CTL_MOD && errno == ENOENT) {
        // The registration went with its file (closed behind our back): the
        // fd, if open, is a new file behind the same number. Add it.
        rc = ctl(EPOLL_CTL_ADD, fd, e.wanted, generation);
    } else if (rc != 0 && op == EPOLL_CTL_ADD && errno == EEXIST) {
        // The kernel still has this file from a removal we never applied.
        rc = ctl(EPOLL_CTL_MOD, fd, e.wanted, generation);
    }
    if (rc == 0) {
        e.in_kernel = e.wanted;
        if (!e.edge_triggered) note_checkable();
        return;
    }
    int error = errno;
    if (error == EPERM) {
        // epoll refuses fds that are always ready (regular files, /dev/null);
        // select and poll report them ready every time, and so do we.
        e.in_kernel = Interest::none;
        e.always_ready = true;
        note_checkable();
        always_ready_.push_back(fd);
        return;
    }
    // EBADF: closed while registered (or before it was ever added). ENOMEM,
    // ENOSPC (fs.epoll.max_user_watches): cannot be watched. Either way the
    // owner hears about it instead of waiting forever.
    unwatch(fd, e, error, out);
}

int EpollSelector::ctl(int op, int fd, Interest interest, std::uint32_t generation) {
    ++ctl_calls_;
    epoll_event ev{};  // non-null even for DEL (kernels before 2.6.9 require it)
    ev.events = epoll_bits(interest);
    if (static_cast<std::size_t>(fd) < entries_.size() && entries_[static_cast<std::size_t>(fd)].edge_triggered)
        ev.events |= EPOLLET;
    ev.data.u64 = make_tag(fd, generation);
    return ::epoll_ctl(epfd_, op, fd, &ev);
}

void EpollSelector::unwatch(int fd, Entry& e, int error, std::vector<FdEvent>& out) {
    e.wanted = e.in_kernel = Interest::none;
    if (e.always_ready) {
        e.always_ready = false;
        std::erase(always_ready_, fd);
    }
    out.push_back(FdEvent{fd, false, false, error});
}

// ---------------------------------------------------------------- waiting

void EpollSelector::wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<FdEvent>& out) {
    const std::size_t before = out.size();
    apply_changes(out);
    // Something to report already: just collect what else is ready.
    if (out.size() != before || !always_ready_.empty()) timeout = std::chrono::nanoseconds::zero();
    if (timeout && *timeout <= std::chrono::nanoseconds::zero()) {
        poll_ready(out);
    } else {
        wait_blocking(timeout, out);
    }
    report_always_ready(out);
    if (stale_seen_) rebuild(out);
}

// The busy case (callbacks are ready): take what the kernel has, never block,
// and check for closed fds when due, reading the clock only every few waits.
void EpollSelector::poll_ready(std::vector<FdEvent>& out) {
    int n;
    while ((n = ::epoll_wait(epfd_, events_.data(), static_cast<int>(events_.size()), 0)) < 0) {
        if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "epoll_wait");
    }
    collect(n, out);
    if (++waits_since_clock_ < kNonBlockingWaitsPerClockRead) return;
    waits_since_clock_ = 0;
    const auto now = Clock::now();
    if (now >= next_check_) check_for_closed_fds(now, out);
}

// The wait is cut into slices that end when the closed-fd check is due; a
// check that finds nothing resumes the wait for the time left.
void EpollSelector::wait_blocking(std::optional<std::chrono::nanoseconds> timeout, std::vector<FdEvent>& out) {
    const std::size_t before = out.size();
    detail::WaitBudget budget(timeout);
    for (;;) {
        auto remaining = budget.remaining();
        // Nothing to check (the loop's own eventfd alone is watched: an idle
        // loop of a group): the wait is not cut into slices, so an endless
        // wait asks the kernel for no timer (one armed and cancelled per
        // sleep otherwise).
        if (only_wakeup_ && !remaining) {
            int n = ::epoll_wait(epfd_, events_.data(), static_cast<int>(events_.size()), -1);
            if (n > 0) {
                collect(n, out);
                return;
            }
            if (n < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "epoll_wait");
            continue;
        }
        const auto now = Clock::now();
        if (now >= next_check_) {
            check_for_closed_fds(now, out);
            if (out.size() != before) return;
        }
        const auto until_check = std::chrono::nanoseconds(next_check_ - now);
        const bool sliced = !only_wakeup_ && (!remaining || *remaining > until_check);
        // A slice that ends at a check needs no precision: rounding it up to
        // milliseconds only delays the check.
        int n = wait_once(sliced ? until_check : *remaining, !sliced);
        if (n > 0) {
            collect(n, out);
            return;
        }
        if (n < 0) {
            // A signal: wait again for what is left, never return early.
            if (errno == EINTR) continue;
            throw std::system_error(errno, std::generic_category(), "epoll_wait");
        }
        if (!sliced) return;  // the caller's timeout has elapsed
    }
}

// epoll_wait (milliseconds) is cheaper than epoll_pwait2, so it is used
// whenever it loses nothing: zero, whole milliseconds, or an imprecise slice.
int EpollSelector::wait_once(std::chrono::nanoseconds timeout, bool precise) {
    auto capacity = static_cast<int>(events_.size());
#if REACTOR_HAVE_EPOLL_PWAIT2
    if (precise && use_pwait2_ && !detail::exact_in_milliseconds(timeout)) {
        timespec ts = detail::to_timespec(timeout);
        int n = ::epoll_pwait2(epfd_, events_.data(), capacity, &ts, nullptr);
        // ENOSYS: kernel older than 5.11; EPERM: a seccomp filter that
        // predates it. Fall back to millisecond timeouts for good.
        if (n >= 0 || (errno != ENOSYS && errno != EPERM)) return n;
        use_pwait2_ = false;
    }
#else
    (void)precise;
#endif
    return ::epoll_wait(epfd_, events_.data(), capacity, detail::to_milliseconds_ceil(timeout));
}

void EpollSelector::collect(int n, std::vector<FdEvent>& out) {
    for (int i = 0; i < n; ++i) {
        const epoll_event& ev = events_[static_cast<std::size_t>(i)];
        auto fd = static_cast<int>(static_cast<std::uint32_t>(ev.data.u64));
        auto generation = static_cast<std::uint32_t>(ev.data.u64 >> 32);
        auto key = static_cast<std::size_t>(fd);
        if (key >= entries_.size() || entries_[key].in_kernel == Interest::none ||
            entries_[key].generation != generation) {
            stale_seen_ = true;  // not ours any more: cleared by rebuild() below
            continue;
        }
        // Error or hang-up: wake both directions; the owner's read or write
        // then returns the actual error (or 0 for EOF).
        bool failed = (ev.events & (EPOLLERR | EPOLLHUP)) != 0;
        out.push_back(FdEvent{fd, failed || (ev.events & EPOLLIN) != 0, failed || (ev.events & EPOLLOUT) != 0, 0});
    }
    if (static_cast<std::size_t>(n) == events_.size() && events_.size() < kMaxEvents) {
        events_.resize(events_.size() * 2);
    }
}

void EpollSelector::report_always_ready(std::vector<FdEvent>& out) const {
    for (int fd : always_ready_) {
        Interest i = entries_[static_cast<std::size_t>(fd)].wanted;
        out.push_back(FdEvent{fd, wants(i, Interest::read), wants(i, Interest::write), 0});
    }
}

// ---------------------------------------------------------------- closed fds

// F_GETFD is the cheapest call that fails with EBADF for a closed fd. A number
// closed and already reused passes (fcntl sees the new file): if the new file
// was registered, its renewal re-added it; if not, the old registration is
// either gone with its file or reports stale events, and rebuild() clears it.
void EpollSelector::check_for_closed_fds(Clock::time_point now, std::vector<FdEvent>& out) {
    next_check_ = now + check_interval_;
    ++closed_fd_checks_;
    std::size_t budget = checks_per_interval_;
    // At most one round over the entries per check; an entry with nothing
    // registered costs no system call and no budget.
    for (std::size_t seen = 0; seen < entries_.size() && budget > 0; ++seen) {
        const std::size_t key = check_cursor_++;
        Entry& e = entries_[key];
        // The loop's own eventfd is never closed behind our back.
        if ((e.in_kernel != Interest::none || e.always_ready) && !e.edge_triggered) {
            --budget;
            const int fd = static_cast<int>(key);
            if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
                unwatch(fd, e, EBADF, out);
            } else {
                round_saw_watched_ = true;
            }
        }
        if (check_cursor_ == entries_.size()) {  // a round over every entry is complete
            only_wakeup_ = !round_saw_watched_;
            round_saw_watched_ = false;
            check_cursor_ = 0;
        }
    }
}

// A registration we cannot remove (its fd number is closed, so epoll_ctl
// cannot name it) only goes away with its epoll set: make a fresh set and
// register everything we know again. Rare: it needs a closed fd whose file
// is still open elsewhere.
void EpollSelector::rebuild(std::vector<FdEvent>& out) {
    stale_seen_ = false;
    int fresh = ::epoll_create1(EPOLL_CLOEXEC);
    // EMFILE, ENOMEM: the stale registration stays (rebuild is tried again at
    // the next wait) and the Scheduler retries this wait like any other.
    if (fresh < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1 (rebuilding the epoll set)");
    ::close(epfd_);
    epfd_ = fresh;
    ++rebuilds_;
    for (std::size_t key = 0; key < entries_.size(); ++key) {
        Entry& e = entries_[key];
        if (e.in_kernel == Interest::none) continue;
        e.in_kernel = Interest::none;
        sync(static_cast<int>(key), e, out);
    }
}

std::unique_ptr<Selector> make_epoll_selector() { return std::make_unique<EpollSelector>(); }

}  // namespace reactor
