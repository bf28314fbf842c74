// SPDX-License-Identifier: MIT
// ConnectionProfiles: see connection_profiles.hpp.
#include "connection_profiles.hpp"

#include <memory>

#include "reactor/scheduler.hpp"

namespace reactor::detail {

// A profile no member ever joined (its connection could not be made) goes
// with the index; the others go with their last member.
ConnectionProfiles::~ConnectionProfiles() {
    for (auto& [key, profile] : profiles_) {
        if (profile->members == 0) {
            delete profile;
        } else {
            profile->index = nullptr;
        }
    }
}

ConnectionProfiles::Key ConnectionProfiles::key_of(std::source_location where, std::uint32_t high_water,
                                                   std::uint32_t low_water, std::uint32_t read_size) noexcept {
    return Key{where.file_name(), where.function_name(), where.line(), where.column(),
               high_water,        low_water,             read_size};
}

ConnectionProfile& ConnectionProfiles::find(Scheduler& sched, std::source_location where,
                                            const ConnectionOptions& options) {
    return find(sched, where, mark(options.high_water), mark(options.low_water), mark(options.read_size));
}

// Found with no allocation, as every connection of a kind after the first
// finds it; made, and listed, for the first.
ConnectionProfile& ConnectionProfiles::find(Scheduler& sched, std::source_location where, std::uint32_t high_water,
                                            std::uint32_t low_water, std::uint32_t read_size) {
    ConnectionProfiles& index = sched.service<ConnectionProfiles>();
    const Key key = key_of(where, high_water, low_water, read_size);
    auto it = index.profiles_.find(key);
    if (it == index.profiles_.end()) {
        auto made = std::make_unique<ConnectionProfile>(
            ConnectionProfile{&sched, sched.kernel(), where, high_water, low_water, read_size, 0, &index});
        it = index.profiles_.emplace(key, made.get()).first;
        made.release();
    }
    return *it->second;
}

void ConnectionProfiles::leave(ConnectionProfile& profile) noexcept {
    if (--profile.members > 0) return;
    if (profile.index)
        profile.index->profiles_.erase(key_of(profile.where, profile.high_water, profile.low_water, profile.read_size));
    delete &profile;
}

}  // namespace reactor::detail
