// SPDX-License-Identifier: MIT
// The thread-local mark "a simulated world is running a host here", and the
// checks the library makes against it on its cold paths (opening a socket,
// submitting a job), never per read or write: the real path pays nothing.
// reactor::testing::sim::World sets it while it runs one host's loop (a
// step, or the host's start function); everything else only reads it. What
// is refused and what runs on the host's loop instead is listed in
// reactor/testing/sim/world.hpp ("What escapes a world"). Thread-local: a
// world and its hosts run on one thread; other threads never see its mark.
#pragma once

#include <cstddef>
#include <string_view>

#include "reactor/export.hpp"

namespace reactor {

class Kernel;
class Scheduler;

namespace detail {

// The first read of real time or of the system's randomness that
// reactor::sim_guard (reactor/testing/sim/real_time_guard.hpp) saw the
// host's code make while marked. The guard answers it from the world (the
// call returns, and std::chrono's now() may not throw), and the World fails
// the step that made it (refuse_real_read).
struct RealRead {
    enum class Kind { none, time, calendar, randomness };
    Kind kind = Kind::none;
    const char* call = nullptr;  // a literal: "clock_gettime(CLOCK_MONOTONIC)", "getrandom"
};

// Who is running: for the error texts ("sim world (seed 7) host client").
// The strings are the World's and outlive the mark.
struct WorldMark {
    std::string_view world;  // "sim world (seed 7)"
    std::string_view host;   // the host's name
    // The world's randomness for what it cannot see being drawn (OpenSSL's,
    // through sim::TlsRandomness): fills `out` from a stream of the seed.
    void (*fill_random)(void* context, unsigned char* out, std::size_t length) noexcept = nullptr;
    void* random_context = nullptr;
    // The host's loop, whose now() and wall_clock() answer a real-time read
    // reactor::sim_guard catches.
    const Scheduler* scheduler = nullptr;
    // Written by reactor::sim_guard through a const mark: the mark is the
    // step's, and only its thread sees it.
    mutable RealRead real_read;
};

// The mark of the innermost world running a host on this thread, or null.
REACTOR_API const WorldMark* world_mark() noexcept;

// Sets the mark for its lifetime, restoring the previous one after (a
// host's start may build another world: the inner one's mark wins inside).
class REACTOR_API WorldMarkScope {
public:
    explicit WorldMarkScope(const WorldMark& mark) noexcept;
    ~WorldMarkScope();
    WorldMarkScope(const WorldMarkScope&) = delete;
    WorldMarkScope& operator=(const WorldMarkScope&) = delete;

private:
    const WorldMark* previous_;
};

// True for a Scheduler whose work must stay on its own thread as simulated
// work: one whose kernel is a world's (Kernel::simulated()), or any while a
// world runs a host here.
REACTOR_API bool runs_in_world(const Scheduler& sched) noexcept;

// `call` ("Listener::listen", "reactor::connect", "UdpSocket::bind") is
// about to open a socket of `kernel` (null: the real one). A real socket
// while a world runs a host here: std::logic_error naming the call and the
// world. Otherwise nothing.
REACTOR_API void refuse_real_socket(const Kernel* kernel, std::string_view call);

// After a marked step or start: std::logic_error naming the call, the
// world and the host if reactor::sim_guard saw the host's code read real
// time or randomness (mark.real_read). Otherwise nothing.
REACTOR_API void refuse_real_read(const WorldMark& mark);

// `call` would hand work to another thread or loop: std::logic_error naming
// it, the world and `instead` (what to do), if `sched` runs in a world.
REACTOR_API void refuse_cross_thread(const Scheduler& sched, std::string_view call, std::string_view instead);

// `call` hands work from loop `from` to loop `to` and back by cross-loop
// posts (futures::submit_to). Allowed between the hosts of one world (their
// kernels name it: Kernel::world()), the same host included: the world steps
// them all on its one thread and wakes a host at rest that was posted to, in
// an order drawn from its seed. Refused, std::logic_error naming `call`, both
// loops, the world running here if any, and `instead`: from a host to a loop
// that is not one of its world's (a real Scheduler, another world's host),
// and from such a loop to a host (its post would come from another thread,
// or at a time no seed decides, and a host at rest is woken only by its own
// world). Neither a host: refused while a world runs a host here, as
// refuse_cross_thread.
REACTOR_API void refuse_cross_world(const Scheduler& from, const Scheduler& to, std::string_view call,
                                    std::string_view instead);

}  // namespace detail
}  // namespace reactor
