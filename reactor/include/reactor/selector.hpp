// SPDX-License-Identifier: MIT
// reactor::Selector: the OS readiness call behind one small interface.
//
// The Scheduler owns one Selector and tells it, declaratively, which events it
// wants per fd (set_interest); the backend decides when to sync that with the
// kernel (select rebuilds fd_sets per call, epoll batches epoll_ctl before the
// wait). A Selector never owns the fds it watches and never calls user code.
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <reactor/export.hpp>

namespace reactor {

enum class Interest : std::uint8_t { none = 0, read = 1, write = 2, read_write = 3 };

constexpr Interest operator|(Interest a, Interest b) {
    return static_cast<Interest>(static_cast<std::uint8_t>(a) | static_cast<std::uint8_t>(b));
}
constexpr bool wants(Interest set, Interest bit) {
    return (static_cast<std::uint8_t>(set) & static_cast<std::uint8_t>(bit)) != 0;
}

// One fd's readiness, as reported by wait(). Readiness may be spurious (a read
// can still answer EAGAIN: then wait again). error != 0 means the fd itself is
// unusable (EBADF: it was closed while registered); the loop drops its waiters.
struct FdEvent {
    int fd = -1;
    bool readable = false;
    bool writable = false;
    int error = 0;
};

class REACTOR_API Selector {
public:
    virtual ~Selector() = default;

    // "select", "poll", "epoll": for logs and benchmark tables.
    virtual std::string_view name() const noexcept = 0;

    // Declares what the loop wants to hear about `fd`; Interest::none forgets it.
    // A call with any other interest names the file `fd` refers to *now*: it
    // may have been closed and its number reused since the last call, and the
    // backend must watch the new file (select and poll are stateless; epoll
    // re-checks such an fd with the kernel at its next wait). Throws
    // std::invalid_argument if this backend cannot watch `fd` (negative, not
    // open, or >= FD_SETSIZE for select); the previous interest is then
    // unchanged. "Not open" is checked the first time a number is registered:
    // a number that was open once and is closed later is reported by the next
    // wait instead (FdEvent::error = EBADF).
    virtual void set_interest(int fd, Interest interest) = 0;

    // Blocks until at least one watched fd is ready or `timeout` elapses
    // (nullopt: no limit; zero: just poll). Appends events to `out`. EINTR is
    // retried with the remaining time, so the call never returns early because
    // of a signal. Other failures throw std::system_error with the errno and
    // the call's name as what() ("epoll_wait: Cannot allocate memory"); the
    // Scheduler decides whether to retry (Scheduler::kWaitFailureLimit).
    virtual void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<FdEvent>& out) = 0;

    // True while set_interest() calls are recorded but not yet given to the
    // kernel (epoll applies them at the next wait). The Scheduler skips the
    // wait when it has nothing to watch and no time to wait, unless this says
    // a wait must still bring the kernel up to date.
    virtual bool has_pending_changes() const noexcept { return false; }

    // True if wait() may report readiness for an fd number that was closed
    // while registered (epoll: the registration lives on with its file while
    // a dup keeps it open). The Scheduler then checks the number before it
    // runs a waiter of an fd that has no FdOwner.
    virtual bool may_report_closed_fds() const noexcept { return false; }

    // The loop's own wake-up eventfd, watched for reading. A backend that can
    // report every write to it without the loop reading the counter back
    // returns true, and the loop saves a read(2) per wake-up: epoll, edge-
    // triggered (each write to an eventfd is a new edge; Asio's interrupter
    // relies on the same). The counter never fills: it takes 2^64 - 2 writes.
    // Default: watched like any fd (level-triggered), false: read it back.
    virtual bool watch_wakeup(int fd) {
        set_interest(fd, Interest::read);
        return false;
    }

    // An optional hint: the owner is about to close `fd`, drop it now rather
    // than at the next wait. Nothing breaks without it (every backend copes
    // with fds closed while registered); it only saves epoll a failed
    // epoll_ctl later.
    virtual void forget(int fd) noexcept {
        try {
            set_interest(fd, Interest::none);
        } catch (...) {  // an fd we could never watch has nothing to forget
        }
    }
};

// Which OS readiness call a Scheduler uses; chosen at construction.
//   select  the reference (and the default): fds below FD_SETSIZE (1024) only.
//   poll    any fd; O(registered fds) per wait.
//   epoll   any fd; O(ready fds) per wait: pick it for many connections.
//
// When to pick which:
//   select  small programs, teaching, tests, anything that stays well under
//           1024 open fds. Stateless (the fd_sets are rebuilt per wait), so a
//           closed fd is reported at once and a reused fd number just works.
//           Cost per wait grows with the highest fd number, not with how many
//           fds are watched. Registering fd >= FD_SETSIZE throws.
//   poll    the same stateless semantics without the FD_SETSIZE ceiling: a
//           program that may hold more than 1024 fds (or inherits high fd
//           numbers) but watches only a few dozen at a time. Cost per wait
//           grows with the number of watched fds (bench/results/ has the
//           figures beside idle connections).
//   epoll   servers with many connections, most of them idle: a wait costs
//           what the ready fds cost, and persistent registrations
//           (add_reader/add_writer) stay in the kernel, so serving them costs
//           no system call beyond the wait. Every new registration (read_wait,
//           add_reader, ... on an fd) is checked with the kernel once, at the
//           next wait (one epoll_ctl), because the fd may be a new file behind
//           a reused number: a one-shot waiter that re-arms itself pays that
//           per event, a persistent one never does. An fd closed while
//           registered is reported (EBADF) at its next registration change or
//           by a check of the registered fds about once a second, busy or
//           idle (up to 1024 a second, in turn: a bounded cost for a loop
//           with a million fds). Closing and reusing fds needs no care from
//           the owner.
// All three are level-triggered, retry EINTR with the remaining time and round
// timeouts up (never wake early). poll and epoll report an error or hang-up as
// both readable and writable (the owner's read or write then finds it).
enum class Backend : std::uint8_t { select, poll, epoll };

REACTOR_API std::string_view to_string(Backend backend) noexcept;
// "select", "poll" or "epoll"; nullopt for anything else.
REACTOR_API std::optional<Backend> parse_backend(std::string_view name) noexcept;

// Throws std::invalid_argument for a backend this build does not provide.
REACTOR_API std::unique_ptr<Selector> make_selector(Backend backend);
// The reference backend: select(2), fds 0 .. FD_SETSIZE-1 only.
REACTOR_API std::unique_ptr<Selector> make_select_selector();
// poll(2) (ppoll, nanosecond timeouts): any fd, O(watched fds) per wait.
// An fd reported closed (error = EBADF) is also forgotten by the selector.
REACTOR_API std::unique_ptr<Selector> make_poll_selector();
// epoll(7), level-triggered, registrations batched into epoll_ctl right before
// each wait, only for fds whose interest changed or that were registered anew:
// any fd, O(ready fds) per wait.
// An fd reported closed (error = EBADF, or another errno if epoll cannot
// watch it) is also forgotten by the selector. Regular files, which epoll
// refuses, are reported always ready, as select and poll do.
REACTOR_API std::unique_ptr<Selector> make_epoll_selector();

}  // namespace reactor
