// SPDX-License-Identifier: MIT
// reactor::sim_guard: real time and the system's randomness, read directly
// by a host's own code inside a sim::World, fail the run with an error
// naming the call, the clock and the host:
//
//     reactor: sim world (seed 7) host server read real time:
//     clock_gettime(CLOCK_MONOTONIC); a host's time is its Scheduler::now()
//
// A test opts in by linking the library (CMake: reactor::sim_guard;
// pkg-config: reactor-sim-guard); nothing else changes in its code. It
// defines the C library's clock_gettime, gettimeofday, time, getrandom and
// getentropy, so that the program's calls, and those of the libraries it
// loads (std::chrono's now() in libstdc++), reach these first (symbol
// interposition; each forwards to the C library's own, found with
// dlsym(RTLD_NEXT)). A separate library, never part of libreactor: a
// production program keeps calling the C library directly.
//
// While a World runs a host's loop or start (reactor/detail/world_mark.hpp):
//   - CLOCK_MONOTONIC (and _RAW, _COARSE, CLOCK_BOOTTIME) reads the host's
//     Scheduler::now(); CLOCK_REALTIME (_COARSE, CLOCK_TAI), gettimeofday
//     and time read its Scheduler::wall_clock(); getrandom and getentropy
//     fill from a stream of the world's seed. The call returns that answer,
//     and the World throws std::logic_error after the step (the first such
//     read names the error). std::chrono's clocks are noexcept: a throw
//     from inside them would end the program.
//   - reads made by OpenSSL (libssl, libcrypto: found from the caller's
//     address) are its own business: not flagged, and answered by the C
//     library. It checks a certificate's validity against the calendar,
//     and a certificate made for a test is valid from the real now, not
//     from a world's year 2000; its randomness is made the world's by
//     sim::TlsRandomness (testing/sim/tls_randomness.hpp).
//   - CPU-time clocks (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID)
//     are not time a program's behaviour should depend on either, but are
//     read by profilers and benchmarks: forwarded, not flagged.
// Everywhere else (no world running a host on this thread) each call
// forwards to the C library's, after one thread-local load.
//
// What it cannot see: the C library's other ways to a clock, which call it
// inside the C library, never through the program's symbols (timespec_get,
// ftime); the system call made directly (syscall(SYS_clock_gettime, ...));
// instructions (x86 RDTSC, and RDRAND, which std::random_device reads where
// the processor has it); and a program linked with -static, whose C library
// is not looked up by name at all.
#pragma once

#include "reactor/export.hpp"

namespace reactor::testing::sim {

// True: this program links reactor::sim_guard. Also the symbol its static
// archive's users link by (the CMake target and reactor-sim-guard.pc ask the
// linker for it), so that the interposers, which nothing else names, are
// pulled out of the archive.
REACTOR_API bool real_time_guarded() noexcept;

}  // namespace reactor::testing::sim
