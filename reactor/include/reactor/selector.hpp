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

class Selector {
public:
    virtual ~Selector() = default;

    // "select", "poll", "epoll": for logs and benchmark tables.
    virtual std::string_view name() const noexcept = 0;

    // Declares what the loop wants to hear about `fd`; Interest::none forgets it.
    // Throws std::invalid_argument if this backend cannot watch `fd` (negative,
    // or >= FD_SETSIZE for select); the previous interest is then unchanged.
    virtual void set_interest(int fd, Interest interest) = 0;

    // Blocks until at least one watched fd is ready or `timeout` elapses
    // (nullopt: no limit; zero: just poll). Appends events to `out`. EINTR is
    // retried with the remaining time, so the call never returns early because
    // of a signal. Other failures throw std::system_error.
    virtual void wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<FdEvent>& out) = 0;

    // True while set_interest() calls are recorded but not yet given to the
    // kernel (epoll applies them at the next wait). The Scheduler skips the
    // wait when it has nothing to watch and no time to wait, unless this says
    // a wait must still bring the kernel up to date.
    virtual bool has_pending_changes() const noexcept { return false; }

    // The owner is about to close `fd`: drop it now rather than at the next
    // wait. Backends that keep registrations across waits (epoll) must, or a
    // number reused by the next open()/accept() would go unwatched.
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
//           grows with the number of watched fds: on a 2-core VM a socketpair
//           round trip through the loop took ~7 us with any backend alone,
//           ~40 us with select or poll beside 100 idle sockets (epoll ~7 us),
//           and a loop iteration beside 10,000 idle TCP sockets ~4 ms with
//           poll against ~1.3 us with epoll.
//   epoll   servers with many connections, most of them idle: a wait costs
//           what the ready fds cost, and registrations persist in the kernel,
//           so re-arming the same interest costs no system call. The price is
//           kernel state that can go stale: an fd closed while registered is
//           only noticed when its registration changes or after an idle second
//           (both reported as EBADF), and if an fd is closed and the same
//           number comes back from open()/accept() within the same loop
//           iteration, registered with the same interest, the new file is
//           never watched (libev and libuv share this limitation). Rule that
//           avoids it: remove an fd's waiters, then close it from a later
//           callback (call_soon), as muduo does.
// All three are level-triggered, retry EINTR with the remaining time and round
// timeouts up (never wake early). poll and epoll report an error or hang-up as
// both readable and writable (the owner's read or write then finds it).
enum class Backend : std::uint8_t { select, poll, epoll };

std::string_view to_string(Backend backend) noexcept;
// "select", "poll" or "epoll"; nullopt for anything else.
std::optional<Backend> parse_backend(std::string_view name) noexcept;

// Throws std::invalid_argument for a backend this build does not provide.
std::unique_ptr<Selector> make_selector(Backend backend);
// The reference backend: select(2), fds 0 .. FD_SETSIZE-1 only.
std::unique_ptr<Selector> make_select_selector();
// poll(2) (ppoll, nanosecond timeouts): any fd, O(watched fds) per wait.
// An fd reported closed (error = EBADF) is also forgotten by the selector.
std::unique_ptr<Selector> make_poll_selector();
// epoll(7), level-triggered, registrations batched into epoll_ctl right before
// each wait and only when the interest changed: any fd, O(ready fds) per wait.
// An fd reported closed (error = EBADF, or another errno if epoll cannot
// watch it) is also forgotten by the selector. Regular files, which epoll
// refuses, are reported always ready, as select and poll do.
std::unique_ptr<Selector> make_epoll_selector();

}  // namespace reactor
