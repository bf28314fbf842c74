// SPDX-License-Identifier: MIT
// Test support: make the system calls the loop, the sockets and the
// processes make fail, on purpose, with a chosen errno.
//
// Mechanism: tests/support/syscall_faults.cpp is a small shared library that
// defines the C library's wrappers (epoll_wait, accept4, write, ...) and
// forwards each to the real one (dlsym RTLD_NEXT) unless a fault is armed
// for it. A test suite named tests/test_faults_*.cpp links it
// (tests/CMakeLists.txt), and the dynamic linker then finds our definitions
// before the C library's; under a sanitizer its interceptors come first and
// reach ours as "the real one". A program run from a test gets the same
// library through LD_PRELOAD, armed by the environment (see kEnvironment).
// It is installed too (lib/reactor/libsyscall_faults.so, the CMake target
// reactor::syscall_faults), for users to preload into their own programs
// under test (docs/faults.md); no library links it.
// Nothing in reactor/ or futures/ knows about it: what is tested is the
// code users run.
//
// A fault lets `after` matching calls through, then fails the next `times`
// ones (kForever: every one) with `error`, doing nothing else (the call is
// not made). With `fd` set, only calls on that fd match (the first argument,
// or epoll_ctl's target fd). Only the calls listed in Call are covered.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace reactor_test::faults {

enum class Call : int {
    epoll_wait,  // epoll_wait, epoll_pwait, epoll_pwait2
    poll,        // poll, ppoll
    select,      // select, pselect
    epoll_ctl,
    epoll_create1,
    eventfd,
    accept4,
    recv,   // recv, recvfrom
    read,
    send,   // send, sendto, sendmsg
    write,
    writev,
    pipe2,
    pidfd_open,
    posix_spawn,  // posix_spawn, posix_spawnp (they return the error; errno is untouched)
    waitpid,      // waitpid, wait4
    pthread_create,  // returns the error, errno untouched (std::thread then throws std::system_error)
    count_
};

constexpr int kForever = -1;

struct Fault {
    int error = 0;
    int after = 0;  // matching calls let through first
    int times = 1;  // then this many fail (kForever: all)
    int fd = -1;    // -1: any fd
};

// Arms `fault` for `call`, replacing what was armed there, and resets the
// call's counters. Any thread; the injection is lock-free (signal handlers
// write to the loop's eventfd).
void arm(Call call, Fault fault);
void disarm(Call call);
void disarm_all();
// Failures injected into `call` since it was last armed.
std::uint64_t injected(Call call);
// Calls matching its fault (fd filter included) since it was last armed.
std::uint64_t matched(Call call);

// Disarms everything when the scope ends, also when a check fails.
struct Disarm {
    Disarm() = default;
    Disarm(const Disarm&) = delete;
    Disarm& operator=(const Disarm&) = delete;
    ~Disarm() { disarm_all(); }
};

// For a program run under LD_PRELOAD (or linked with the library): read
// when the library is loaded, "call:ERRNO[:after=N][:times=N|forever][:fd=N]",
// several separated by ',', e.g. "epoll_wait:ENOMEM:after=2,accept4:EMFILE:times=forever".
// ERRNO is any name glibc knows (errno_value). A spec it cannot read ends
// the program there, before main, with exit status 125 and a line on stderr:
// "REACTOR_FAULTS: 'accept4:EFOO': unknown errno name 'EFOO' (...)".
inline constexpr const char* kEnvironment = "REACTOR_FAULTS";
// The value of an errno name ("ECONNABORTED", "EWOULDBLOCK"), as
// REACTOR_FAULTS reads it: every name glibc knows; 0 for any other.
int errno_value(std::string_view name);
// The shared library's path, for LD_PRELOAD (set by tests/CMakeLists.txt).
std::string library_path();

}  // namespace reactor_test::faults
