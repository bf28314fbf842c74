// SPDX-License-Identifier: MIT
// The loop's index of connection profiles (reactor/net/detail/connection_profile.hpp):
// a service (LoopService) that finds the profile of a loop, line and set of
// values, or makes it. The index lists profiles; their members own them (a
// count in each: the connections, and the listener whose connections they
// are), so a profile outlives the index if a closed connection does (the
// user keeps it after the loop is gone): the index, as it goes, tells each
// profile it is no longer listed. Loop thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <source_location>
#include <tuple>

#include "reactor/loop_service.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/net/detail/connection_profile.hpp"

namespace reactor::detail {

class ConnectionProfiles final : public LoopService {
public:
    explicit ConnectionProfiles(Scheduler& sched) noexcept : LoopService(sched) {}
    ~ConnectionProfiles() override;

    // The profile of `sched`'s connections made at `where` with these
    // values (marks above 4 GiB count as 4 GiB), made if none has them yet.
    // Not joined: a member joins (hold) and leaves. May throw
    // (std::bad_alloc) with nothing changed.
    static ConnectionProfile& find(Scheduler& sched, std::source_location where, const ConnectionOptions& options);
    static ConnectionProfile& find(Scheduler& sched, std::source_location where, std::uint32_t high_water,
                                   std::uint32_t low_water, std::uint32_t read_size);
    static ConnectionProfile& hold(ConnectionProfile& profile) noexcept {
        ++profile.members;
        return profile;
    }
    // Freed with its last member; unlisted first if its loop's index is still there.
    static void leave(ConnectionProfile& profile) noexcept;

    static std::uint32_t mark(std::size_t bytes) noexcept {
        return static_cast<std::uint32_t>(std::min<std::size_t>(bytes, UINT32_MAX));
    }

private:
    // The line by its file, function, line and column (a source_location
    // has no comparison of its own), then the values.
    using Key = std::tuple<const char*, const char*, std::uint_least32_t, std::uint_least32_t, std::uint32_t,
                           std::uint32_t, std::uint32_t>;
    static Key key_of(std::source_location where, std::uint32_t high_water, std::uint32_t low_water,
                      std::uint32_t read_size) noexcept;

    std::map<Key, ConnectionProfile*> profiles_;
};

}  // namespace reactor::detail
