// SPDX-License-Identifier: MIT
// reactor::testing::FdScript: readiness of fds declared in advance, on the
// virtual clock: "fd 7 becomes readable at T", and the loop delivers it then.
//
// The VirtualSelector owns one (VirtualLoop::script()). An fd becomes
// scripted at its first declaration and stays scripted until the loop
// forgets it (Scheduler::forget_fd: its owner is closing it): meanwhile the
// loop's interest in it is kept here and never reaches the kernel, so the
// number need not be open at all (the code under test gets the readiness and
// does with it what it does; the data may come from a fake, or from a pipe
// filled beforehand, whose real readiness is then ignored).
//
// Delivery: each declaration is one readiness report. It is due from its time
// on and is delivered by the first wait at or after that time in which the
// loop watches the fd for that direction (a report made before the loop
// watches it waits for it, as a real readable fd stays readable). A wait
// reports each fd at most once, readable and writable merged, and consumes one
// declaration per direction; further due ones come in the following waits.
// An error declaration (errno, e.g. EBADF: "the fd was closed") is reported to
// any interest; the Scheduler then drops the fd's waiters and reports it
// through its exception handler. Declarations due at the same time are
// delivered in the order they were made. Loop thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "reactor/clock.hpp"
#include "reactor/selector.hpp"

namespace reactor::testing {

class FdScript {
public:
    // `watched_for_real(fd)` says whether the real selector watches `fd`
    // now: such an fd cannot become scripted (the kernel's reports and the
    // script's would mix).
    explicit FdScript(std::function<bool(int)> watched_for_real) : watched_for_real_(std::move(watched_for_real)) {}

    // ---- declarations (bad input throws std::invalid_argument, changes nothing) ----
    void readable_at(int fd, TimePoint at) { declare(fd, at, Interest::read, 0); }
    void writable_at(int fd, TimePoint at) { declare(fd, at, Interest::write, 0); }
    // `error` is the errno the loop sees (FdEvent::error); it must not be 0.
    void fails_at(int fd, TimePoint at, int error) {
        if (error == 0) throw std::invalid_argument("FdScript: fails_at needs an errno, not 0");
        declare(fd, at, Interest::none, error);
    }

    bool scripts(int fd) const noexcept { return find(fd) != fds_.end(); }
    // Declarations not yet delivered.
    std::size_t pending() const noexcept { return events_.size(); }

    // ---- the selector's side ----
    Interest interest(int fd) const noexcept {
        auto it = find(fd);
        return it == fds_.end() ? Interest::none : it->second;
    }
    // For a scripted fd only (the selector checks scripts(fd) first).
    void set_interest(int fd, Interest interest) noexcept {
        if (auto it = find(fd); it != fds_.end()) it->second = interest;
    }
    // The fd is being closed: it is no longer scripted, and what was declared
    // for it and not delivered is dropped (its number may come back as a real file).
    void forget(int fd) noexcept {
        auto it = find(fd);
        if (it == fds_.end()) return;
        fds_.erase(it);
        std::erase_if(events_, [fd](const Event& e) { return e.fd == fd; });
    }

    // The earliest time at which a declaration could be delivered now (its fd
    // watched for its direction); nullopt if none could. The driver jumps no
    // further than this.
    std::optional<TimePoint> next_deliverable() const noexcept {
        std::optional<TimePoint> next;
        for (const Event& e : events_) {
            if (deliverable(e) && (!next || e.at < *next)) next = e.at;
        }
        return next;
    }

    // Appends the reports due at `now` (see "Delivery" above) and consumes them.
    void deliver_due(TimePoint now, std::vector<FdEvent>& out) {
        if (events_.empty()) return;  // the common case: no script at all
        const std::size_t first = out.size();
        for (auto it = events_.begin(); it != events_.end();) {
            if (it->at > now || !deliverable(*it) || !merge(*it, out, first)) {
                ++it;
            } else {
                it = events_.erase(it);
            }
        }
    }

private:
    struct Event {
        TimePoint at;
        int fd;
        Interest kind;  // read or write; none for an error
        int error;
    };
    using Fds = std::vector<std::pair<int, Interest>>;  // scripted fd -> the loop's interest

    void declare(int fd, TimePoint at, Interest kind, int error) {
        if (fd < 0) throw std::invalid_argument("FdScript: invalid fd " + std::to_string(fd) + " (negative)");
        if (!scripts(fd)) {
            if (watched_for_real_ && watched_for_real_(fd)) {
                throw std::invalid_argument("FdScript: fd " + std::to_string(fd) +
                                            " is watched by the real selector; script an fd the loop does not watch yet");
            }
            fds_.emplace_back(fd, Interest::none);
        }
        // Kept sorted by time; equal times stay in declaration order.
        auto pos = std::upper_bound(events_.begin(), events_.end(), at,
                                    [](TimePoint t, const Event& e) { return t < e.at; });
        events_.insert(pos, Event{at, fd, kind, error});
    }

    bool deliverable(const Event& e) const noexcept {
        const Interest watched = interest(e.fd);
        return e.error != 0 ? watched != Interest::none : wants(watched, e.kind);
    }

    // Adds `e` to this wait's report of its fd; false if that fd already has
    // this direction (or an error) in this wait: `e` then waits for the next.
    static bool merge(const Event& e, std::vector<FdEvent>& out, std::size_t first) {
        auto same_fd = std::find_if(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                                    [&e](const FdEvent& ev) { return ev.fd == e.fd; });
        if (same_fd == out.end()) {
            out.push_back(FdEvent{.fd = e.fd,
                                  .readable = e.kind == Interest::read,
                                  .writable = e.kind == Interest::write,
                                  .error = e.error});
            return true;
        }
        if (same_fd->error != 0 || e.error != 0) return false;  // an error is reported alone
        bool& bit = e.kind == Interest::read ? same_fd->readable : same_fd->writable;
        if (bit) return false;
        bit = true;
        return true;
    }

    Fds::const_iterator find(int fd) const noexcept {
        return std::find_if(fds_.begin(), fds_.end(), [fd](const auto& p) { return p.first == fd; });
    }
    Fds::iterator find(int fd) noexcept {
        return std::find_if(fds_.begin(), fds_.end(), [fd](const auto& p) { return p.first == fd; });
    }

    std::function<bool(int)> watched_for_real_;
    Fds fds_;
    std::vector<Event> events_;  // sorted by at, then declaration order
};

}  // namespace reactor::testing
