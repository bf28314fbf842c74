// SPDX-License-Identifier: MIT
// reactor::detail::ConnectionProfile: what the connections made together
// share, kept once for all of them instead of in each: their loop and its
// kernel (read on every send and receive: one load from here), the line
// that made them, their water marks and their read size. A Listener makes
// one as it listens (a GroupListener one per loop) and every connection it
// accepts joins it, so 10,000 accepted connections hold one profile between
// them, and each holds a pointer where it held 28 bytes (issue 22,
// bench/results/memory.md). A connection adopted or connected on its own
// has a profile of its own.
//
// The settings belong to the object that made them, not to a table: a
// connection that changes its marks (Connection::set_water_marks) while it
// shares its profile first takes a copy of its own (copy on write), so its
// siblings keep theirs. A profile counts its members (its connections, and
// the listener that made it) and is freed with the last one, which may
// outlive the loop (a closed connection the user keeps) and, for a group's
// listener, leave on another thread: the count is atomic, nothing else in
// a shared profile changes. Part of connection.hpp; not an API.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <source_location>

namespace reactor {
class Kernel;
class Scheduler;
struct ConnectionOptions;
}  // namespace reactor

namespace reactor::detail {

struct ConnectionProfile {
    Scheduler* sched;
    Kernel* kernel;              // sched->kernel(): null for the C library's calls
    std::source_location where;  // see Connection::adopt
    std::size_t high_water;
    std::size_t low_water;
    std::size_t read_size;
    std::atomic<std::uint32_t> members{0};  // the connections (and listener) holding it

    ConnectionProfile(Scheduler& loop, std::source_location line, const ConnectionOptions& options);
    ConnectionProfile(const ConnectionProfile& other) noexcept;  // the values, no member

    // A member joins (the profile is freed with the last to leave).
    ConnectionProfile& hold() noexcept {
        members.fetch_add(1, std::memory_order_relaxed);
        return *this;
    }
    void leave() noexcept {
        if (members.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
};

// What a listener keeps of its connections' profile: its own membership.
struct ProfileHold {
    void operator()(ConnectionProfile* profile) const noexcept { profile->leave(); }
};
using HeldProfile = std::unique_ptr<ConnectionProfile, ProfileHold>;

}  // namespace reactor::detail
