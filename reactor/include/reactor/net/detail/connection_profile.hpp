// SPDX-License-Identifier: MIT
// reactor::detail::ConnectionProfile: what the connections made the same way
// share, kept once for all of them instead of in each: their loop and its
// kernel (read on every send and receive: one load from here), the line
// that made them (a listener's, a connect()'s), their water marks and their
// read size. The connections a listener accepts all have the same, so
// 10,000 of them hold one profile between them, and each holds a pointer
// where it held 28 bytes (issue 22, bench/results/memory.md).
//
// The loop keeps an index of its profiles (src/net/connection_profiles.hpp),
// so a connection made with the same loop, line and values joins the one
// that exists; one whose marks change (Connection::set_water_marks) moves
// to the profile of its new values. A profile counts its members (its
// connections, and the listener that made them) and is freed with the last
// one, which may outlive the loop (a closed connection kept by the user):
// the loop's index only lists it. Part of connection.hpp; not an API. Loop
// thread only.
#pragma once

#include <cstdint>
#include <source_location>

namespace reactor {
class Kernel;
class Scheduler;
}

namespace reactor::detail {

class ConnectionProfiles;

struct ConnectionProfile {
    Scheduler* sched;
    Kernel* kernel;              // sched->kernel(): null for the C library's calls
    std::source_location where;  // see Connection::adopt
    std::uint32_t high_water;    // a mark above 4 GiB counts as 4 GiB
    std::uint32_t low_water;
    std::uint32_t read_size;
    std::uint32_t members = 0;              // the connections (and listener) holding it
    ConnectionProfiles* index = nullptr;    // the loop's, until the loop destroys it
};

}  // namespace reactor::detail
