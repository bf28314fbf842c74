// Internal: the epoll backend, exposed as a concrete class so tests can read
// its statistics and shorten its idle check. Users get it through
// make_selector(Backend::epoll) / make_epoll_selector(). Owns its epoll fd,
// never the fds it watches. Loop thread only.
//
// Registrations are persistent and level-triggered. set_interest() only
// records what the loop wants; wait() first applies the changes with
// epoll_ctl, and only for fds whose wanted interest differs from what the
// kernel has, so a one-shot waiter that re-arms the same interest between two
// waits costs no system call at all.
//
// Closed fds. The kernel silently drops an fd from the epoll set when its last
// reference is closed, so a loop waiting on it would wait forever. We notice:
//   * when we next have to change its registration (epoll_ctl: EBADF), and
//   * in an idle check: once the selector has been idle (no event) for
//     idle_check_interval in total, every registered fd is checked with
//     fcntl(F_GETFD) (0.25-0.35 us each on our 2-core VM; a busy loop never
//     pays it).
// Either way the fd is reported as FdEvent{fd, error = EBADF} and forgotten.
//
// Limitation (libev and libuv have it too): if an fd is closed and its number
// is reused by open()/accept() before the loop's next wait, and the same
// interest is registered for the new file, nothing looks changed and the new
// file is never added: it is never reported ready, and no check can tell
// (fcntl sees a valid fd; kcmp(KCMP_EPOLL_TFD) could, but costs O(registered
// fds) per fd: ~90 us each at 10,000). The rule that avoids it: call
// Scheduler::forget_fd(fd) before closing an fd the loop watched; it deletes
// the registration at once (libuv's uv__platform_invalidate_fd). A changed interest is always safe: epoll_ctl then
// finds the new file. A stale registration left behind by a closed fd whose
// file lives on (a dup, a child process) is detected from its events and
// cleared by rebuilding the epoll set.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "reactor/selector.hpp"

namespace reactor {

class EpollSelector final : public Selector {
public:
    struct Options {
        // Idle time after which registered fds are checked for having been
        // closed. Short enough that a leaked waiter is reported promptly,
        // long enough that an idle loop with 10,000 fds spends ~0.3% of its
        // time checking (one pass is ~3 ms at 10,000 fds on our 2-core VM).
        std::chrono::nanoseconds idle_check_interval = std::chrono::seconds(1);
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
    void forget(int fd) noexcept override;  // an immediate EPOLL_CTL_DEL

    // ---- statistics (tests, benchmarks) ----
    std::uint64_t ctl_calls() const noexcept { return ctl_calls_; }       // epoll_ctl calls made so far
    std::uint64_t idle_checks() const noexcept { return idle_checks_; }   // fcntl passes over registered fds
    std::uint64_t rebuilds() const noexcept { return rebuilds_; }         // epoll sets recreated
    std::size_t event_capacity() const noexcept { return events_.size(); }

private:
    // What we know about one fd number.
    struct Entry {
        Interest wanted = Interest::none;     // what the loop asked for last
        Interest in_kernel = Interest::none;  // what the epoll set has (as far as we know)
        std::uint32_t generation = 0;         // tagged into each registration's event data
        bool queued = false;                  // in changes_
        bool always_ready = false;            // epoll refused it (EPERM: a regular file): emulated
    };

    void apply_changes(std::vector<FdEvent>& out);
    void sync(int fd, Entry& e, std::vector<FdEvent>& out);
    int ctl(int op, int fd, Interest interest, std::uint32_t generation);
    int wait_once(std::chrono::nanoseconds timeout, bool precise);
    void collect(int n, std::vector<FdEvent>& out);
    void check_for_closed_fds(std::vector<FdEvent>& out);
    void report_always_ready(std::vector<FdEvent>& out) const;
    void rebuild(std::vector<FdEvent>& out);
    void unwatch(int fd, Entry& e, int error, std::vector<FdEvent>& out);

    int epfd_ = -1;
    std::vector<Entry> entries_;          // indexed by fd
    std::vector<int> changes_;            // fds whose wanted interest was set since the last wait
    std::vector<int> always_ready_;       // fds with always_ready set
    std::vector<epoll_event> events_;     // epoll_wait's output, reused; grows when filled
    std::chrono::nanoseconds idle_check_interval_;
    std::chrono::nanoseconds idle_for_{0};  // waited without any event since the last check
    bool stale_seen_ = false;             // an event from a registration we did not make
    bool use_pwait2_ = true;              // ns timeouts; off if the kernel lacks epoll_pwait2
    std::uint64_t ctl_calls_ = 0;
    std::uint64_t idle_checks_ = 0;
    std::uint64_t rebuilds_ = 0;
};

}  // namespace reactor
